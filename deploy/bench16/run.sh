#!/usr/bin/env bash
# bench16: imd's own load generator (imctl bench) against one tenant of imd, with MariaDB and
# Redis, on a bare x86-64 Linux machine: nothing installed, no network, any glibc. Everything
# comes from bundle.tar.xz beside this script (make-bundle.sh); MariaDB and Redis run through
# the bundled loader ($B/lib/ld-linux-x86-64.so.2 --library-path $B/lib), imd and imctl are
# static.
#
#   bash run.sh [WORKLOAD[:N]...]       default: t1 t2 w1
#
# WORKLOAD: w1 w2 w3 w4 w5 t1 t2 (imctl bench's); N sets its size: users of w1/w2, members of
# w3, connections of w4, messages of w5, groups of t1, members of t2 (half publishing).
# Steps: unpack to $B (/tmp/bench16); MariaDB on 127.0.0.1:3306 (innodb_flush_log_at_trx_commit=1,
# buffer pool 8G or a quarter of the memory), Redis on 127.0.0.1:6379 (AOF, everysec); imd with
# conf/imd.bench.yaml on a fresh tenant (HTTP 127.0.0.1:18080, frames 127.0.0.1:19000); then
# each workload: 5 s warm-up and a 20 s window, --pids imd, mariadbd, redis (imctl adds itself).
# Every step has a timeout, all of them a budget (BENCH16_BUDGET, 340 s); a workload that fails
# is recorded and the next one runs.
#
# Output in $OUT (default /tmp/bench16-out), seven files:
#   summary.txt  one line per step and per workload: result, ACKed msg/s, p99, CPU cores of
#                each process over the measured window, machine busy cores, verification
#   summary.md   imctl bench summary of the reports
#   reports.md   each workload's markdown report and the tail of its progress output
#   reports.json each workload's JSON report (concatenated documents, one per workload)
#   metrics.txt  imd's /metrics after each workload
#   machine.txt  nproc, lscpu, free, uptime, file system, fsync probe, limits; before and after;
#                which libraries mariadbd and redis-server mapped
#   logs.txt     this script's progress, per-second machine busy cores, the servers' log tails
#
# Environment: OUT; BENCH16_DIR (where to unpack); BENCH16_BUDGET (seconds);
# BENCH16_WARMUP, BENCH16_DURATION (seconds); BENCH16_W1_USERS (4000); BENCH16_POOL (e.g. 8G);
# BENCH16_MYSQL_PORT, BENCH16_REDIS_PORT, BENCH16_HTTP_PORT, BENCH16_TCP_PORT;
# BENCH16_UNXZ=1 (unpack with ./unxz even where xz exists);
# BENCH16_REDIS_MASTERS=N (3 or more): the tenant on a Redis Cluster of N masters (no replicas;
# ports BENCH16_REDIS_PORT … + N-1, cluster bus ports 10000 above, the slots split evenly), as
# DESIGN §11 spreads a tenant, instead of one Redis; every master is measured (redis:<port>),
# the redis column sums them and each report's ceiling line is the busiest master's;
# BENCH16_SMOKE=1: a quick check of the kit itself: ports 41306/41379/41080/41900, tiny
# workloads, 1 s warm-up, 3 s window, 256M buffer pool, unpacked to /tmp/bench16-smoke.
set -u

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUNDLE="$HERE/bundle.tar.xz"
SMOKE="${BENCH16_SMOKE:-0}"
T0=$SECONDS

case "${1:-}" in -h | --help)
	sed -n '2,39p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
	exit 0
	;;
esac

if [[ "$SMOKE" == 1 ]]; then
	B="${BENCH16_DIR:-/tmp/bench16-smoke}"
	MYSQL_PORT=41306 REDIS_PORT=41379 HTTP_PORT=41080 TCP_PORT=41900
	WARMUP=1 DURATION=3 POOL=256M BUDGET=240 SETUP=45 DRAIN_MAX=5 FSYNC_WRITES=50
	W1_USERS=20 W2_USERS=20 W2_GROUP=5 W3_MEMBERS=20 W3_RATE=20 W4_CONNS=40 W4_USERS=10 W4_HEARTBEAT=1s
	W5_MESSAGES=20 W5_READERS=2 T1_GROUPS=2 T1_SIZE=5 T2_MEMBERS=10
else
	B="${BENCH16_DIR:-/tmp/bench16}"
	MYSQL_PORT=3306 REDIS_PORT=6379 HTTP_PORT=18080 TCP_PORT=19000
	WARMUP=5 DURATION=20 POOL="" BUDGET=340 SETUP=70 DRAIN_MAX=30 FSYNC_WRITES=200
	W1_USERS=4000 W2_USERS=4000 W2_GROUP=10 W3_MEMBERS=1000 W3_RATE=200 W4_CONNS=20000 W4_USERS=1000 W4_HEARTBEAT=10s
	W5_MESSAGES=500 W5_READERS=4 T1_GROUPS="" T1_SIZE="" T2_MEMBERS=""
fi
MYSQL_PORT="${BENCH16_MYSQL_PORT:-$MYSQL_PORT}" REDIS_PORT="${BENCH16_REDIS_PORT:-$REDIS_PORT}"
HTTP_PORT="${BENCH16_HTTP_PORT:-$HTTP_PORT}" TCP_PORT="${BENCH16_TCP_PORT:-$TCP_PORT}"
WARMUP="${BENCH16_WARMUP:-$WARMUP}" DURATION="${BENCH16_DURATION:-$DURATION}"
BUDGET="${BENCH16_BUDGET:-$BUDGET}" W1_USERS="${BENCH16_W1_USERS:-$W1_USERS}" POOL="${BENCH16_POOL:-$POOL}"
for v in MYSQL_PORT REDIS_PORT HTTP_PORT TCP_PORT WARMUP DURATION BUDGET W1_USERS; do
	[[ "${!v}" =~ ^[0-9]+$ ]] || { echo "$v must be a whole number (seconds for times), not '${!v}'" >&2; exit 2; }
