#!/usr/bin/env bash
# Local real services for imd development and tests: two MariaDB servers (tenants
# on several servers), Redis, a three-master Redis Cluster and an S3-compatible
# object store (versitygw over a directory) on loopback, private instances under a
# state directory, installed from Debian packages (versitygw: go install, about 4
# minutes on a fresh 2-core machine, then cached) when missing. No Docker needed.
# MariaDB also speaks TLS with a throwaway CA under <state>/tls, which tests use
# for the TLS client paths.
#
#   services.sh up      install (if missing) and start them all, wait until they answer
#   services.sh down    stop them (graceful, then KILL after a timeout); data is kept
#   services.sh status  print what runs
#   services.sh env     print the `export` lines tests read
#   services.sh cluster-up|cluster-down
#                       only the Redis Cluster (a test that stops a master runs its own)
#
# Environment:
#   IMD_STATE_DIR   state directory (default: <repo>/.run)
#   IMD_TOOLS_DIR   where tools built from source go (default: <repo>/.run/bin)
#   IMD_MYSQL_PORT  MariaDB TCP port (default: 13306); the second MariaDB listens on it + 1
#   IMD_REDIS_PORT  Redis TCP port   (default: 16379); the cluster's masters on it + 1..3,
#                   their cluster bus ports 10000 above (Redis' own rule)
#   IMD_CLUSTER_MASTERS  the cluster's masters (default: 3, what the tests use); a bench's
#                   cluster of more (bench.sh BENCH_REDIS=cluster) lives in a state directory
#                   of its own, since a cluster keeps the masters it was made with
#   IMD_S3_PORT     S3 TCP port      (default: MariaDB's port + 5000)
#   IMD_SERVICES_BASIC=1  only the first MariaDB, Redis and S3 (a test's private services
#                   on random ports, whose cluster bus ports might not exist)
#
# Nginx (nginx + libnginx-mod-stream) is only installed here, not started.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"

STATE_DIR="${IMD_STATE_DIR:-$REPO_ROOT/.run}"
MYSQL1_PORT="${IMD_MYSQL_PORT:-13306}"
# The second MariaDB: a server of its own (datadir, socket, port) for tenants placed on
# another server (tenants[].dsn).
MYSQL2_PORT=$((MYSQL1_PORT + 1))
REDIS_PORT="${IMD_REDIS_PORT:-16379}"
S3_PORT="${IMD_S3_PORT:-$((MYSQL1_PORT + 5000))}"

# use_mysql 1|2: point the MYSQL_* variables the mariadb functions read at one instance.
use_mysql() {
	if [[ "$1" == 1 ]]; then
		MYSQL_NAME=mariadb MYSQL_PORT=$MYSQL1_PORT MYSQL_DIR="$STATE_DIR/mariadb" MYSQL_POOL=512M
	else
		# tests place only a few tenants there
		MYSQL_NAME=mariadb2 MYSQL_PORT=$MYSQL2_PORT MYSQL_DIR="$STATE_DIR/mariadb2" MYSQL_POOL=128M
	fi
	MYSQL_DATA="$MYSQL_DIR/data"
	MYSQL_CNF="$MYSQL_DIR/my.cnf"
	MYSQL_SOCK="$MYSQL_DIR/mariadb.sock"
	MYSQL_PID="$MYSQL_DIR/mariadb.pid"
	MYSQL_LOG="$MYSQL_DIR/mariadb.log"
}
use_mysql 1
BASIC="${IMD_SERVICES_BASIC:-0}"
MYSQL_INSTANCES=(1 2)
[[ "$BASIC" == 1 ]] && MYSQL_INSTANCES=(1)

REDIS_DIR="$STATE_DIR/redis"
REDIS_CNF="$REDIS_DIR/redis.conf"
REDIS_PID="$REDIS_DIR/redis.pid"
REDIS_LOG="$REDIS_DIR/redis.log"

