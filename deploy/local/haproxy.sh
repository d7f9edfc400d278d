#!/usr/bin/env bash
# HAProxy for the rolling-restart test (e2e/rolling_test.go): Debian's haproxy, installed when
# missing (as root, like services.sh). The test writes its own configuration and runs its own
# instance in the foreground; nothing here starts a daemon.
#
#   haproxy.sh up     install haproxy if missing, print the haproxy binary
#   haproxy.sh path   print the haproxy binary the tests use (fails when missing)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

LOG_TAG=haproxy
# shellcheck source=deploy/local/lib.sh
source "$SCRIPT_DIR/lib.sh"

# Debian installs it under /usr/sbin, which a plain user's PATH may lack.
haproxy_path() {
	local p
	p="$(command -v haproxy || true)"
	[[ -n "$p" ]] || { [[ -x /usr/sbin/haproxy ]] && p=/usr/sbin/haproxy; }
	[[ -n "$p" ]] || return 1
	printf '%s\n' "$p"
}

case "${1:-}" in
up)
	haproxy_path >/dev/null || ensure_packages haproxy
	haproxy_path || die "haproxy not installed after apt-get"
	;;
path)
	haproxy_path || die "haproxy not installed (run: haproxy.sh up)"
	;;
*)
	echo "usage: $0 up|path" >&2
	exit 2
	;;
esac