done
MASTERS="${BENCH16_REDIS_MASTERS:-1}"
[[ "$MASTERS" =~ ^[0-9]+$ ]] && ((MASTERS == 1 || MASTERS >= 3)) ||
	{ echo "BENCH16_REDIS_MASTERS must be 1 (one Redis) or 3 or more (a Redis Cluster's least), not '$MASTERS'" >&2; exit 2; }
REDIS_PORTS=()
for ((i = 0; i < MASTERS; i++)); do REDIS_PORTS+=($((REDIS_PORT + i))); done
REDIS_ADDRS="$(printf '127.0.0.1:%s,' "${REDIS_PORTS[@]}")"
REDIS_ADDRS="${REDIS_ADDRS%,}"
if [[ -z "$POOL" ]]; then # 8G, or a quarter of the memory where that is less
	mem_mb=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo 2>/dev/null)
	POOL=8192M
	[[ "$mem_mb" =~ ^[0-9]+$ ]] && ((mem_mb / 4 < 8192)) && POOL="$((mem_mb / 4))M"
fi
OUT="${OUT:-/tmp/bench16-out}"
SRC_IPS=127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5
RUN="$B/run" # server state: data, configs, logs
W="$B/work" # each workload's files before they go to $OUT
LD="$B/lib/ld-linux-x86-64.so.2"
PROG="$B.progress.log" # outside $B, which is removed before unpacking
DEADLINE=$((T0 + BUDGET))
RESERVE=50 # seconds kept for stopping the servers and collecting the logs
MDB_PID="" RDS_PIDS=() IMD_PID="" SAMPLER_PID="" WATCHDOG_PID=""
IMD_STARTS=0
NCPU=$(grep -c '^cpu[0-9]' /proc/stat 2>/dev/null || nproc)
TENANT="b16_$(date +%s)"