# The Redis Cluster: three masters (IMD_CLUSTER_MASTERS), no replicas (README: a stopped master
# comes back from its AOF), one directory per port under redis-cluster/.
CLUSTER_DIR="$STATE_DIR/redis-cluster"
CLUSTER_PORTS=()
for ((i = 1; i <= ${IMD_CLUSTER_MASTERS:-3}; i++)); do CLUSTER_PORTS+=($((REDIS_PORT + i))); done

TLS_DIR="$STATE_DIR/tls"

S3_DIR="$STATE_DIR/s3"
S3_DATA="$S3_DIR/data"
S3_PID="$S3_DIR/versitygw.pid"
S3_LOG="$S3_DIR/versitygw.log"
# Tools built from source live in the checkout, not in the state directory: private
# instances (the fault tests') would otherwise link their own copy, ~1 min each under load.
TOOLS_DIR="${IMD_TOOLS_DIR:-$REPO_ROOT/.run/bin}"
S3_BIN="$TOOLS_DIR/versitygw"
# The gateway's release; its build is cached in the Go module and build caches.
VERSITYGW_VERSION=v1.8.0
S3_ACCESS_KEY=imdtest
S3_SECRET_KEY=imdtest-secret-key
# Buckets the tests use: one per kind of object (a posix bucket is a directory).
S3_BUCKETS=(imd-archive imd-uploads)

# prometheus: only for its promtool, which checks and unit-tests deploy/prometheus/ (the
# Prometheus server itself is never started here). datefudge: the e2e month-switch test runs
# a private redis-server on a shifted clock (libfaketime cannot start Debian's jemalloc build).
PACKAGES=(mariadb-server redis-server redis-sentinel nginx libnginx-mod-stream openssl prometheus datefudge)
START_TIMEOUT=30   # seconds a server may take to answer after start
STOP_TIMEOUT=30    # seconds before a graceful stop turns into SIGKILL
NOFILE=65536       # open-file limit of the servers

LOG_TAG=services
# shellcheck source=deploy/local/lib.sh
source "$SCRIPT_DIR/lib.sh"
((${#CLUSTER_PORTS[@]} >= 3)) || die "IMD_CLUSTER_MASTERS must be 3 or more (a Redis Cluster's least)"

# pid_of FILE: print the pid in FILE if that process is alive and is the server
# the file belongs to (a stale pid file may name a reused pid).
pid_of() {
	local f="$1" want
	case "$f" in
	*/mariadb.pid) want=mariadbd ;;
	*/redis.pid) want=redis-server ;;
	"$S3_PID") want=versitygw ;;
	*) want="" ;;
	esac
	pid_from_file "$f" "$want"
}

# stop_pidfile NAME FILE: TERM, wait, then KILL.
stop_pidfile() {
	local name="$1" f="$2" pid
	if ! pid="$(pid_of "$f")"; then
		rm -f "$f"
		log "$name: not running"
		return 0
	fi
	log "$name: stopping pid $pid"
	kill -TERM "$pid" 2>/dev/null || true
	if ! wait_until "$STOP_TIMEOUT" gone "$pid"; then
		log "$name: still alive after ${STOP_TIMEOUT}s, sending KILL"
		kill -KILL "$pid" 2>/dev/null || true
		wait_until 5 gone "$pid" || true
	fi
	rm -f "$f"
	log "$name: stopped"
}

# ---------------------------------------------------------------- mariadb

mysql_admin() { mariadb-admin --defaults-file="$MYSQL_CNF" "$@"; }
mysql_cli() { mariadb --defaults-file="$MYSQL_CNF" "$@"; }
mysql_ping() { mysql_admin --connect-timeout=2 ping >/dev/null 2>&1; }

