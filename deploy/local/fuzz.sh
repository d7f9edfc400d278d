#!/usr/bin/env bash
# Run Go fuzz targets one after another.
#
#   fuzz.sh [-q] FUZZTIME TARGET...
#
# TARGET is <package dir>:<FuzzName>, e.g. ./clients/go/frame:FuzzDecode. go test runs in
# the package dir, so a package of a nested module (the Go SDK, clients/go) fuzzes too.
# A target whose package does not exist yet is skipped with a message; a package
# that exists without the named fuzz test is a failure. With -q the go test
# output goes to <state dir>/fuzz/<FuzzName>.log and only one line per target is
# printed (the whole log on failure). Crashers are written by go test to
# <package>/testdata/fuzz/<FuzzName>/: commit them, they become regression tests.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
cd "$REPO_ROOT"

quiet=0
if [[ "${1:-}" == -q ]]; then
	quiet=1
	shift
fi
(($# >= 1)) || { echo "usage: fuzz.sh [-q] FUZZTIME TARGET..." >&2; exit 2; }
fuzztime="$1"
shift

logdir="${IMD_STATE_DIR:-$REPO_ROOT/.run}/fuzz"
mkdir -p "$logdir"

# files counts what go test wrote to a target's crasher directory.
files() { if [[ -d "$1" ]]; then find "$1" -type f | wc -l; else echo 0; fi; }

rc=0
for target in "$@"; do
	pkg="${target%%:*}"
	name="${target##*:}"
	if [[ "$pkg" == "$target" || -z "$pkg" || ! "$name" =~ ^Fuzz[A-Za-z0-9_]*$ ]]; then
		echo "fuzz: FAIL bad target '$target' (want ./pkg/dir:FuzzName)"
		rc=1
		continue
	fi
	if ! compgen -G "$pkg/*.go" >/dev/null; then
		echo "fuzz: skip $name: package $pkg does not exist yet"
		continue
	fi
	log="$logdir/$name.log"
	cmd=(go -C "$pkg" test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" .)
	echo "fuzz: ${cmd[*]}"
	crashers="$pkg/testdata/fuzz/$name"
	for attempt in 1 2; do
		before="$(files "$crashers")"
		status=0
		if ((quiet)); then
			"${cmd[@]}" >"$log" 2>&1 || status=$?
		else
			"${cmd[@]}" 2>&1 | tee "$log" || status=$?
		fi
		# Go's fuzz coordinator (go.dev/issue/75804, unfixed in Go 1.26) can fail a target at
		# the end of -fuzztime with "context deadline exceeded" although nothing failed: no
		# crasher is written then. Such a run is repeated once; any other failure stands.
		if ((status == 0)) || ((attempt == 2)) || ! grep -qx '    context deadline exceeded' "$log" ||
			(($(files "$crashers") != before)); then
			break
		fi
		echo "fuzz: $name ended with Go's fuzztime deadline race and no crasher; once more"
	done
	if ((status == 0)) && grep -q 'no fuzz tests to fuzz' "$log"; then
		((quiet)) && cat "$log"
		echo "fuzz: FAIL $name: package $pkg has no fuzz test $name"
		rc=1
	elif ((status == 0)); then
		execs="$(grep -o 'execs: [0-9]*' "$log" | tail -n 1 || true)"
		echo "fuzz: ok $name $pkg (${fuzztime}${execs:+, $execs})"
	else
		((quiet)) && cat "$log"
		echo "fuzz: FAIL $name $pkg (exit $status; log $log)"
		rc=1
	fi
done
exit "$rc"