case "$B" in /*/*) ;; *) echo "BENCH16_DIR must be an absolute path below a directory, not $B" >&2; exit 2 ;; esac
[[ "$B" != *..* ]] || { echo "BENCH16_DIR must not hold '..'" >&2; exit 2; }

# The servers must not see the host's preloads, library path, MySQL or Go settings; imd refuses
# IMD_* variables it does not know, and imctl reads IMCTL_* and a profile file.
unset LD_PRELOAD LD_LIBRARY_PATH LD_AUDIT LANGUAGE NOTIFY_SOCKET MYSQL_HOME MARIADB_HOME MYSQL_TCP_PORT \
	MYSQL_UNIX_PORT MYSQL_PWD GOMAXPROCS GOGC GOMEMLIMIT GODEBUG GOFLAGS
for v in $(compgen -e); do
	case "$v" in IMD_* | IMCTL_*) unset "$v" ;; esac
done
export LC_ALL=C LANG=C TZ=UTC XDG_CONFIG_HOME="$RUN/xdg"

mkdir -p "$OUT" || exit 1
for f in summary.txt summary.md reports.md reports.json metrics.txt machine.txt logs.txt; do : >"$OUT/$f"; done
: >"$PROG"

say() {
	local l="[bench16 $(date +%H:%M:%S) +$((SECONDS - T0))s] $*"
	echo "$l"
	echo "$l" >>"$PROG"
}
sum() { printf '%s\n' "$*" >>"$OUT/summary.txt"; }
left() { echo $((DEADLINE - RESERVE - SECONDS)); }
# step_timeout WANT MIN: min(WANT, what the budget leaves); fails when that is under MIN.
step_timeout() {
	local want=$1 min=$2 l
	l=$(left)
	((l < want)) && want=$l
	((want >= min)) || return 1
	echo "$want"
}
alive() { [[ "${1:-}" =~ ^[0-9]+$ ]] && kill -0 "$1" 2>/dev/null; }

# ---------------------------------------------------------------- probes (bash only: no curl)

tcp_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
# http_get PORT PATH: the response (status line, headers, body) of a GET on 127.0.0.1.
http_get() {
	timeout 5 "$BASH" -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" || exit 1
		printf "GET %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n" "$1" "$0" >&3
		cat <&3' "$1" "$2" 2>/dev/null
}
http_status() {
	(
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' "$2" "$1" >&3
		IFS=' ' read -r -t 3 _ code _ <&3 && echo "$code"
	) 2>/dev/null
}
# resp FD ARGS...: one Redis command on FD.
resp() {
	local fd=$1 a
	shift
	printf '*%d\r\n' $# >&"$fd"
	for a in "$@"; do printf '$%d\r\n%s\r\n' "${#a}" "$a" >&"$fd"; done
}
# redis_ask PORT ARGS...: one command's reply, its lines without CR (a bulk string's text
# lines after its length line); fails without a reply.
redis_ask() {
	local port=$1
	shift
	(
		exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
		resp 3 "$@"
		IFS= read -r -t 2 l <&3 || exit 1
		echo "${l%$'\r'}"
		if [[ "$l" == '$'* ]]; then
			while IFS= read -r -t 0.2 l <&3; do echo "${l%$'\r'}"; done
		fi
	) 2>/dev/null
}
PING_PORT=$REDIS_PORT
redis_ping() { [[ "$(redis_ask "$PING_PORT" PING)" == +PONG* ]]; }
# cluster_ok: every master says cluster_state:ok and knows all the others.
cluster_ok() {
	local port info
	for port in "${REDIS_PORTS[@]}"; do
		info="$(redis_ask "$port" CLUSTER INFO)"
		[[ "$info" == *cluster_state:ok* && "$info" == *"cluster_known_nodes:$MASTERS"* ]] || return 1
	done
}
# deliver_backlog: jobs in the tenant's deliver lists (queued or taken, not acknowledged). Two
# narrow KEYS patterns: bash reads a socket a byte at a time, and deliver:* also matches a key
# per message.
deliver_backlog() {
	local port n total=0
	for port in "${REDIS_PORTS[@]}"; do
		n=$(node_backlog "$port") || return 1
		total=$((total + n))
	done
	echo "$total"
}
# node_backlog PORT: deliver_backlog of the keys one Redis (one master of a cluster) holds.
node_backlog() {
	(
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		local pat l n i k keys=() total=0
		for pat in queue processing; do
			resp 3 KEYS "im:{$TENANT[}~]*:deliver:$pat*" # every slot group (DESIGN §11)
			IFS= read -r -t 3 l <&3 || exit 1
			l=${l%$'\r'}
			[[ "$l" =~ ^\*[0-9]+$ ]] || exit 1
			n=${l#\*}
			((n <= 1000)) || exit 1
			for ((i = 0; i < n; i++)); do
				IFS= read -r -t 3 l <&3 && IFS= read -r -t 3 k <&3 || exit 1
				keys+=("${k%$'\r'}")
			done
		done
		for k in "${keys[@]}"; do
			resp 3 LLEN "$k"
			IFS= read -r -t 3 l <&3 || exit 1
			l=${l%$'\r'}
			[[ "$l" =~ ^:[0-9]+$ ]] && total=$((total + ${l#:}))
		done
		echo "$total"
	) 2>/dev/null
}
mdb_up() { grep -q 'ready for connections' "$RUN/mariadb.log" 2>/dev/null && tcp_open 127.0.0.1 "$MYSQL_PORT"; }
imd_up() { [[ "$(http_status "$HTTP_PORT" /readyz)" == 200 ]]; }

# wait_for SECONDS PID PROBE: until PROBE passes; fails early when PID dies.
wait_for() {
	local secs=$1 pid=$2 probe=$3 i
	for ((i = 0; i < secs * 5; i++)); do
		"$probe" && return 0
		alive "$pid" || return 1
		sleep 0.2
	done
	return 1
}

# stop_pid NAME PID GRACE: TERM, wait up to GRACE seconds, then KILL.
stop_pid() {
	local name=$1 pid=$2 grace=$3 i
	alive "$pid" || return 0
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < grace * 5; i++)); do
		alive "$pid" || { say "$name (pid $pid) stopped"; return 0; }
		sleep 0.2
	done
	kill -KILL "$pid" 2>/dev/null
	say "$name (pid $pid) killed after ${grace}s"
}

# ---------------------------------------------------------------- machine

machine_info() {
	{
		echo "===== $1: $(date -u '+%Y-%m-%dT%H:%M:%SZ') ====="
		echo "--- nproc: $(nproc 2>&1); CPUs in /proc/stat: $NCPU"
		echo "--- lscpu"
		timeout 10 lscpu 2>&1 | grep -v '^Vulnerability' || grep -m1 'model name' /proc/cpuinfo
		echo "--- free -m"
		timeout 10 free -m 2>&1 || head -5 /proc/meminfo
		echo "--- uptime: $(timeout 10 uptime 2>&1 || cat /proc/loadavg)"
		if [[ "$1" == before ]]; then
			echo "--- uname -a: $(uname -a)"
			echo "--- os: $(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}"); $(getconf GNU_LIBC_VERSION 2>/dev/null || echo 'glibc ?')"
			echo "--- id: $(id 2>&1)"
			echo "--- ulimit -n: $(ulimit -n) (hard $(ulimit -Hn))"
			echo "--- cgroup cpu.max: $(cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo n/a); memory.max: $(cat /sys/fs/cgroup/memory.max 2>/dev/null || echo n/a)"
			echo "--- cpufreq governor: $(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || echo n/a); THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo n/a)"
			echo "--- fs of $(dirname "$B"): $(stat -f -c %T "$(dirname "$B")" 2>/dev/null); df: $(timeout 10 df -h "$(dirname "$B")" 2>/dev/null | tail -1)"
			echo "--- mounts:"
			grep -E " (/|/tmp|$(dirname "$B")) " /proc/mounts 2>/dev/null
			echo "--- block devices (rotational):"
			for d in /sys/block/*; do [[ -e "$d/queue/rotational" && "${d##*/}" != loop* && "${d##*/}" != zram* && "${d##*/}" != ram* ]] && echo "  ${d##*/} rotational=$(cat "$d/queue/rotational") scheduler=$(cat "$d/queue/scheduler" 2>/dev/null)"; done
			echo "--- tools: xz=$(command -v xz || echo none) lscpu=$(command -v lscpu || echo none) free=$(command -v free || echo none)"
			echo "--- smoke=$SMOKE budget=${BUDGET}s dir=$B out=$OUT ports mysql=$MYSQL_PORT redis=$REDIS_ADDRS http=$HTTP_PORT tcp=$TCP_PORT pool=$POOL"
		fi
	} >>"$OUT/machine.txt" 2>&1
}

# fsync_probe: FSYNC_WRITES 4 KiB O_DSYNC writes in $RUN: what one durable commit costs there.
fsync_probe() {
	local s e ms
	s=$EPOCHREALTIME
	if timeout 60 dd if=/dev/zero of="$RUN/fsync.probe" bs=4k count="$FSYNC_WRITES" oflag=dsync 2>/dev/null; then
		e=$EPOCHREALTIME
		ms=$(awk -v s="$s" -v e="$e" -v n="$FSYNC_WRITES" 'BEGIN {printf "%.3f", (e - s) * 1000 / n}')
		sum "fsync probe  $FSYNC_WRITES x 4 KiB O_DSYNC writes: $ms ms each on $(stat -f -c %T "$RUN" 2>/dev/null) ($RUN)"
		echo "--- fsync probe: $FSYNC_WRITES x 4 KiB dd oflag=dsync: $ms ms each" >>"$OUT/machine.txt"
	else
		sum "fsync probe  failed (dd)"
	fi
	rm -f "$RUN/fsync.probe"
}

