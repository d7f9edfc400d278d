#!/usr/bin/env bash
# Run the standard workloads of DESIGN §10 against a freshly built imd, on the local MariaDB
# and Redis of services.sh, and write the reports under <state dir>/bench/<UTC time>/:
# <workload>.json and .md per run, <workload>.metrics.txt (imd's /metrics after it), summary.md
# (one table of every run, with the machine, then the per-stage tables of BENCH_PROFILE=1),
# machine.txt, imd.log. Sizes default to what a 2-core box runs in a few minutes.
#
#   bench.sh [RUN...]    RUN: w1 w2 w3 w3big w4 w5 t1 t2 seed (default: w1 … w5, in that order)
#                        t1, t2: the shapes of Tinode's table in issue 16 (20 groups of 10,
#                        all publishing; one group of 100, 50 publishing); its method is
#                        BENCH_WARMUP=5s BENCH_DURATION=30s (docs/BENCHMARKS.md)
#                        seed: not measured; stores BENCH_SEED_MESSAGES [10000000] messages of
#                        BENCH_SEED_PAIRS [1000] P2P topics over BENCH_SEED_MONTHS [24] months
#                        in the tenant (imctl bench seed), so that `w1 seed w1` compares W1 on
#                        an empty tenant with W1 on a grown one; the runs after it write
#                        <run>-seeded.* (DESIGN §10 cost growth)
#
# Every run gets a fresh tenant (W5 advances its active month), dropped at the end unless
# BENCH_KEEP=1. Environment (defaults in brackets):
#   BENCH_DURATION [20s]  BENCH_WARMUP [3s]      measured window and warm-up of each run
#   BENCH_W1_USERS [1000]                        W1 p2p users (pairs, closed loop)
#   BENCH_W2_USERS [1000] BENCH_W2_GROUP [10]    W2 users in groups of GROUP
#   BENCH_W3_MEMBERS [1000] BENCH_W3_RATE [200]  W3 big group, one sender at RATE msg/s
#   BENCH_W3BIG_MEMBERS [10000] BENCH_W3BIG_RATE [20]
#   BENCH_W4_CONNS [20000, less if the open-file limit is lower] BENCH_W4_USERS [1000]
#   BENCH_W4_DURATION [35s]                      idle connections
#   BENCH_W5_MESSAGES [500] BENCH_W5_READERS [4]  history pages over two months
#   BENCH_SOURCE_IPS [127.0.0.2 … 127.0.0.9]     client addresses (ephemeral ports)
#   BENCH_HTTP_ADDR [127.0.0.1:18080] BENCH_TCP_ADDR [127.0.0.1:19000] BENCH_NGINX_PORT [19443]
#                                                where imd and Nginx listen (move them when
#                                                others run benchmarks on the same box)
#   BENCH_NODES [1]       N imd nodes of the one tenant (node_id 1…N), node i listening on the
#                         HTTP and TCP ports above + i-1; the clients are spread over them
#                         (imctl bench --tcp a,b,…); direct clients only
#   BENCH_VIA [direct]    nginx: the clients speak TLS to a private Nginx on 127.0.0.1:19443
#                         (deploy/local/nginx.sh, stopped afterwards), which terminates TLS and
#                         hands imd the frames with a PROXY header, as in production; its
#                         workers' CPU is in the reports
#                         native: imd terminates TLS itself (tcp.tls: native, the im certificate
#                         of `nginx.sh certs`); the clients speak TLS to imd directly, each
#                         connection opening with a PROXY v2 header, as behind Nginx's TLS
#                         passthrough
#   BENCH_REDIS [single]  cluster: the tenant on the Redis Cluster of services.sh instead of the one
#                         Redis (IMD_CLUSTER_MASTERS [3] masters on IMD_REDIS_PORT + 1…N, started by
#                         `services.sh cluster-up` with the same environment), as DESIGN §11 spreads
#                         it; every master is measured (redis:<port> in the reports, summed in the
#                         summary's redis columns), and the ceiling line is the busiest master's
#   BENCH_PROFILE [0]     1: imd's CPU profile over each measured window (taken by imctl when
#                         the window opens) and its allocation profile after it, as
#                         <run>.cpu.pprof and <run>.allocs.pprof, the load generator's CPU
#                         profile as <run>.imctl.pprof, and imd's CPU by stage of a message's
#                         life in µs per ACKed message as <run>.stages.md (imctl bench stages)
# It exits non-zero when a run failed its verification or could not run; the other runs
# still happen. imd is stopped by its pid whatever happens.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
cd "$REPO_ROOT"

