#!/usr/bin/env bash
# Nginx in front of a local imd, as in production: one TLS port routed by SNI
# (im.<domain> -> imd's TCP listener, api.<domain> -> imd's HTTP API, anything else
# refused), PROXY headers toward imd. A private instance under the state directory,
# rendered from deploy/nginx/imd.conf.template, with a throwaway CA. No Docker needed.
#
#   nginx.sh up       install (if missing), make certs, render, `nginx -t`, start or reload
#   nginx.sh down     stop it (TERM, then KILL after a timeout)
#   nginx.sh status   print what runs
#   nginx.sh certs    only make the throwaway CA and the im/api certificates
#   nginx.sh render   print the rendered config
#
# Options (after the command) or environment:
#   --domain D     IMD_NGINX_DOMAIN    serves im.D and api.D        (default imd.localhost)
#   --port P       IMD_NGINX_PORT      public port                  (default 443)
#   --listen A     IMD_NGINX_LISTEN    public listener, port or addr:port
#                                                                   (default 127.0.0.1:<port>)
#   --mode M       IMD_NGINX_MODE      off | native                 (default off)
#                    off:    Nginx terminates TLS, imd runs tcp.tls: off + proxy_protocol: true
#                    native: TLS passes through, imd runs tcp.tls: native + proxy_protocol: true
#                            with cert_file/key_file = <state>/nginx/certs/im.{crt,key}
#   --imd-tcp A    IMD_NGINX_IMD_TCP   imd's TCP listener, host:port or unix:/path; several
#                                      nodes comma-separated (run-nodes.sh)
#                                                                   (default 127.0.0.1:9000)
#                  a unix socket must be writable by Nginx's workers (user nobody)
#   --imd-http A   IMD_NGINX_IMD_HTTP  imd's HTTP listener          (default 127.0.0.1:8080)
#   IMD_NGINX_API_HOP, IMD_NGINX_IM_HOP, IMD_NGINX_SINK_HOP: internal loopback listeners
#                  (default 127.0.0.1:18443, 127.0.0.1:18444, 127.0.0.1:18445)
#   IMD_STATE_DIR  state directory; Nginx's lives in <state>/nginx  (default <repo>/.run)
#
# Clients trust <state>/nginx/certs/ca.crt, e.g.
#   openssl s_client -connect 127.0.0.1:443 -servername im.imd.localhost -CAfile .run/nginx/certs/ca.crt
#   curl --cacert .run/nginx/certs/ca.crt https://api.imd.localhost/healthz
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
TEMPLATE="$REPO_ROOT/deploy/nginx/imd.conf.template"
RENDER="$REPO_ROOT/deploy/nginx/render.sh"

STATE_DIR="${IMD_STATE_DIR:-$REPO_ROOT/.run}"
DOMAIN="${IMD_NGINX_DOMAIN:-imd.localhost}"
PORT="${IMD_NGINX_PORT:-443}"
LISTEN="${IMD_NGINX_LISTEN:-}"
MODE="${IMD_NGINX_MODE:-off}"
IMD_TCP="${IMD_NGINX_IMD_TCP:-127.0.0.1:9000}"
IMD_HTTP="${IMD_NGINX_IMD_HTTP:-127.0.0.1:8080}"
API_HOP="${IMD_NGINX_API_HOP:-127.0.0.1:18443}"
IM_HOP="${IMD_NGINX_IM_HOP:-127.0.0.1:18444}"
SINK_HOP="${IMD_NGINX_SINK_HOP:-127.0.0.1:18445}"

PACKAGES=(nginx libnginx-mod-stream openssl gettext-base)
START_TIMEOUT=15 # seconds for a start or reload to take effect
STOP_TIMEOUT=15  # seconds before TERM turns into KILL

LOG_TAG=nginx.sh
# shellcheck source=deploy/local/lib.sh
source "$SCRIPT_DIR/lib.sh"

# master_pid: the pid of our Nginx master, if it runs (a stale pid file may name a reused pid).
master_pid() { pid_from_file "$PID_FILE" nginx; }

# ---------------------------------------------------------------- certificates