# loader_check NAME PID: every shared object the process mapped must come from $B/lib.
loader_check() {
	local name=$1 pid=$2 libs foreign n
	libs="$(grep -o '/[^ ]*\.so[^ ]*' "/proc/$pid/maps" 2>/dev/null | sort -u)"
	foreign="$(grep -v "^$B/lib/" <<<"$libs" | grep -v '^$')"
	n=$(grep -c . <<<"$libs")
	{
		echo "===== loader check: $name (pid $pid, exe $(readlink "/proc/$pid/exe" 2>/dev/null))"
		echo "$libs"
	} >>"$OUT/machine.txt"
	if [[ -z "$libs" ]]; then
		echo "loader check unknown (no maps)"
	elif [[ -z "$foreign" ]]; then
		echo "loader check ok: $n shared objects, all from $B/lib"
	else
		echo "loader check FOREIGN: $(tr '\n' ' ' <<<"$foreign")"
	fi
}

# sampler FILE: every second "time busy total steal" (jiffies of all CPUs, /proc/stat).
sampler() {
	local c u n s i io irq sirq st rest
	while :; do
		read -r c u n s i io irq sirq st rest </proc/stat
		echo "$EPOCHREALTIME $((u + n + s + irq + sirq)) $((u + n + s + i + io + irq + sirq + st)) $st"
		sleep 1
	done
}

# busy_cores FROM TO: "WINDOW PEAK STEAL": the highest mean busy cores over DURATION
# consecutive seconds between FROM and TO (the measured window, when the load is the
# heaviest part of the run), the highest one-second value, and the steal over that span.
busy_cores() {
	awk -v a="$1" -v b="$2" -v n="$DURATION" -v c="$NCPU" '
		$1 >= a && $1 <= b {
			if (have && $3 > pt) { k++; bz[k] = ($2 - pb) / ($3 - pt) * c; sl[k] = ($4 - ps) / ($3 - pt) * c }
			pb = $2; pt = $3; ps = $4; have = 1
		}
		END {
			if (k == 0) { print "- - -"; exit }
			if (n > k) n = k
			best = -1; peak = 0
			for (i = 1; i <= k; i++) if (bz[i] > peak) peak = bz[i]
			for (i = 1; i + n - 1 <= k; i++) {
				s = 0; t = 0
				for (j = i; j < i + n; j++) { s += bz[j]; t += sl[j] }
				if (s > best) { best = s; bst = t }
			}
			printf "%.1f %.1f %.1f\n", best / n, peak, bst / n
		}' "$W/cpu.samples"
}

# ---------------------------------------------------------------- servers

render() { sed -e "s|@BASE@|$B|g" -e "s|@RUN@|$RUN|g" -e "s|@PORT@|$2|g" -e "s|@POOL@|$POOL|g" "$1"; }

start_mariadb() {
	mkdir -p "$RUN/tmp" && timeout 60 tar -xf "$B/datadir.tar" -C "$RUN" || return 1
	render "$B/conf/my.cnf" "$MYSQL_PORT" >"$RUN/my.cnf"
	(cd "$RUN" && exec env OPENSSL_CONF="$B/conf/openssl.cnf" "$LD" --library-path "$B/lib" "$B/bin/mariadbd" \
		--defaults-file="$RUN/my.cnf") </dev/null >"$RUN/mariadbd.out" 2>&1 &
	MDB_PID=$!
	echo "$MDB_PID" >>"$RUN/pids"
	wait_for "$(step_timeout 120 5 || echo 5)" "$MDB_PID" mdb_up
}

# start_redis: the one Redis in $RUN, or each master of the cluster in $RUN/m<port> (its
# conf, pid, log and AOF), then the cluster made of them: each master takes its share of the
# slots, the first meets the others, and all must agree (cluster_ok).
start_redis() {
	local port dir pid
	for port in "${REDIS_PORTS[@]}"; do
		dir="$RUN"
		((MASTERS == 1)) || dir="$RUN/m$port"
		mkdir -p "$dir/redis"
		sed -e "s|@RUN@|$dir|g" -e "s|@PORT@|$port|g" "$B/conf/redis.conf" >"$dir/redis.conf"
		if ((MASTERS > 1)); then
			printf '%s\n' 'cluster-enabled yes' 'cluster-config-file nodes.conf' 'cluster-node-timeout 5000' \
				'cluster-require-full-coverage no' >>"$dir/redis.conf"
		fi
		(cd "$dir" && exec env OPENSSL_CONF="$B/conf/openssl.cnf" "$LD" --library-path "$B/lib" "$B/bin/redis-server" \
			"$dir/redis.conf") </dev/null >"$dir/redis.out" 2>&1 &
		pid=$!
		RDS_PIDS+=("$pid")
		echo "$pid" >>"$RUN/pids"
		PING_PORT=$port
		wait_for "$(step_timeout 30 5 || echo 5)" "$pid" redis_ping || return 1
	done
	((MASTERS > 1)) || return 0
	local i per=$((16384 / MASTERS)) lo hi
	for ((i = 0; i < MASTERS; i++)); do
		lo=$((i * per)) hi=$(((i + 1) * per - 1))
		((i == MASTERS - 1)) && hi=16383
		[[ "$(redis_ask "${REDIS_PORTS[i]}" CLUSTER ADDSLOTSRANGE "$lo" "$hi")" == +OK ]] || return 1
	done
	for port in "${REDIS_PORTS[@]:1}"; do
		[[ "$(redis_ask "$REDIS_PORT" CLUSTER MEET 127.0.0.1 "$port")" == +OK ]] || return 1
	done
	wait_for "$(step_timeout 60 5 || echo 5)" "${RDS_PIDS[0]}" cluster_ok
}

