#!/usr/bin/env bash
# Node.js for the JavaScript SDK's unit tests (clients/js, node --test): Debian's nodejs,
# installed when missing (as root, like services.sh). The SDK itself needs no build step.
#
#   node.sh up     install nodejs if missing, print the node binary
#   node.sh path   print the node binary the tests use (fails when missing)
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

case "${1:-}" in
up)
	node_path >/dev/null || ensure_packages nodejs
	node_path || die "node not on PATH after install"
	;;
path)
	node_path || die "node not installed (run: node.sh up)"
	;;
*)
	echo "usage: $0 up|path" >&2
	exit 2
	;;
esac
