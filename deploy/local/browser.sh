#!/usr/bin/env bash
# Headless browser for the operator console's e2e test: Debian's chromium,
# installed when missing (as root, like services.sh). Nothing is started here; the
# test runs chromium itself through chromedp.
#
#   browser.sh up     install chromium if missing, print its path
#   browser.sh path   print the chromium binary the tests use (fails when missing)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

LOG_TAG=browser
# shellcheck source=deploy/local/lib.sh
source "$SCRIPT_DIR/lib.sh"

chromium_path() {
	local p
	p="$(command -v chromium || true)"
	[[ -n "$p" ]] || return 1
	printf '%s\n' "$p"
}

case "${1:-}" in
up)
	ensure_packages chromium
	chromium_path || die "chromium not on PATH after install"
	;;
path)
	chromium_path || die "chromium not installed (run: browser.sh up)"
	;;
*)
	echo "usage: $0 up|path" >&2
	exit 2
	;;
esac