start_imd() {
	local d="$RUN/imd"
	IMD_STARTS=$((IMD_STARTS + 1))
	mkdir -p "$d/search" "$d/archive" "$d/uploads"
	echo "----- imd start #$IMD_STARTS at $(date +%H:%M:%S)" >>"$RUN/imd.log"
	(cd "$d" && exec env IMD_TENANTS="$TENANT:imd_$TENANT" \
		IMD_HTTP_ADDR="127.0.0.1:$HTTP_PORT" IMD_TCP_ADDR="127.0.0.1:$TCP_PORT" \
		IMD_SEARCH_DIR="$d/search" IMD_ARCHIVE_DIR="$d/archive" IMD_UPLOADS_DIR="$d/uploads" \
		IMD_MYSQL_DSN="imd:imd@tcp(127.0.0.1:$MYSQL_PORT)/?parseTime=true&multiStatements=true" \
		IMD_REDIS_ADDR="$REDIS_ADDRS" \
		"$B/bin/imd" --config "$B/conf/imd.bench.yaml") </dev/null >>"$RUN/imd.log" 2>&1 &
	IMD_PID=$!
	echo "$IMD_PID" >>"$RUN/pids"
	wait_for "$(step_timeout 60 5 || echo 5)" "$IMD_PID" imd_up
}

# ensure_imd: imd runs and answers; starts it again (three starts in all) if it died.
ensure_imd() {
	alive "$IMD_PID" && imd_up && return 0
	[[ -n "$IMD_PID" ]] && say "imd (pid $IMD_PID) is not running/answering"
	((IMD_STARTS >= 3)) && return 1
	stop_pid imd "$IMD_PID" 5
	local s=$SECONDS
	say "starting imd (start #$((IMD_STARTS + 1)))"
	if start_imd; then
		say "imd up: pid $IMD_PID"
		if ((IMD_STARTS > 1)); then
			sum "imd          started again (start #$IMD_STARTS) at +$((SECONDS - T0))s: pid $IMD_PID"
		else
			sum "imd          up: pid $IMD_PID in $((SECONDS - s))s, tenant $TENANT, http 127.0.0.1:$HTTP_PORT, frames 127.0.0.1:$TCP_PORT"
		fi
		return 0
	fi
	say "imd failed to start; tail of its log:"
	tail -n 20 "$RUN/imd.log" | cut -c1-400
	sum "imd          FAIL (start #$IMD_STARTS): $(tail -n 2 "$RUN/imd.log" 2>/dev/null | tr '\n' ' ' | cut -c1-300)"
	return 1
}

# ---------------------------------------------------------------- workloads

# digest REPORT.json: KEY=VALUE lines of the figures the summary shows (no jq on a bare machine;
# the report is encoding/json's indented output).
digest() {
	awk '
		function v(s) { sub(/^[^:]*:[ ]*/, "", s); sub(/,[ ]*$/, "", s); gsub(/^"|"$/, "", s); return s }
		function key(s) { match(s, /"[a-z_0-9]+"/); return substr(s, RSTART + 1, RLENGTH - 2) }
		/^  "[a-z_]+":/ { top = key($0) }
		/^  "(acked_per_s|delivered_per_s|ops_per_s|machine_cpu_utilization|pass|interrupted)":/ { print top "=" v($0) }
		top == "machine" && /^    "cores":/ { print "cores=" v($0) }
		top == "latencies" && /^      "name":/ { name = v($0) }
		top == "latencies" && /^      "p99_ms":/ { print "p99_" name "=" v($0) }
		(top == "processes" || top == "window_processes") && /^      "name":/ { name = v($0) }
		top == "window_processes" && /^      "cpu_cores":/ { print "win_" name "=" v($0) }
		top == "processes" && /^      "cpu_cores":/ { print "run_" name "=" v($0) }
		top == "verification" && /^    "[a-z_]+": [0-9]/ { print "v_" key($0) "=" v($0) }
		top == "problems" && /^    "/ { p = $0; sub(/^ +"/, "", p); sub(/",?$/, "", p); problems = problems (problems == "" ? "" : "; ") p }
		END { if (problems != "") print "problems=" problems }
	' "$1"
}

num() { awk -v x="${1:-}" -v f="$2" 'BEGIN { if (x == "" || x == "-") print "-"; else printf f, x }'; }

