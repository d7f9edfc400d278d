#!/usr/bin/env bash
# Redis with replicas for the failover tests (issue 33): private instances on loopback under a
# state directory, installed from Debian packages (redis-server, redis-sentinel) when missing.
#
#   replicas.sh sentinel-up   a master on PORT, its replica on PORT+1 and a Sentinel on PORT+2
#                             monitoring the master set "imd" (quorum 1)
#   replicas.sh cluster-up    a Redis Cluster of three masters on PORT..PORT+2 and a spare node
#                             on PORT+3 (cluster bus ports 10000 above); the test makes the spare
#                             a replica of the master that holds its tenant
#   replicas.sh down          stop whatever of the above runs under the state directory
#
# Environment:
#   IMD_STATE_DIR   state directory (required: these are a test's private instances)
#   IMD_REDIS_PORT  PORT above (required)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STATE_DIR="${IMD_STATE_DIR:?IMD_STATE_DIR is required}"
PORT="${IMD_REDIS_PORT:?IMD_REDIS_PORT is required}"
MASTER_SET=imd
START_TIMEOUT=30
STOP_TIMEOUT=30
NOFILE=65536

LOG_TAG=replicas
# shellcheck source=deploy/local/lib.sh
source "$SCRIPT_DIR/lib.sh"

ping_port() { [[ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null || true)" == PONG ]]; }

# start_server NAME PORT EXTRA-CONFIG: write the configuration of one redis-server (or, with
# NAME sentinel, redis-sentinel) under STATE_DIR/NAME and start it unless it runs.
start_server() {
	local name="$1" port="$2" extra="$3" dir="$STATE_DIR/$1" bin=redis-server
	[[ "$name" == sentinel ]] && bin=redis-sentinel
	mkdir -p "$dir/data"
	if pid_from_file "$dir/redis.pid" redis- >/dev/null; then
		return 0
	fi
	# Sentinel rewrites its file with what it learns (replicas, epochs), so it is written only
	# once; the servers' files are regenerated on every start.
	if [[ "$name" != sentinel || ! -s "$dir/redis.conf" ]]; then
		cat >"$dir/redis.conf" <<EOF
# Written by deploy/local/replicas.sh.
port $port
bind 127.0.0.1
protected-mode yes
daemonize yes
pidfile $dir/redis.pid
logfile $dir/redis.log
dir $dir/data
$extra
EOF
	fi
	log "$name: starting on 127.0.0.1:$port"
	if ! spawn fg "$NOFILE" "$dir/redis.log" "$bin" "$dir/redis.conf"; then
		tail -n 40 "$dir/redis.log" >&2 || true
		die "$name failed to start (log: $dir/redis.log)"
	fi
	wait_until "$START_TIMEOUT" ping_port "$port" || die "$name does not answer on $port (log: $dir/redis.log)"
}

# Like services.sh's Redis: AOF every second, so a restarted server keeps what it had.
DATA_CONF="appendonly yes
appendfsync everysec
save \"\""

cmd_sentinel_up() {
	lock_dir "$STATE_DIR" 300
	ensure_packages redis-server redis-sentinel
	start_server master "$PORT" "$DATA_CONF"
	start_server replica "$((PORT + 1))" "$DATA_CONF
replicaof 127.0.0.1 $PORT"
	# A second without an answer is a failed master, so a test's failover takes seconds.
	start_server sentinel "$((PORT + 2))" "sentinel resolve-hostnames no
sentinel monitor $MASTER_SET 127.0.0.1 $PORT 1
sentinel down-after-milliseconds $MASTER_SET 1000
sentinel failover-timeout $MASTER_SET 10000
sentinel parallel-syncs $MASTER_SET 1"
	wait_until "$START_TIMEOUT" sentinel_sees_replica || die "sentinel: the replica never showed (log: $STATE_DIR/sentinel/redis.log)"
	log "up: master 127.0.0.1:$PORT, replica :$((PORT + 1)), sentinel :$((PORT + 2)) (master set $MASTER_SET)"
}

sentinel_sees_replica() {
	[[ "$(redis-cli -h 127.0.0.1 -p "$((PORT + 2))" sentinel replicas "$MASTER_SET" 2>/dev/null || true)" == *"$((PORT + 1))"* ]]
}

cmd_cluster_up() {
	lock_dir "$STATE_DIR" 300
	ensure_packages redis-server
	local i nodes=()
	for i in 0 1 2 3; do
		start_server "node$i" "$((PORT + i))" "$DATA_CONF
cluster-enabled yes
cluster-config-file nodes.conf
cluster-node-timeout 2000
cluster-require-full-coverage no"
		((i < 3)) && nodes+=("127.0.0.1:$((PORT + i))")
	done
	if [[ "$(redis-cli -p "$PORT" cluster info)" == *"cluster_slots_assigned:0"* ]]; then
		redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$STATE_DIR/create.log" 2>&1 ||
			{ cat "$STATE_DIR/create.log" >&2; die "redis-cli --cluster create failed"; }
	fi
	wait_until "$START_TIMEOUT" cluster_ok || die "cluster: not cluster_state:ok after ${START_TIMEOUT}s"
	log "up: cluster ${nodes[*]}, spare node 127.0.0.1:$((PORT + 3))"
}

cluster_ok() { [[ "$(redis-cli -p "$PORT" cluster info 2>/dev/null || true)" == *"cluster_state:ok"* ]]; }

cmd_down() {
	lock_dir "$STATE_DIR" 300
	local dir pid
	for dir in "$STATE_DIR"/*/; do
		[[ -f "$dir/redis.conf" ]] || continue
		pid="$(pid_from_file "$dir/redis.pid" redis- || true)"
		[[ -n "$pid" ]] || continue
		kill -TERM "$pid" 2>/dev/null || true
		wait_until "$STOP_TIMEOUT" gone "$pid" || kill -KILL "$pid" 2>/dev/null || true
	done
}

case "${1:-}" in
sentinel-up) cmd_sentinel_up ;;
cluster-up) cmd_cluster_up ;;
down) cmd_down ;;
*) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