write_mysql_cnf() {
	mkdir -p "$MYSQL_DIR"
	local tmp="$MYSQL_CNF.tmp"
	cat >"$tmp" <<EOF
# Written by deploy/local/services.sh; regenerated on every start.
[mariadbd]
user                           = root
datadir                        = $MYSQL_DATA
socket                         = $MYSQL_SOCK
pid-file                       = $MYSQL_PID
log-error                      = $MYSQL_LOG
port                           = $MYSQL_PORT
bind-address                   = 127.0.0.1
skip-name-resolve
character-set-server           = utf8mb4
collation-server               = utf8mb4_unicode_ci
max_connections                = 1000
innodb_flush_log_at_trx_commit = 1
innodb_buffer_pool_size        = $MYSQL_POOL
innodb_log_file_size           = 256M
innodb_file_per_table          = 1
# TLS for clients that ask (plain connections stay allowed): a throwaway CA's certificate
ssl-ca                         = $TLS_DIR/ca.crt
ssl-cert                       = $TLS_DIR/server.crt
ssl-key                        = $TLS_DIR/server.key

[client]
user                           = root
socket                         = $MYSQL_SOCK
default-character-set          = utf8mb4
EOF
	if ! cmp -s "$tmp" "$MYSQL_CNF" 2>/dev/null; then mv -f "$tmp" "$MYSQL_CNF"; else rm -f "$tmp"; fi
}

init_mysql_datadir() {
	[[ -f "$MYSQL_DATA/.imd-initialized" ]] && return 0
	log "$MYSQL_NAME: initialising datadir $MYSQL_DATA"
	# Two tries: a bootstrap once failed in CI on a box at load 19 with a dozen other MariaDBs,
	# and its reason sits in the server's error log, not in install-db's own output.
	local try
	for try in 1 2; do
		rm -rf "$MYSQL_DATA"
		mkdir -p "$MYSQL_DATA"
		if mariadb-install-db --defaults-file="$MYSQL_CNF" --user=root --datadir="$MYSQL_DATA" \
			--auth-root-authentication-method=normal --skip-test-db >"$MYSQL_DIR/install-db.log" 2>&1; then
			touch "$MYSQL_DATA/.imd-initialized"
			return 0
		fi
		log "$MYSQL_NAME: mariadb-install-db failed (try $try); the server's error log says:"
		tail -n 30 "$MYSQL_LOG" >&2 2>/dev/null || true
		sleep 2
	done
	tail -n 40 "$MYSQL_DIR/install-db.log" >&2 || true
	die "$MYSQL_NAME: mariadb-install-db failed twice (logs: $MYSQL_DIR/install-db.log, $MYSQL_LOG)"
}

start_mysql() {
	write_mysql_cnf
	if pid_of "$MYSQL_PID" >/dev/null; then
		if mysql_ping; then return 0; fi
		# running but not answering yet (just started by someone else?): wait below
	else
		rm -f "$MYSQL_PID"
		init_mysql_datadir
		log "$MYSQL_NAME: starting on 127.0.0.1:$MYSQL_PORT"
		spawn bg "$NOFILE" "$MYSQL_LOG" mariadbd --defaults-file="$MYSQL_CNF"
		local launched=$!
		echo "$launched" >"$MYSQL_PID.launch"
	fi
	wait_ready "$MYSQL_NAME" mysql_ping "$MYSQL_PID" "$MYSQL_LOG"
	rm -f "$MYSQL_PID.launch"
}

ensure_mysql_user() {
	local h sql=""
	for h in 127.0.0.1 localhost %; do
		sql+="CREATE USER IF NOT EXISTS 'imd'@'$h' IDENTIFIED BY 'imd';"
		sql+="ALTER USER 'imd'@'$h' IDENTIFIED BY 'imd';"
		sql+="GRANT ALL PRIVILEGES ON *.* TO 'imd'@'$h' WITH GRANT OPTION;"
	done
	# anonymous users would shadow imd@% for local connections; root@<hostname>
	# only makes skip-name-resolve warn on every connection.
	sql+="DELETE FROM mysql.global_priv WHERE User='';"
	sql+="DELETE FROM mysql.global_priv WHERE User='root' AND Host NOT IN ('localhost','127.0.0.1','::1');"
	sql+="DELETE FROM mysql.proxies_priv WHERE Host NOT IN ('localhost','127.0.0.1','::1','%');"
	sql+="FLUSH PRIVILEGES;"
	mysql_cli -e "$sql" || die "$MYSQL_NAME: creating user imd failed"
}