# record LABEL RC SECS TIMEOUT FROM TO ARGS: reports to $OUT and a line to summary.txt.
record() {
	local label=$1 rc=$2 secs=$3 t=$4 from=$5 to=$6 args=$7 k val result ver busy win peak steal
	local -A D=()
	{
		echo "===== $label: imctl bench $args: rc=$rc in ${secs}s (timeout ${t}s) ====="
		if [[ -s "$W/$label.md" ]]; then cat "$W/$label.md"; else cat "$W/$label.out" 2>/dev/null; fi
		echo
		echo "--- progress (stderr, last 40 lines)"
		tail -n 40 "$W/$label.err" 2>/dev/null
		echo
	} >>"$OUT/reports.md"
	if [[ -s "$W/$label.json" ]]; then
		cat "$W/$label.json" >>"$OUT/reports.json"
		while IFS='=' read -r k val; do D[$k]=$val; done < <(digest "$W/$label.json")
	fi
	# The masters of a cluster (redis:<port>) are the redis column together.
	if [[ -z "${D[win_redis]:-}" ]]; then
		for k in "${!D[@]}"; do
			[[ "$k" == win_redis:* ]] && D[win_redis]=$(awk -v a="${D[win_redis]:-0}" -v b="${D[$k]}" 'BEGIN {printf "%.4f", a + b}')
		done
	fi
	read -r win peak steal <<<"$(busy_cores "$from" "$to")"
	if [[ -z "${D[pass]:-}" ]]; then
		case "$rc" in
		124 | 137) result="TIMEOUT(${t}s)" ;;
		*) result="ERROR rc=$rc" ;;
		esac
		ver="$(grep -v '^\s*$' "$W/$label.err" 2>/dev/null | tail -n 1 | cut -c1-200)"
	else
		result=PASS
		[[ "${D[pass]}" == true ]] || result=FAIL
		ver="missing ${D[v_missing]:-?} dup ${D[v_duplicated]:-?} order ${D[v_out_of_order]:-?} unexpected ${D[v_unexpected]:-?} (acked ${D[v_acked]:-?}, delivered ${D[v_delivered]:-?}/${D[v_expected]:-?})"
		[[ -n "${D[problems]:-}" ]] && ver+="; ${D[problems]}"
		[[ "$rc" == 124 || "$rc" == 137 ]] && result="TIMEOUT(${t}s)"
	fi
	local total
	total=$(awk -v a="${D[win_imd]:-0}" -v b="${D[win_mariadbd]:-0}" -v c="${D[win_redis]:-0}" -v d="${D[win_imctl]:-0}" 'BEGIN {printf "%.2f", a + b + c + d}')
	[[ -z "${D[win_imd]:-}" ]] && total=-
	busy="$(num "${D[machine_cpu_utilization]:-}" '%.3f')"
	[[ "$busy" != - ]] && busy=$(awk -v u="$busy" -v c="${D[cores]:-$NCPU}" 'BEGIN {printf "%.1f", u * c}')
	local other=""
	for k in "${!D[@]}"; do
		case "$k" in p99_send_ack | p99_send_to_delivery | p99_connect_auth) ;; p99_*) other=" ${k#p99_} $(num "${D[ops_per_s]:-}" '%.0f')/s p99 $(num "${D[$k]}" '%.2f')ms" ;; esac
	done
	sum "$(printf '%-11s %-7s %9s %8s %8s | %6s %6s %6s %6s %6s | %6s %6s %6s %6s | %s%s | %ss' \
		"$label" "$result" "$(num "${D[acked_per_s]:-}" '%.0f')" \
		"$(num "${D[p99_send_ack]:-}" '%.2f')" "$(num "${D[p99_send_to_delivery]:-}" '%.2f')" \
		"$(num "${D[win_imd]:-}" '%.2f')" "$(num "${D[win_mariadbd]:-}" '%.2f')" "$(num "${D[win_redis]:-}" '%.2f')" \
		"$(num "${D[win_imctl]:-}" '%.2f')" "$total" "${win:--}" "${peak:--}" "$busy" "${steal:--}" "$ver" "$other" "$secs")"
	say "$label: $result $(num "${D[acked_per_s]:-}" '%.0f') ACKed msg/s (${secs}s)"
}

# metrics LABEL: imd's /metrics after a workload.
metrics() {
	{
		echo "===== $1: imd /metrics at $(date -u +%H:%M:%SZ) (cumulative since imd start #$IMD_STARTS) ====="
		http_get "$HTTP_PORT" /metrics | sed '1,/^\r*$/d'
		echo
	} >>"$OUT/metrics.txt"
}

declare -A SEEN=()
LABELS=()
# workload ARG: one imctl bench run of WORKLOAD[:N].
workload() {
	local arg=$1 name n label args t rc s from to pids
	name="${arg%%:*}" n=""
	[[ "$arg" == *:* ]] && n="${arg#*:}"
	if [[ -n "$n" && ! "$n" =~ ^[0-9]+$ ]]; then
		sum "$(printf '%-11s SKIPPED: size %s is not a number' "$arg" "$n")"
		return
	fi
	case "$name" in
	w1) args=(w1 --users "${n:-$W1_USERS}") ;;
	w2) args=(w2 --users "${n:-$W2_USERS}" --group-size "$W2_GROUP") ;;
	w3) args=(w3 --members "${n:-$W3_MEMBERS}" --rate "$W3_RATE") ;;
	w4) # each connection is a descriptor in imd and in imctl: stay under the open-file limit
		n="${n:-$W4_CONNS}"
		(($(ulimit -n) - 2000 > 0 && n > $(ulimit -n) - 2000)) && n=$(($(ulimit -n) - 2000))
		args=(w4 --conns "$n" --users "$W4_USERS" --heartbeat "$W4_HEARTBEAT")
		;;
	w5) args=(w5 --messages "${n:-$W5_MESSAGES}" --users "$W5_READERS") ;;
	t1)
		args=(t1)
		[[ -n "${n:-$T1_GROUPS}" ]] && args+=(--groups "${n:-$T1_GROUPS}")
		[[ -n "$T1_SIZE" ]] && args+=(--group-size "$T1_SIZE")
		;;
	t2)
		args=(t2)
		n="${n:-$T2_MEMBERS}"
		[[ -n "$n" ]] && args+=(--members "$n" --publishers "$(((n + 1) / 2))")
		;;
	*)
		sum "$(printf '%-11s SKIPPED: unknown workload (w1 w2 w3 w4 w5 t1 t2)' "$arg")"
		say "$arg: unknown workload"
		return
		;;
	esac
	label="$name"
	[[ "$arg" == *:* ]] && label="$name-${arg#*:}"
	if [[ -n "${SEEN[$label]:-}" ]]; then
		SEEN[$label]=$((SEEN[$label] + 1))
		label="$label-${SEEN[$label]}"
	else
		SEEN[$label]=1
	fi
	if ! t=$(step_timeout $((WARMUP + DURATION + SETUP)) $((WARMUP + DURATION + 10))); then
		sum "$(printf '%-11s SKIPPED: time budget (%ss left)' "$label" "$(left)")"
		say "$label skipped: time budget"
		return
	fi
	if ! ensure_imd; then
		sum "$(printf '%-11s SKIPPED: imd not up' "$label")"
		return
	fi
	local i b
	for ((i = 0; i < DRAIN_MAX; i++)); do
		b=$(deliver_backlog)
		[[ "$b" == 0 ]] && break
		sleep 1
	done
	[[ "$b" == 0 ]] || sum "$(printf '%-11s note: deliver backlog of the tenant %s after %ss; it runs anyway' "$label" "${b:-unknown}" "$DRAIN_MAX")"
	t=$(step_timeout "$t" 5) || t=5
	pids="imd=$IMD_PID,mariadbd=$MDB_PID"
	if ((MASTERS == 1)); then
		pids+=",redis=${RDS_PIDS[0]}"
	else
		for ((i = 0; i < MASTERS; i++)); do pids+=",redis:${REDIS_PORTS[i]}=${RDS_PIDS[i]}"; done
	fi
	say "$label: imctl bench ${args[*]} (warm-up ${WARMUP}s, window ${DURATION}s, timeout ${t}s)"
	s=$SECONDS from=$EPOCHREALTIME
	# imctl measures itself too (as "imctl"): the load generator shares the machine.
	timeout -k 5 "$t" "$B/bin/imctl" --http "http://127.0.0.1:$HTTP_PORT" --tcp "127.0.0.1:$TCP_PORT" \
		--tenant "$TENANT" --admin-key "$ADMIN_KEY" bench "${args[@]}" --warmup "${WARMUP}s" --duration "${DURATION}s" \
		--source-ips "$SRC_IPS" --pids "$pids" --json "$W/$label.json" --md "$W/$label.md" \
		--redis "$REDIS_ADDRS" --mysql-dsn "imd:imd@tcp(127.0.0.1:$MYSQL_PORT)/" \
		</dev/null >"$W/$label.out" 2>"$W/$label.err"
	rc=$?
	to=$EPOCHREALTIME
	record "$label" "$rc" $((SECONDS - s)) "$t" "$from" "$to" "${args[*]}"
	[[ -s "$W/$label.json" ]] && LABELS+=("$label")
	alive "$IMD_PID" && metrics "$label"
}