LOG_TAG=bench
# shellcheck source=deploy/local/lib.sh
source "$SCRIPT_DIR/lib.sh"

STATE_DIR="${IMD_STATE_DIR:-$REPO_ROOT/.run}"
MYSQL_PORT="${IMD_MYSQL_PORT:-13306}"
REDIS_PORT="${IMD_REDIS_PORT:-16379}"
CONFIG=deploy/config/imd.bench.yaml
ADMIN_KEY=bench-admin-key # of $CONFIG
HTTP_ADDR="${BENCH_HTTP_ADDR:-127.0.0.1:18080}" # $CONFIG's, unless moved (a shared box)
TCP_ADDR="${BENCH_TCP_ADDR:-127.0.0.1:19000}"

DURATION="${BENCH_DURATION:-20s}"
WARMUP="${BENCH_WARMUP:-3s}"
SOURCE_IPS="${BENCH_SOURCE_IPS:-127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5,127.0.0.6,127.0.0.7,127.0.0.8,127.0.0.9}"

runs=("$@")
((${#runs[@]})) || runs=(w1 w2 w3 w3big w4 w5)

out="$STATE_DIR/bench/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out/bin"
log "reports go to $out"

log "building imd and imctl"
go build -o "$out/bin/" ./cmd/imd ./cmd/imctl

mysql_pid="$(pid_from_file "$STATE_DIR/mariadb/mariadb.pid" mariadbd)" || die "MariaDB is not running (go tool task services)"
# The tenant's Redis: one server, or every master of the cluster (BENCH_REDIS), each watched as
# a process of its own.
redis_ports=() redis_pids="" redis_conf="$STATE_DIR/redis/redis.conf"
case "${BENCH_REDIS:-single}" in
single)
	redis_ports=("$REDIS_PORT")
	redis_pids="redis=$(pid_from_file "$STATE_DIR/redis/redis.pid" redis-server)" || die "Redis is not running (go tool task services)"
	;;
cluster)
	for ((i = 1; i <= ${IMD_CLUSTER_MASTERS:-3}; i++)); do
		port=$((REDIS_PORT + i))
		redis_ports+=("$port")
		pid="$(pid_from_file "$STATE_DIR/redis-cluster/$port/redis.pid" redis-server)" ||
			die "the Redis Cluster's master on $port is not running (services.sh cluster-up, same IMD_STATE_DIR, IMD_REDIS_PORT and IMD_CLUSTER_MASTERS)"
		redis_pids+="${redis_pids:+,}redis:$port=$pid"
	done
	redis_conf="$STATE_DIR/redis-cluster/${redis_ports[0]}/redis.conf"
	;;
*) die "BENCH_REDIS must be single or cluster, not ${BENCH_REDIS}" ;;
esac
redis_addrs="$(printf '127.0.0.1:%s,' "${redis_ports[@]}")"
redis_addrs="${redis_addrs%,}"