# A throwaway CA (kept across runs) and one certificate per name, remade when the domain
# changes or a certificate expires within a day.
ensure_certs() {
	mkdir -p "$CERT_DIR"
	chmod 0700 "$CERT_DIR"
	if ! [[ -s "$CERT_DIR/ca.crt" && -s "$CERT_DIR/ca.key" ]] ||
		! openssl x509 -checkend 86400 -noout -in "$CERT_DIR/ca.crt" >/dev/null 2>&1; then
		log "certs: new throwaway CA in $CERT_DIR"
		openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-keyout "$CERT_DIR/ca.key" -out "$CERT_DIR/ca.crt" -days 3650 -sha256 \
			-subj "/CN=imd throwaway local CA $(hostname -s 2>/dev/null || echo local)" \
			-addext "basicConstraints=critical,CA:TRUE" \
			-addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null ||
			die "openssl could not make the CA"
		rm -f "$CERT_DIR/domain" # every leaf must be signed by the new CA
	fi
	local name fresh=1
	[[ "$(cat "$CERT_DIR/domain" 2>/dev/null || true)" == "$DOMAIN" ]] || fresh=0
	for name in im api; do
		if ((fresh == 0)) || ! [[ -s "$CERT_DIR/$name.crt" && -s "$CERT_DIR/$name.key" ]] ||
			! openssl x509 -checkend 86400 -noout -in "$CERT_DIR/$name.crt" >/dev/null 2>&1; then
			make_leaf "$name" "$name.$DOMAIN"
		fi
	done
	printf '%s\n' "$DOMAIN" >"$CERT_DIR/domain"
}

make_leaf() {
	local name="$1" host="$2" ext
	log "certs: $host"
	ext="$(mktemp)"
	printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
		"extendedKeyUsage=serverAuth" "subjectAltName=DNS:$host" >"$ext"
	if ! openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$CERT_DIR/$name.key" -out "$CERT_DIR/$name.csr" -subj "/CN=$host" 2>/dev/null ||
		! openssl x509 -req -in "$CERT_DIR/$name.csr" -CA "$CERT_DIR/ca.crt" -CAkey "$CERT_DIR/ca.key" \
			-set_serial "0x$(openssl rand -hex 16)" -days 825 -sha256 -extfile "$ext" \
			-out "$CERT_DIR/$name.crt" 2>/dev/null; then
		rm -f "$ext"
		die "openssl could not make the certificate for $host"
	fi
	rm -f "$ext" "$CERT_DIR/$name.csr"
	chmod 0600 "$CERT_DIR/$name.key"
}

# ---------------------------------------------------------------- config

render() {
	local out="$1"
	mkdir -p "$RUN_DIR/tmp"
	MODE="$MODE" DOMAIN="$DOMAIN" LISTEN="$LISTEN" IMD_TCP="$IMD_TCP" IMD_HTTP="$IMD_HTTP" \
		API_HOP="$API_HOP" IM_HOP="$IM_HOP" SINK_HOP="$SINK_HOP" \
		CERT_DIR="$CERT_DIR" RUN_DIR="$RUN_DIR" LOG_DIR="$NGINX_DIR" \
		sh "$RENDER" "$TEMPLATE" "$out"
}

nginx_cmd() { nginx -p "$NGINX_DIR/" -e "$NGINX_DIR/error.log" "$@"; }

# config_test FILE: `nginx -t` on FILE, printing Nginx's complaint on failure.
config_test() {
	local out
	if ! out="$(nginx_cmd -t -q -c "$1" 2>&1)"; then
		printf '%s\n' "$out" >&2
		return 1
	fi
}

# connect_addr: where to knock to see the public listener answer.
connect_addr() {
	local a="$LISTEN"
	[[ "$a" =~ ^[0-9]+$ ]] && a="127.0.0.1:$a"
	a="${a/#0.0.0.0:/127.0.0.1:}"
	a="${a/#\[::\]:/[::1]:}"
	printf '%s\n' "$a"
}

knock() {
	local host="${1%:*}" port="${1##*:}"
	host="${host#[}"
	host="${host%]}"
	# shellcheck disable=SC2016 # expanded by the inner bash
	timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$host" "$port" 2>/dev/null
}

# wait_log FROM: wait until Nginx logs, after byte offset FROM of error.log, that workers
# started (success) or an [emerg] (failure).
wait_log() {
	local from="$1" i chunk
	for ((i = 0; i < START_TIMEOUT * 10; i++)); do
		chunk="$(tail -c +"$((from + 1))" "$NGINX_DIR/error.log" 2>/dev/null || true)"
		if grep -q '\[emerg\]' <<<"$chunk"; then
			grep '\[emerg\]' <<<"$chunk" >&2
			return 1
		fi
		grep -q 'start worker process' <<<"$chunk" && return 0
		sleep 0.1
	done
	log "no 'start worker process' in $NGINX_DIR/error.log within ${START_TIMEOUT}s"
	return 1
}

log_size() { stat -c %s "$NGINX_DIR/error.log" 2>/dev/null || echo 0; }

# ---------------------------------------------------------------- commands