# ---------------------------------------------------------------- teardown

FINISHED=0
finish() {
	((FINISHED)) && return
	FINISHED=1
	say "stopping the servers"
	stop_pid imd "$IMD_PID" 8
	local p
	for p in "${RDS_PIDS[@]}"; do stop_pid redis "$p" 5; done
	stop_pid mariadbd "$MDB_PID" 15
	alive "$SAMPLER_PID" && kill "$SAMPLER_PID" 2>/dev/null
	alive "$WATCHDOG_PID" && kill "$WATCHDOG_PID" 2>/dev/null
	machine_info after
	sum ""
	sum "total $((SECONDS - T0))s, budget ${BUDGET}s; output in $OUT"
	say "done in $((SECONDS - T0))s; output in $OUT"
	{
		echo "===== progress (run.sh stdout) ====="
		cat "$PROG"
		if [[ -s "$W/cpu.samples" ]]; then
			echo
			echo "===== machine busy cores, per second (of $NCPU CPUs; steal apart) ====="
			awk -v c="$NCPU" '{ if (have && $3 > pt) printf "+%ds %.1f steal %.1f\n", $1 - t0, ($2 - pb) / ($3 - pt) * c, ($4 - ps) / ($3 - pt) * c
				if (!have) t0 = $1
				pb = $2; pt = $3; ps = $4; have = 1 }' "$W/cpu.samples"
		fi
		local f
		for f in mariadb.log mariadbd.out redis.log redis.out $(cd "$RUN" 2>/dev/null && echo m*/redis.log m*/redis.out) imd.log; do
			[[ -f "$RUN/$f" ]] || continue
			echo
			echo "===== tail -n 100 $f ($(wc -l <"$RUN/$f") lines, $(wc -c <"$RUN/$f") bytes) ====="
			tail -n 100 "$RUN/$f" | cut -c1-2000
		done
		if [[ -f "$RUN/imd.log" ]]; then
			echo
			echo "===== imd.log: error/fatal/panic lines (last 50) ====="
			grep -E '"level":"(ERROR|error|FATAL|fatal)"|panic|fatal error' "$RUN/imd.log" | tail -n 50 | cut -c1-2000
		fi
	} >>"$OUT/logs.txt" 2>&1
	echo "----- $OUT/summary.txt -----"
	cat "$OUT/summary.txt"
}
trap finish EXIT
trap 'say "interrupted"; exit 130' INT TERM

# ---------------------------------------------------------------- main