{
	echo "cores: $(nproc)"
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "kernel: $(uname -r)"
	echo "memory: $(awk '/MemTotal/ {printf "%d MB", $2/1024}' /proc/meminfo)"
	echo "go: $(go env GOVERSION)"
	echo "mariadb: $(mariadb --version 2>/dev/null || echo unknown)"
	echo "redis: $(redis-server --version 2>/dev/null || echo unknown)"
	echo "durability: innodb_flush_log_at_trx_commit=$(grep -m1 innodb_flush_log_at_trx_commit "$STATE_DIR/mariadb/my.cnf" | awk '{print $3}'), redis appendfsync $(grep -m1 '^appendfsync' "$redis_conf" | awk '{print $2}')"
	echo "redis servers: $redis_addrs (${BENCH_REDIS:-single})"
	echo "load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/machine.txt"
cat "$out/machine.txt" >&2

# Tens of thousands of connections on both ends: raise the open-file limit, and keep W4 under
# what it allows (each connection is a descriptor in imd and in imctl).
ulimit -n 1048576 2>/dev/null || ulimit -n 65536 2>/dev/null || log "open-file limit stays $(ulimit -n)"
w4_conns="${BENCH_W4_CONNS:-20000}"
if ((w4_conns > $(ulimit -n) - 2000)); then
	w4_conns=$(($(ulimit -n) - 2000))
	log "w4 runs $w4_conns connections: the open-file limit is $(ulimit -n)"
fi

tenant="bench_$(date +%s)"

# The nodes: node i listens on the HTTP and TCP ports of node 1 + i.
nodes="${BENCH_NODES:-1}"
http_addrs=() tcp_addrs=() imd_pids=()
for ((i = 0; i < nodes; i++)); do
	http_addrs+=("${HTTP_ADDR%:*}:$((${HTTP_ADDR##*:} + i))")
	tcp_addrs+=("${TCP_ADDR%:*}:$((${TCP_ADDR##*:} + i))")
done
echo "imd nodes: $nodes" >>"$out/machine.txt"

# Where the clients connect: imd itself, or Nginx in front of it.
via="${BENCH_VIA:-direct}"
client_args=(--tcp "$(
	IFS=,
	echo "${tcp_addrs[*]}"
)")
((nodes == 1)) || [[ "$via" == direct ]] || die "BENCH_NODES=$nodes needs BENCH_VIA=direct"
imd_env=()
case "$via" in
direct) ;;
nginx)
	NGINX_PORT="${BENCH_NGINX_PORT:-19443}"
	export IMD_NGINX_PORT="$NGINX_PORT" IMD_NGINX_MODE=off IMD_NGINX_IMD_TCP="$TCP_ADDR" IMD_NGINX_IMD_HTTP="$HTTP_ADDR"
	bash "$SCRIPT_DIR/nginx.sh" up >&2
	# The throwaway CA is not in the system store; the run measures, it does not authenticate.
	client_args=(--tcp "127.0.0.1:$NGINX_PORT" --tls --sni "im.$(cat "$STATE_DIR/nginx/certs/domain")" --insecure)
	imd_env=(IMD_TCP_PROXY_PROTOCOL=true)
	;;
native)
	certs="$(bash "$SCRIPT_DIR/nginx.sh" certs)"
	client_args=(--tcp "$TCP_ADDR" --proxy 2 --tls --sni "im.$(cat "$certs/domain")" --insecure)
	imd_env=(IMD_TCP_PROXY_PROTOCOL=true IMD_TCP_TLS=native IMD_TCP_CERT_FILE="$certs/im.crt" IMD_TCP_KEY_FILE="$certs/im.key")
	;;
*) die "BENCH_VIA must be direct, nginx or native, not $via" ;;
esac
echo "clients: $via" >>"$out/machine.txt"

cleanup() {
	for imd_pid in "${imd_pids[@]}"; do
		if alive "$imd_pid"; then
			log "stopping imd (pid $imd_pid)"
			kill -TERM "$imd_pid" 2>/dev/null || true
			wait_until 30 gone "$imd_pid" || kill -KILL "$imd_pid" 2>/dev/null || true
		fi
	done
	if [[ "$via" == nginx ]]; then
		bash "$SCRIPT_DIR/nginx.sh" down >&2 || true
	fi
	if [[ "${BENCH_KEEP:-0}" != 1 ]]; then
		mariadb -h127.0.0.1 -P"$MYSQL_PORT" -uimd -pimd -e "DROP DATABASE IF EXISTS \`imd_$tenant\`" 2>/dev/null || true
		# The tenant's own tag {tenant} and its slot groups' {tenant~g} (DESIGN §11), a command
		# per key: on a cluster one master's keys lie in many slots.
		for port in "${redis_ports[@]}"; do
			redis-cli -p "$port" --scan --pattern "im:{$tenant[}~]*" | awk '{print "UNLINK " $0}' | redis-cli -p "$port" >/dev/null || true
		done
		rm -rf "$out"/search* "$out/archive" "$out/uploads"
	fi
}
trap cleanup EXIT