cmd_up() {
	lock_dir "$NGINX_DIR" 120
	ensure_packages "${PACKAGES[@]}"
	ensure_certs
	render "$CONF.new"
	if ! config_test "$CONF.new"; then
		die "nginx -t rejected the rendered config (kept as $CONF.new)"
	fi
	local pid from changed=1
	cmp -s "$CONF.new" "$CONF" 2>/dev/null && changed=0
	mv -f "$CONF.new" "$CONF"
	from="$(log_size)"
	if pid="$(master_pid)"; then
		if ((changed == 0)); then
			log "already running (pid $pid), config unchanged"
		else
			log "reloading pid $pid"
			kill -HUP "$pid"
			wait_log "$from" || die "reload failed; the previous config still serves (log: $NGINX_DIR/error.log)"
		fi
	else
		rm -f "$PID_FILE"
		# The public listener uses reuseport, which would let a second server share the port
		# silently: refuse to start next to anything already answering there.
		if knock "$(connect_addr)"; then
			die "something already listens on $(connect_addr) (another Nginx? see ss -ltnp)"
		fi
		log "starting on $LISTEN (mode $MODE, im.$DOMAIN api.$DOMAIN -> tcp $IMD_TCP, http $IMD_HTTP)"
		# fg: spawn returns once the master has daemonized. The open-file limit goes up to
		# the hard limit: the template's worker_connections take it from the environment.
		if ! spawn fg "$(ulimit -Hn)" "$NGINX_DIR/nginx.out" nginx -p "$NGINX_DIR/" -e "$NGINX_DIR/error.log" -c "$CONF"; then
			tail -n 20 "$NGINX_DIR/nginx.out" >&2 || true
			die "nginx did not start (log: $NGINX_DIR/error.log)"
		fi
		wait_log "$from" || die "nginx did not start (log: $NGINX_DIR/error.log)"
		master_pid >/dev/null || die "nginx started but its pid file $PID_FILE names no running master"
	fi
	local target
	target="$(connect_addr)"
	wait_until "$START_TIMEOUT" knock "$target" || die "nothing answers on $target"
	printf '%s\n' "$LISTEN  mode $MODE  im.$DOMAIN api.$DOMAIN -> tcp $IMD_TCP, http $IMD_HTTP" >"$NGINX_DIR/summary"
	log "up: https://api.$DOMAIN and im.$DOMAIN on $LISTEN, CA $CERT_DIR/ca.crt (pid $(master_pid))"
}

cmd_down() {
	lock_dir "$NGINX_DIR" 120
	local pid
	if ! pid="$(master_pid)"; then
		rm -f "$PID_FILE"
		log "not running"
		return 0
	fi
	log "stopping pid $pid"
	kill -TERM "$pid" 2>/dev/null || true
	if ! wait_until "$STOP_TIMEOUT" gone "$pid"; then
		log "still alive after ${STOP_TIMEOUT}s, sending KILL to the process group"
		# The master runs in its own session (setsid), its workers in its process group.
		kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
		wait_until 5 gone "$pid" || true
	fi
	rm -f "$PID_FILE"
	log "stopped"
}

cmd_status() {
	local pid
	echo "state dir: $NGINX_DIR"
	if pid="$(master_pid)"; then
		echo "nginx:     running   pid $pid  $(cat "$NGINX_DIR/summary" 2>/dev/null || echo "(no summary)")"
		echo "CA:        $CERT_DIR/ca.crt"
		return 0
	fi
	echo "nginx:     stopped"
	return 1
}

cmd_certs() {
	lock_dir "$NGINX_DIR" 120
	command -v openssl >/dev/null || ensure_packages "${PACKAGES[@]}"
	ensure_certs
	echo "$CERT_DIR"
}

cmd_render() {
	command -v envsubst >/dev/null || ensure_packages gettext-base
	render -
}

usage() {
	sed -n '2,32p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

cmd="${1:-}"
(($# > 0)) && shift
while (($# > 0)); do
	case "$1" in
	--domain) DOMAIN="${2:?--domain needs a value}"; shift 2 ;;
	--port) PORT="${2:?--port needs a value}"; shift 2 ;;
	--listen) LISTEN="${2:?--listen needs a value}"; shift 2 ;;
	--mode) MODE="${2:?--mode needs a value}"; shift 2 ;;
	--imd-tcp) IMD_TCP="${2:?--imd-tcp needs a value}"; shift 2 ;;
	--imd-http) IMD_HTTP="${2:?--imd-http needs a value}"; shift 2 ;;
	*) usage ;;
	esac
done
[[ -n "$LISTEN" ]] || LISTEN="127.0.0.1:$PORT"
[[ "$MODE" == off || "$MODE" == native ]] || die "mode must be off or native, not '$MODE'"

NGINX_DIR="$STATE_DIR/nginx"
CERT_DIR="$NGINX_DIR/certs"
RUN_DIR="$NGINX_DIR"
CONF="$NGINX_DIR/nginx.conf"
PID_FILE="$NGINX_DIR/nginx.pid"

case "$cmd" in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
certs) cmd_certs ;;
render) cmd_render ;;
*) usage ;;
esac
