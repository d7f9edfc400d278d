# Shared by deploy/local/services.sh and deploy/local/nginx.sh, which source it:
# process checks, daemon spawning, Debian package install and the state lock.
# Defines functions only. The sourcing script sets LOG_TAG (the prefix of its log
# lines) first.
# shellcheck shell=bash

log() { printf '%s: %s\n' "$LOG_TAG" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# ---------------------------------------------------------------- processes

# alive PID: true when PID is a live process (not a zombie: a zombie passes kill -0).
alive() {
	local pid="$1" state
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	if [[ -r "/proc/$pid/stat" ]]; then
		# field 3 of /proc/PID/stat, after the parenthesised command name
		state="$(sed -E 's/^[0-9]+ \(.*\) ([A-Za-z]).*/\1/' "/proc/$pid/stat" 2>/dev/null || true)"
		[[ "$state" == Z || "$state" == X ]] && return 1
	fi
	return 0
}

gone() { ! alive "$1"; }

# pid_from_file FILE COMM: print the pid in FILE if that process is alive and its
# command name starts with COMM (a stale pid file may name a reused pid); an empty
# COMM skips that check.
pid_from_file() {
	local f="$1" want="$2" pid comm
	[[ -s "$f" ]] || return 1
	pid="$(tr -dc '0-9' <"$f")"
	alive "$pid" || return 1
	if [[ -n "$want" && -r "/proc/$pid/comm" ]]; then
		comm="$(cat "/proc/$pid/comm" 2>/dev/null || true)"
		[[ "$comm" == "$want"* ]] || return 1
	fi
	printf '%s\n' "$pid"
}

# wait_until SECONDS CMD...: true as soon as CMD succeeds, trying every 0.1s; false
# when it still fails after SECONDS.
wait_until() {
	local tries=$(($1 * 10)) i
	shift
	for ((i = 0; i < tries; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	"$@"
}

# spawn bg|fg NOFILE LOGFILE CMD...: run CMD in a new session with stdin from
# /dev/null, stdout/stderr appended to LOGFILE, its open-file limit set to NOFILE
# and every other inherited fd closed (our lock, and pipes of whoever called us: a
# daemon holding a CI pipe open would keep the CI step from ever finishing). fg
# waits for CMD, e.g. for a server that daemonizes itself. The subshell execs, so
# no bash stays behind holding those fds.
spawn() {
	local mode="$1" nofile="$2" logf="$3"
	shift 3
	if [[ "$mode" == bg ]]; then
		(close_fds; ulimit -n "$nofile" 2>/dev/null || true; exec setsid "$@") </dev/null >>"$logf" 2>&1 &
	else
		(close_fds; ulimit -n "$nofile" 2>/dev/null || true; exec setsid "$@") </dev/null >>"$logf" 2>&1
	fi
}

close_fds() {
	local fd
	# fd names are plain numbers; a glob would list the fd of its own directory handle.
	# shellcheck disable=SC2045
	for fd in $(ls "/proc/$BASHPID/fd"); do
		if ((fd > 2)); then { eval "exec $fd>&-"; } 2>/dev/null || true; fi
	done
}

# lock_dir DIR SECONDS: hold DIR/.lock (on fd 9) until the script exits, so that two
# runs on one state directory take turns.
lock_dir() {
	local dir="$1" seconds="$2"
	mkdir -p "$dir"
	exec 9>"$dir/.lock"
	flock -w "$seconds" 9 || die "could not lock $dir/.lock"
}

# ---------------------------------------------------------------- packages

pkg_installed() {
	[[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

# ensure_packages PACKAGE...: apt-get install the ones missing (as root).
ensure_packages() {
	local missing=() p
	for p in "$@"; do
		pkg_installed "$p" || missing+=("$p")
	done
	((${#missing[@]} == 0)) && return 0

	[[ "$(id -u)" == 0 ]] || die "packages missing (${missing[*]}) and not root: install them with apt-get"
	log "installing ${missing[*]}"

	# Keep Debian from starting the system services (its own MariaDB, Redis, nginx on
	# :80): policy-rc.d exiting 101 forbids invoke-rc.d actions. Restore whatever was
	# there before.
	local policy=/usr/sbin/policy-rc.d backup=""
	if [[ -e "$policy" ]]; then
		backup="$(mktemp /usr/sbin/policy-rc.d.imd-backup.XXXXXX)"
		cp -p "$policy" "$backup"
	fi
	# shellcheck disable=SC2064 # expand now: restore exactly this backup
	trap "restore_policy '$backup'" EXIT
	printf '#!/bin/sh\n# temporary, written by imd deploy/local/%s\nexit 101\n' "${0##*/}" >"$policy"
	chmod 0755 "$policy"

	export DEBIAN_FRONTEND=noninteractive
	local apt_opts=(-o DPkg::Lock::Timeout=300 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
	apt-get "${apt_opts[@]}" update -qq
	apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends "${missing[@]}" </dev/null

	restore_policy "$backup"
	trap - EXIT

	for p in "${missing[@]}"; do
		pkg_installed "$p" || die "package $p did not install"
	done
}

restore_policy() {
	local backup="$1" policy=/usr/sbin/policy-rc.d
	if [[ -n "$backup" && -e "$backup" ]]; then
		mv -f "$backup" "$policy"
	else
		rm -f "$policy"
	fi
}