# ---------------------------------------------------------------- redis

redis_ping() { [[ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null || true)" == PONG ]]; }

write_redis_conf() {
	mkdir -p "$REDIS_DIR/data"
	local tmp="$REDIS_CNF.tmp"
	cat >"$tmp" <<EOF
# Written by deploy/local/services.sh; regenerated on every start.
port $REDIS_PORT
bind 127.0.0.1
protected-mode yes
daemonize yes
pidfile $REDIS_PID
logfile $REDIS_LOG
dir $REDIS_DIR/data
appendonly yes
appendfsync everysec
save 3600 1 300 100 60 10000
databases 16
tcp-backlog 511
maxclients 10000
EOF
	if ! cmp -s "$tmp" "$REDIS_CNF" 2>/dev/null; then mv -f "$tmp" "$REDIS_CNF"; else rm -f "$tmp"; fi
}

start_redis() {
	write_redis_conf
	if pid_of "$REDIS_PID" >/dev/null; then
		if redis_ping; then return 0; fi
	else
		rm -f "$REDIS_PID"
		log "redis: starting on 127.0.0.1:$REDIS_PORT"
		# daemonize yes: redis forks and writes its pid file itself.
		if ! spawn fg "$NOFILE" "$REDIS_LOG" redis-server "$REDIS_CNF"; then
			tail -n 40 "$REDIS_LOG" >&2 || true
			die "redis-server failed to start (log: $REDIS_LOG)"
		fi
	fi
	wait_ready redis redis_ping "$REDIS_PID" "$REDIS_LOG"
}

# ---------------------------------------------------------------- redis cluster

cluster_cli() { local port="$1"; shift; redis-cli -h 127.0.0.1 -p "$port" "$@"; }
cluster_pid() { echo "$CLUSTER_DIR/$1/redis.pid"; }
cluster_log() { echo "$CLUSTER_DIR/$1/redis.log"; }

write_cluster_conf() {
	local port="$1" dir="$CLUSTER_DIR/$1"
	mkdir -p "$dir/data"
	local tmp="$dir/redis.conf.tmp"
	# cluster-require-full-coverage no: while one master is down, the others keep serving
	# their tenants. AOF like the single Redis: a stopped master comes back with its data.
	cat >"$tmp" <<EOF
# Written by deploy/local/services.sh; regenerated on every start.
port $port
bind 127.0.0.1
protected-mode yes
daemonize yes
pidfile $dir/redis.pid
logfile $dir/redis.log
dir $dir/data
cluster-enabled yes
cluster-config-file nodes.conf
cluster-node-timeout 5000
cluster-require-full-coverage no
appendonly yes
appendfsync everysec
save ""
tcp-backlog 511
maxclients 10000
EOF
	if ! cmp -s "$tmp" "$dir/redis.conf" 2>/dev/null; then mv -f "$tmp" "$dir/redis.conf"; else rm -f "$tmp"; fi
}

# cluster_node_ping PORT
cluster_node_ping() { [[ "$(cluster_cli "$1" ping 2>/dev/null || true)" == PONG ]]; }

# cluster_ok: every master reports cluster_state:ok and knows all the others.
cluster_ok() {
	local port info
	for port in "${CLUSTER_PORTS[@]}"; do
		info="$(cluster_cli "$port" cluster info 2>/dev/null || true)"
		[[ "$info" == *"cluster_state:ok"* && "$info" == *"cluster_known_nodes:${#CLUSTER_PORTS[@]}"* ]] || return 1
	done
}

# cluster_assigned: some master already holds slots (a cluster made by an earlier up).
cluster_assigned() {
	local port
	for port in "${CLUSTER_PORTS[@]}"; do
		[[ "$(cluster_cli "$port" cluster info 2>/dev/null || true)" == *"cluster_slots_assigned:0"* ]] || return 0
	done
	return 1
}

# launch_cluster starts the masters that are not running; await_cluster then makes the cluster
# if it was never made and waits for cluster_state:ok. Between the two, the other servers
# start: a restarted master takes about two seconds to rejoin.
launch_cluster() {
	local port pidf logf
	for port in "${CLUSTER_PORTS[@]}"; do
		write_cluster_conf "$port"
		pidf="$(cluster_pid "$port")" logf="$(cluster_log "$port")"
		pid_of "$pidf" >/dev/null && continue
		rm -f "$pidf"
		log "redis-cluster: starting master on 127.0.0.1:$port (bus $((port + 10000)))"
		if ! spawn fg "$NOFILE" "$logf" redis-server "$CLUSTER_DIR/$port/redis.conf"; then
			tail -n 40 "$logf" >&2 || true
			die "redis-server (cluster $port) failed to start (log: $logf)"
		fi
	done
}

await_cluster() {
	local port nodes=()
	for port in "${CLUSTER_PORTS[@]}"; do
		nodes+=("127.0.0.1:$port")
		CLUSTER_PING_PORT=$port wait_ready "redis-cluster:$port" cluster_ping_current "$(cluster_pid "$port")" "$(cluster_log "$port")"
	done
	if ! cluster_ok && ! cluster_assigned; then
		log "redis-cluster: creating the cluster of ${nodes[*]}"
		if ! redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$CLUSTER_DIR/create.log" 2>&1; then
			cat "$CLUSTER_DIR/create.log" >&2
			die "redis-cli --cluster create failed"
		fi
	fi
	if ! wait_until "$START_TIMEOUT" cluster_ok; then
		cluster_cli "${CLUSTER_PORTS[0]}" cluster info >&2 || true
		die "redis-cluster: not cluster_state:ok after ${START_TIMEOUT}s (state in $CLUSTER_DIR; remove it for a new cluster)"
	fi
}

# cluster_ping_current: wait_ready's ping of the master in CLUSTER_PING_PORT.
cluster_ping_current() { cluster_node_ping "$CLUSTER_PING_PORT"; }

stop_cluster() {
	local port
	for port in "${CLUSTER_PORTS[@]}"; do
		stop_pidfile "redis-cluster:$port" "$(cluster_pid "$port")"
	done
}

# cluster_addrs: the masters as the comma-separated list imd's redis.addr takes.
cluster_addrs() {
	local port out=""
	for port in "${CLUSTER_PORTS[@]}"; do out+="${out:+,}127.0.0.1:$port"; done
	echo "$out"
}

# ---------------------------------------------------------------- tls

# ensure_tls: a throwaway CA and a server certificate for 127.0.0.1/localhost, made once.
ensure_tls() {
	[[ -s "$TLS_DIR/server.crt" && -s "$TLS_DIR/ca.crt" ]] && return 0
	log "tls: making a throwaway CA and server certificate in $TLS_DIR"
	mkdir -p "$TLS_DIR"
	local tmp
	tmp="$(mktemp -d "$TLS_DIR/.new.XXXXXX")"
	openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=imd local test CA" \
		-keyout "$tmp/ca.key" -out "$tmp/ca.crt" >/dev/null 2>&1 || die "tls: making the CA failed"
	openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$tmp/server.key" -out "$tmp/server.csr" >/dev/null 2>&1 ||
		die "tls: making the server key failed"
	printf 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\n' >"$tmp/san.ext"
	openssl x509 -req -in "$tmp/server.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" -CAcreateserial -days 3650 \
		-extfile "$tmp/san.ext" -out "$tmp/server.crt" >/dev/null 2>&1 || die "tls: signing the server certificate failed"
	chmod 0644 "$tmp"/*.crt "$tmp"/*.key
	mv -f "$tmp"/ca.crt "$tmp"/ca.key "$tmp"/server.crt "$tmp"/server.key "$TLS_DIR"/
	rm -rf "$tmp"
}

# ---------------------------------------------------------------- s3 (versitygw)

# s3_ping: the gateway accepts connections (bash's /dev/tcp: no curl on a bare machine).
s3_ping() { (exec 3<>"/dev/tcp/127.0.0.1/$S3_PORT") 2>/dev/null; }

ensure_versitygw() {
	# The binary reports no release of its own, so a stamp beside it names the one installed.
	if [[ -x "$S3_BIN" && "$(cat "$S3_BIN.version" 2>/dev/null || true)" == "$VERSITYGW_VERSION" ]]; then
		return 0
	fi
	command -v go >/dev/null || die "s3: go is needed to install versitygw"
	log "s3: installing versitygw $VERSITYGW_VERSION (go install; a few minutes on a fresh machine)"
	mkdir -p "$TOOLS_DIR"
	local started=$SECONDS
	GOBIN="$TOOLS_DIR" go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION" ||
		die "s3: go install versitygw failed"
	echo "$VERSITYGW_VERSION" >"$S3_BIN.version"
	log "s3: versitygw installed in $((SECONDS - started))s"
}

start_s3() {
	ensure_versitygw
	local b
	for b in "${S3_BUCKETS[@]}"; do mkdir -p "$S3_DATA/$b"; done
	if pid_of "$S3_PID" >/dev/null; then
		if s3_ping; then return 0; fi
	else
		rm -f "$S3_PID"
		log "s3: starting versitygw on 127.0.0.1:$S3_PORT"
		ROOT_ACCESS_KEY_ID="$S3_ACCESS_KEY" ROOT_SECRET_ACCESS_KEY="$S3_SECRET_KEY" \
			spawn bg "$NOFILE" "$S3_LOG" "$S3_BIN" --port "127.0.0.1:$S3_PORT" --region us-east-1 --quiet posix "$S3_DATA"
		echo "$!" >"$S3_PID"
	fi
	wait_ready s3 s3_ping "$S3_PID" "$S3_LOG"
}

# ---------------------------------------------------------------- common

# wait_ready NAME PINGFN PIDFILE LOGFILE
wait_ready() {
	local name="$1" ping="$2" pidfile="$3" logf="$4" i launch=""
	[[ -s "$pidfile.launch" ]] && launch="$(tr -dc '0-9' <"$pidfile.launch")"
	for ((i = 0; i < START_TIMEOUT * 10; i++)); do
		if "$ping"; then
			pid_of "$pidfile" >/dev/null || die "$name answers on its port but not from our pid file $pidfile: is another instance using the port?"
			return 0
		fi
		# died during start: stop waiting early
		if ((i > 5)) && ! pid_of "$pidfile" >/dev/null && { [[ -z "$launch" ]] || ! alive "$launch"; }; then
			break
		fi
		sleep 0.1
	done
	if ((i >= START_TIMEOUT * 10)); then
		log "$name did not answer within ${START_TIMEOUT}s; last lines of $logf:"
	else
		log "$name exited during start; last lines of $logf:"
	fi
	tail -n 40 "$logf" >&2 || true
	die "$name failed to start"
}

cmd_up() {
	lock_dir "$STATE_DIR" 300
	ensure_packages "${PACKAGES[@]}"
	ensure_tls
	[[ "$BASIC" == 1 ]] || launch_cluster
	local i
	for i in "${MYSQL_INSTANCES[@]}"; do
		use_mysql "$i"
		start_mysql
		ensure_mysql_user
	done
	start_redis
	[[ "$BASIC" == 1 ]] || await_cluster
	start_s3
	if [[ "$BASIC" == 1 ]]; then
		log "up: mariadb 127.0.0.1:$MYSQL1_PORT, redis 127.0.0.1:$REDIS_PORT, s3 127.0.0.1:$S3_PORT (state $STATE_DIR)"
	else
		log "up: mariadb 127.0.0.1:$MYSQL1_PORT and :$MYSQL2_PORT, redis 127.0.0.1:$REDIS_PORT, redis cluster $(cluster_addrs), s3 127.0.0.1:$S3_PORT (state $STATE_DIR)"
	fi
}

cmd_down() {
	lock_dir "$STATE_DIR" 300
	stop_pidfile s3 "$S3_PID"
	[[ "$BASIC" == 1 ]] || stop_cluster
	stop_pidfile redis "$REDIS_PID"
	local i
	for i in "${MYSQL_INSTANCES[@]}"; do
		use_mysql "$i"
		stop_pidfile "$MYSQL_NAME" "$MYSQL_PID"
		rm -f "$MYSQL_PID.launch"
	done
}

cmd_status() {
	local rc=0 pid
	echo "state dir: $STATE_DIR"
	local i port
	for i in "${MYSQL_INSTANCES[@]}"; do
		use_mysql "$i"
		if pid="$(pid_of "$MYSQL_PID")"; then
			if [[ -f "$MYSQL_CNF" ]] && mysql_ping; then
				printf '%-10s running   pid %s  127.0.0.1:%s  socket %s\n' "$MYSQL_NAME:" "$pid" "$MYSQL_PORT" "$MYSQL_SOCK"
			else
				printf '%-10s starting/unresponsive  pid %s  127.0.0.1:%s\n' "$MYSQL_NAME:" "$pid" "$MYSQL_PORT"; rc=1
			fi
		else
			printf '%-10s stopped\n' "$MYSQL_NAME:"; rc=1
		fi
	done
	if pid="$(pid_of "$REDIS_PID")"; then
		if redis_ping; then
			echo "redis:     running   pid $pid  127.0.0.1:$REDIS_PORT"
		else
			echo "redis:     starting/unresponsive  pid $pid  127.0.0.1:$REDIS_PORT"; rc=1
		fi
	else
		echo "redis:     stopped"; rc=1
	fi
	for port in "${CLUSTER_PORTS[@]}"; do
		if pid="$(pid_of "$(cluster_pid "$port")")" && cluster_node_ping "$port"; then
			echo "cluster:   running   pid $pid  127.0.0.1:$port"
		else
			echo "cluster:   stopped   127.0.0.1:$port"; rc=1
		fi
	done
	if cluster_ok; then echo "cluster:   cluster_state:ok"; else echo "cluster:   not ok"; rc=1; fi
	if pid="$(pid_of "$S3_PID")" && s3_ping; then
		echo "s3:        running   pid $pid  http://127.0.0.1:$S3_PORT  buckets ${S3_BUCKETS[*]}"
	else
		echo "s3:        stopped"; rc=1
	fi
	if pkg_installed nginx && pkg_installed libnginx-mod-stream; then
		echo "nginx:     installed (not started by this script)"
	else
		echo "nginx:     not installed (run: services.sh up)"
	fi
	return "$rc"
}

cmd_env() {
	cat <<EOF
export IMD_TEST_MYSQL_DSN='imd:imd@tcp(127.0.0.1:$MYSQL1_PORT)/?parseTime=true&multiStatements=true'
export IMD_TEST_MYSQL2_DSN='imd:imd@tcp(127.0.0.1:$MYSQL2_PORT)/?parseTime=true&multiStatements=true'
export IMD_TEST_REDIS_ADDR=127.0.0.1:$REDIS_PORT
export IMD_TEST_REDIS_CLUSTER_ADDRS=$(cluster_addrs)
export IMD_TEST_S3_ENDPOINT=http://127.0.0.1:$S3_PORT
export IMD_TEST_S3_ACCESS_KEY=$S3_ACCESS_KEY
export IMD_TEST_S3_SECRET_KEY=$S3_SECRET_KEY
export IMD_TEST_TLS_DIR=$TLS_DIR
export IMD_REQUIRE_SERVICES=1
EOF
}

usage() {
	sed -n '2,29p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

cmd_cluster_up() {
	lock_dir "$STATE_DIR" 300
	ensure_packages redis-server
	launch_cluster
	await_cluster
	log "up: redis cluster $(cluster_addrs) (state $STATE_DIR)"
}

cmd_cluster_down() {
	lock_dir "$STATE_DIR" 300
	stop_cluster
}

case "${1:-}" in
up) cmd_up ;;
down) cmd_down ;;
cluster-up) cmd_cluster_up ;;
cluster-down) cmd_cluster_down ;;
status) cmd_status ;;
env) cmd_env ;;
*) usage ;;
esac