WORKLOADS=("$@")
((${#WORKLOADS[@]})) || WORKLOADS=(t1 t2 w1)
say "bench16 start (smoke=$SMOKE, budget ${BUDGET}s, workloads ${WORKLOADS[*]}, bundle $BUNDLE, dir $B, out $OUT)"
sum "bench16 $(date -u '+%Y-%m-%dT%H:%M:%SZ') host $(uname -n), nproc $(nproc), $NCPU CPUs, smoke=$SMOKE, warm-up ${WARMUP}s, window ${DURATION}s, workloads ${WORKLOADS[*]}"
machine_info before
ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null
say "open files limit: $(ulimit -n)"

# Processes an earlier run in the same place left behind: only those that run from $B.
if [[ -f "$RUN/pids" ]]; then
	while read -r p; do
		[[ "$p" =~ ^[0-9]+$ ]] && { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -qF "$B/" && kill -KILL "$p" 2>/dev/null
	done <"$RUN/pids"
	sleep 1
fi

s=$SECONDS
rm -rf "$B" && mkdir -p "$B" || { sum "unpack       FAIL: cannot make $B"; exit 1; }
if [[ "${BENCH16_UNXZ:-0}" != 1 ]] && command -v xz >/dev/null; then
	timeout 180 xz -T0 -dc "$BUNDLE" | tar -x -C "$B"
	rc=$((PIPESTATUS[0] | PIPESTATUS[1]))
elif [[ -f "$HERE/unxz" ]]; then
	say "unpacking with the static ./unxz (no xz here, or BENCH16_UNXZ=1)"
	cp "$HERE/unxz" "$B.unxz" && chmod +x "$B.unxz" # a copied folder may have lost the x bit
	timeout 240 "$B.unxz" <"$BUNDLE" | tar -x -C "$B"
	rc=$((PIPESTATUS[0] | PIPESTATUS[1]))
else
	rc=127
	say "neither xz nor ./unxz is here"
fi
if [[ "$rc" != 0 || ! -x "$LD" ]]; then
	sum "unpack       FAIL rc=$rc ($BUNDLE)"
	say "unpacking $BUNDLE failed (rc $rc); nothing else can run"
	exit 1
fi
mkdir -p "$RUN/xdg" "$W"
: >"$RUN/pids"
ADMIN_KEY="$(awk '$1 == "admin_key:" {print $2; exit}' "$B/conf/imd.bench.yaml")"
sum "unpack       ok in $((SECONDS - s))s ($(du -sh "$B" 2>/dev/null | cut -f1)); $(sed -n 2p "$B/VERSION" 2>/dev/null)"
{
	echo "===== bundle VERSION"
	cat "$B/VERSION"
} >>"$OUT/machine.txt" 2>&1
say "unpacked in $((SECONDS - s))s"

busy=()
cluster_bus=()
((MASTERS == 1)) || for port in "${REDIS_PORTS[@]}"; do cluster_bus+=($((port + 10000))); done
for port in "$MYSQL_PORT" "${REDIS_PORTS[@]}" "${cluster_bus[@]}" "$HTTP_PORT" "$TCP_PORT"; do
	tcp_open 127.0.0.1 "$port" && busy+=("$port")
done
if ((${#busy[@]})); then
	sum "ports        FAIL: in use before the start: ${busy[*]} (move them: BENCH16_MYSQL_PORT, _REDIS_PORT, _HTTP_PORT, _TCP_PORT)"
	say "ports in use: ${busy[*]}; nothing runs"
	exit 1
fi

sampler >"$W/cpu.samples" 2>/dev/null &
SAMPLER_PID=$!
# Should this script be killed outright, the servers still go once the budget is long past.
(
	end=$((SECONDS + BUDGET + 90))
	while ((SECONDS < end)); do sleep 5; done
	while read -r p; do
		[[ "$p" =~ ^[0-9]+$ ]] && { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -qF "$B/" && kill -KILL "$p" 2>/dev/null
	done <"$RUN/pids"
	kill "$SAMPLER_PID" 2>/dev/null
) </dev/null >/dev/null 2>&1 &
WATCHDOG_PID=$!

fsync_probe

s=$SECONDS
servers=1
if start_mariadb; then
	say "mariadbd up: pid $MDB_PID, 127.0.0.1:$MYSQL_PORT (in $((SECONDS - s))s)"
	sum "mariadbd     up: pid $MDB_PID in $((SECONDS - s))s, pool $POOL; $(loader_check mariadbd "$MDB_PID"); $(grep -m1 -E 'liburing|native AIO|io_uring' "$RUN/mariadb.log" | sed -E 's/^.*\[(Note|Warning)\] //' | cut -c1-100)"
else
	servers=0
	sum "mariadbd     FAIL: $(grep -E '\[ERROR\]' "$RUN/mariadb.log" 2>/dev/null | tail -n 2 | tr '\n' ' ' | cut -c1-300) $(tail -n 2 "$RUN/mariadbd.out" 2>/dev/null | tr '\n' ' ' | cut -c1-200)"
	say "mariadbd failed to start"
fi

s=$SECONDS
if ((servers)) && start_redis; then
	say "redis up: pids ${RDS_PIDS[*]}, $REDIS_ADDRS (in $((SECONDS - s))s)"
	sum "redis        up: $MASTERS $( ((MASTERS == 1)) && echo server || echo 'cluster masters') $REDIS_ADDRS, pids ${RDS_PIDS[*]} in $((SECONDS - s))s; $(loader_check redis-server "${RDS_PIDS[0]}")"
elif ((servers)); then
	servers=0
	sum "redis        FAIL: $(cd "$RUN" && tail -n 3 redis.log redis.out m*/redis.log m*/redis.out 2>/dev/null | tr '\n' ' ' | cut -c1-300)"
	say "redis failed to start"
fi

if ((servers)) && ensure_imd; then
	sum ""
	sum "columns: ACKed msg/s; p99 ms of SEND_ACK and of send->delivery; CPU cores of each process over the"
	sum "measured window (imctl: the load generator); machine busy cores of $NCPU: mean of the busiest ${DURATION}s"
	sum "(~ the window), busiest second, imctl's average over its whole run, steal; verification (whole run)"
	sum "$(printf '%-11s %-7s %9s %8s %8s | %6s %6s %6s %6s %6s | %6s %6s %6s %6s | %s' \
		workload result 'ACKed/s' 'p99ack' 'p99dlv' imd mariadb redis imctl total window peak run steal verification)"
	for a in "${WORKLOADS[@]}"; do
		workload "$a"
	done
	if ((${#LABELS[@]})); then
		reports=()
		for l in "${LABELS[@]}"; do reports+=("$W/$l.json"); done
		timeout 15 "$B/bin/imctl" bench summary --md "$OUT/summary.md" "${reports[@]}" >/dev/null 2>>"$PROG" ||
			say "imctl bench summary failed"
	fi
else
	sum "workloads    SKIPPED: the servers are not up"
fi
exit 0
