#!/usr/bin/env bash
# Node.js for the JavaScript SDK's unit tests (clients/js, node --test) and the e2e tests'
# JavaScript clients: Debian's nodejs (and npm), installed when missing (as root, like
# services.sh). The SDK itself needs no build step. The e2e clients need the ws package, the
# WebSocket of Node 18 (Debian 12's, which has no global one): pinned in
# e2e/testdata/package-lock.json and installed beside it, into the git-ignored node_modules.
#
#   node.sh up     install nodejs if missing, print the node binary
#   node.sh path   print the node binary the tests use (fails when missing)
#   node.sh deps   install npm if missing and, when the lock file is newer than the install,
#                  the e2e packages (npm ci); print their node_modules folder
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

LOG_TAG=node
# shellcheck source=deploy/local/lib.sh
source "$SCRIPT_DIR/lib.sh"

node_path() {
	local p
	p="$(command -v node || command -v nodejs || true)"
	[[ -n "$p" ]] || return 1
	printf '%s\n' "$p"
}

REPO_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
E2E_JS="$REPO_ROOT/e2e/testdata"

# e2e_deps runs npm ci when node_modules is missing or older than the lock file.
e2e_deps() {
	command -v npm >/dev/null || ensure_packages npm
	command -v npm >/dev/null || die "npm not on PATH after install"
	local installed="$E2E_JS/node_modules/.package-lock.json"
	if [[ ! -e "$installed" || "$E2E_JS/package-lock.json" -nt "$installed" ]]; then
		log "npm ci in e2e/testdata"
		npm ci --prefix "$E2E_JS" --no-audit --no-fund >&2 || die "npm ci in $E2E_JS failed"
	fi
	printf '%s\n' "$E2E_JS/node_modules"
}

case "${1:-}" in
up)
	node_path >/dev/null || ensure_packages nodejs
	node_path || die "node not on PATH after install"
	;;
path)
	node_path || die "node not installed (run: node.sh up)"
	;;
deps)
	node_path >/dev/null || die "node not installed (run: node.sh up)"
	e2e_deps
	;;
*)
	echo "usage: $0 up|path|deps" >&2
	exit 2
	;;
esac
