#!/usr/bin/env bash
# run-nodes.sh N CONFIG: N imd processes of one deployment (issue 31, "on one node or
# three"; DESIGN §11) behind the local Nginx, for `go tool task run NODES=3`.
#
# Each node runs CONFIG with its own node_id (1..N), HTTP listener 127.0.0.1:808<i> and TCP
# listener 127.0.0.1:900<i> (PROXY headers on, as behind Nginx in production); they share the
# tenant's MariaDB and Redis, as the e2e multi-node tests' nodes do (e2e/nodes_test.go).
# deploy/local/nginx.sh fronts them all: each connection and request goes to one of them, so
# two browser windows usually land on different nodes. Ctrl-C stops the nodes and Nginx.
#
# Environment: IMD_NGINX_PORT (default 8443, so no root is needed), IMD_STATE_DIR as for
# nginx.sh, and every IMD_* override imd reads (applied to every node).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
LOG_TAG=run-nodes
# shellcheck source=deploy/local/lib.sh
source "$SCRIPT_DIR/lib.sh"

NODES="${1:?usage: run-nodes.sh N CONFIG}"
CONFIG="${2:?usage: run-nodes.sh N CONFIG}"
[[ "$NODES" =~ ^[1-9]$ ]] || die "N must be 1 to 9, not '$NODES'"
export IMD_NGINX_PORT="${IMD_NGINX_PORT:-8443}"
export IMD_NGINX_DOMAIN="${IMD_NGINX_DOMAIN:-imd.localhost}"
STATE_DIR="${IMD_STATE_DIR:-$REPO_ROOT/.run}"
mkdir -p "$STATE_DIR/nodes"

tcp="" http="" pids=()
for i in $(seq 1 "$NODES"); do
	tcp+="${tcp:+,}127.0.0.1:900$i"
	http+="${http:+,}127.0.0.1:808$i"
done

stop() {
	trap - INT TERM EXIT
	log "stopping ${#pids[@]} nodes"
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	IMD_STATE_DIR="$STATE_DIR" "$SCRIPT_DIR/nginx.sh" down || true
}
trap stop EXIT
trap 'stop; exit 130' INT TERM

for i in $(seq 1 "$NODES"); do
	# The first node creates and migrates the tenant databases; the others start after it is
	# ready, as a rolling deploy does.
	IMD_NODE_ID="$i" IMD_HTTP_ADDR="127.0.0.1:808$i" IMD_TCP_ADDR="127.0.0.1:900$i" IMD_TCP_PROXY_PROTOCOL=true \
		"$REPO_ROOT/bin/imd" --config "$CONFIG" >"$STATE_DIR/nodes/imd-$i.log" 2>&1 &
	pids+=("$!")
	wait_until 60 curl -fs -o /dev/null "http://127.0.0.1:808$i/readyz" ||
		die "node $i is not ready after 60 s (log: $STATE_DIR/nodes/imd-$i.log)"
	log "node $i ready: http://127.0.0.1:808$i/chat/ (log: $STATE_DIR/nodes/imd-$i.log)"
done

IMD_STATE_DIR="$STATE_DIR" IMD_NGINX_IMD_TCP="$tcp" IMD_NGINX_IMD_HTTP="$http" "$SCRIPT_DIR/nginx.sh" up
cat <<INFO
imd: $NODES nodes behind Nginx on 127.0.0.1:$IMD_NGINX_PORT
  web chat  https://api.$IMD_NGINX_DOMAIN:$IMD_NGINX_PORT/chat/  (the throwaway CA: $STATE_DIR/nginx/certs/ca.crt;
            or open one node directly: http://127.0.0.1:8081/chat/ and http://127.0.0.1:8082/chat/)
  frames    im.$IMD_NGINX_DOMAIN:$IMD_NGINX_PORT (TLS)
Ctrl-C stops the nodes and Nginx; MariaDB and Redis keep running.
INFO
# Any node that ends ends the run: a half-deployment would hide the fault.
wait -n "${pids[@]}" || true
log "a node exited; see $STATE_DIR/nodes/"