ready() { curl -fsS "http://$1/readyz" >/dev/null 2>&1; }
for ((i = 0; i < nodes; i++)); do
	log "starting imd node $((i + 1)) for tenant $tenant"
	logfile="$out/imd.log" search="$out/search"
	((i == 0)) || logfile="$out/imd$((i + 1)).log" search="$out/search$((i + 1))"
	env "${imd_env[@]}" IMD_TENANTS="$tenant:imd_$tenant" IMD_NODE_ID="$((i + 1))" \
		IMD_MYSQL_DSN="imd:imd@tcp(127.0.0.1:$MYSQL_PORT)/?parseTime=true&multiStatements=true" \
		IMD_REDIS_ADDR="$redis_addrs" IMD_HTTP_ADDR="${http_addrs[i]}" IMD_TCP_ADDR="${tcp_addrs[i]}" \
		IMD_SEARCH_DIR="$search" IMD_ARCHIVE_DIR="$out/archive" IMD_UPLOADS_DIR="$out/uploads" \
		"$out/bin/imd" --config "$CONFIG" >"$logfile" 2>&1 &
	imd_pids+=($!)
	if ! wait_until 60 ready "${http_addrs[i]}"; then
		tail -20 "$logfile" >&2
		die "imd node $((i + 1)) did not become ready"
	fi
done
imd_pid="${imd_pids[0]}"

# drained: the tenant's deliver lists are empty, so one run's backlog never counts in the next.
drained() {
	local key n port
	for port in "${redis_ports[@]}"; do
		# the tenant's own tag and its slot groups' (docs/DESIGN.md §11)
		for key in $(redis-cli -p "$port" --scan --pattern "im:{$tenant[}~]*:deliver:*"); do
			case "$key" in
			*:deliver:queue* | *:deliver:processing*)
				n="$(redis-cli -p "$port" llen "$key")"
				[[ "$n" == 0 ]] || return 1
				;;
			esac
		done
	done
}

failed=() seeded=() suffix="" labels=()
for run in "${runs[@]}"; do
	duration="$DURATION"
	case "$run" in
	w1) args=(w1 --users "${BENCH_W1_USERS:-1000}") ;;
	t1) args=(t1) ;; # 20 groups of 10, all publishing: Tinode's T1 (issue 16)
	t2) args=(t2) ;; # one group of 100, 50 publishing: Tinode's T2
	w2) args=(w2 --users "${BENCH_W2_USERS:-1000}" --group-size "${BENCH_W2_GROUP:-10}") ;;
	w3) args=(w3 --members "${BENCH_W3_MEMBERS:-1000}" --rate "${BENCH_W3_RATE:-200}") ;;
	w3big) args=(w3 --members "${BENCH_W3BIG_MEMBERS:-10000}" --rate "${BENCH_W3BIG_RATE:-20}") ;;
	w4)
		args=(w4 --conns "$w4_conns" --users "${BENCH_W4_USERS:-1000}" --heartbeat 30s)
		duration="${BENCH_W4_DURATION:-35s}" # every connection heartbeats inside the window
		;;
	w5) args=(w5 --messages "${BENCH_W5_MESSAGES:-500}" --users "${BENCH_W5_READERS:-4}") ;;
	seed)
		# Not a measured run: stored history for the runs after it (DESIGN §10 cost growth).
		seed_msgs="${BENCH_SEED_MESSAGES:-10000000}" seed_months="${BENCH_SEED_MONTHS:-24}"
		log "== seed: $seed_msgs messages over $seed_months months"
		if "$out/bin/imctl" bench seed --http "http://$HTTP_ADDR" --tenant "$tenant" --admin-key "$ADMIN_KEY" \
			--dsn "imd:imd@tcp(127.0.0.1:$MYSQL_PORT)/" --messages "$seed_msgs" --months "$seed_months" \
			--pairs "${BENCH_SEED_PAIRS:-1000}" 2>&1 | tee "$out/seed.log" >&2; then
			seeded=(--param "history=${seed_msgs}/${seed_months}mo")
			suffix=-seeded
		else
			failed+=(seed)
		fi
		continue
		;;
	*) die "unknown run $run (want w1 w2 w3 w3big w4 w5 t1 t2 seed)" ;;
	esac
	name="$run$suffix" # the report's files: w1, and w1-seeded after a seed
	labels+=("$name")
	args+=("${seeded[@]}")
	wait_until 120 drained || log "deliver queue of $tenant not drained; $run starts anyway"
	log "== $name: ${args[*]}"
	if [[ "${BENCH_PROFILE:-0}" == 1 ]]; then
		args+=(--imd-cpuprofile "$out/$name.cpu.pprof" --cpuprofile "$out/$name.imctl.pprof")
	fi
	pids="imd=$imd_pid"
	for ((i = 1; i < nodes; i++)); do
		pids+=",imd$((i + 1))=${imd_pids[i]}"
	done
	pids+=",mariadbd=$mysql_pid,$redis_pids"
	if [[ "$via" == nginx ]]; then
		n=0
		for worker in $(pgrep -P "$(cat "$STATE_DIR/nginx/nginx.pid")" nginx); do
			pids+=",nginx$((++n))=$worker"
		done
	fi
	if ! "$out/bin/imctl" bench "${args[@]}" \
		--http "http://$HTTP_ADDR" "${client_args[@]}" --tenant "$tenant" --admin-key "$ADMIN_KEY" \
		--duration "$duration" --warmup "$WARMUP" --source-ips "$SOURCE_IPS" \
		--pids "$pids" --redis "$redis_addrs" --mysql-dsn "imd:imd@tcp(127.0.0.1:$MYSQL_PORT)/" \
		--json "$out/$name.json" --md "$out/$name.md" >/dev/null; then
		failed+=("$name")
	fi
	if [[ "${BENCH_PROFILE:-0}" == 1 ]]; then
		curl -fsS -H "Authorization: Bearer $ADMIN_KEY" -o "$out/$name.allocs.pprof" "http://$HTTP_ADDR/debug/pprof/allocs" ||
			log "allocation profile after $run not read"
		if [[ -s "$out/$name.cpu.pprof" && -s "$out/$name.json" ]]; then
			"$out/bin/imctl" bench stages --report "$out/$name.json" --md "$out/$name.stages.md" "$out/$name.cpu.pprof" >/dev/null ||
				log "stages of $run not written"
		fi
	fi
	# imd's own view (persist, deliver delay and job latency histograms, counters), cumulative
	# since imd started: compare a run's file with the one before it.
	curl -fsS -o "$out/$name.metrics.txt" "http://$HTTP_ADDR/metrics" || log "metrics after $run not read"
	for ((i = 1; i < nodes; i++)); do
		curl -fsS -o "$out/$name.node$((i + 1)).metrics.txt" "http://${http_addrs[i]}/metrics" || log "metrics of node $((i + 1)) after $run not read"
	done
	for imd_pid in "${imd_pids[@]}"; do
		alive "$imd_pid" || die "imd (pid $imd_pid) exited during $run; see $out/imd*.log"
	done
	imd_pid="${imd_pids[0]}"
done

reports=()
for name in "${labels[@]}"; do
	[[ -s "$out/$name.json" ]] && reports+=("$out/$name.json")
done
if ((${#reports[@]})); then
	"$out/bin/imctl" bench summary --md "$out/summary.md" "${reports[@]}"
	# The stage tables of the runs, and the legend they share once, after the last.
	legend=""
	for name in "${labels[@]}"; do
		if [[ -s "$out/$name.stages.md" ]]; then
			printf '\n' >>"$out/summary.md"
			sed '/^Stages: /,$d' "$out/$name.stages.md" >>"$out/summary.md"
			legend="$out/$name.stages.md"
		fi
	done
	[[ -z "$legend" ]] || sed -n '/^Stages: /,$p' "$legend" >>"$out/summary.md"
fi
log "reports: $out (summary.md, <run>.md, <run>.json, machine.txt, imd.log)"
if ((${#failed[@]})); then
	log "failed: ${failed[*]}"
	exit 1
fi
