#!/bin/sh
# render.sh TEMPLATE OUT|-   fill deploy/nginx/imd.conf.template from the environment.
#
# The one renderer of the one template: deploy/local/nginx.sh (local runs, e2e tests) and
# the nginx service of deploy/compose.yaml both call it. POSIX sh + envsubst, so it runs
# on Debian (gettext-base) and in the official nginx images (which ship envsubst).
#
# Environment (all required unless a default is given):
#   MODE           off | native (default off): how im.<DOMAIN> reaches imd
#                    off    - Nginx terminates TLS on IM_HOP, imd gets PROXY + frames
#                    native - Nginx passes the TLS through, imd gets PROXY + TLS
#   DOMAIN         serves im.DOMAIN and api.DOMAIN
#   LISTEN         public stream listener: port, or addr:port (e.g. 443, 127.0.0.1:8443)
#   IMD_TCP        imd's TCP listener: host:port or unix:/path; several nodes comma-separated
#   IMD_HTTP       imd's HTTP listener: host:port; several nodes comma-separated (the order
#                  of IMD_TCP's), each a server of one upstream (go tool task run NODES=3)
#   API_HOP        loopback addr:port of the TLS-terminating HTTP server for api.DOMAIN
#   IM_HOP         loopback addr:port of the TLS-terminating stream hop (used in mode off)
#   SINK_HOP       loopback addr:port of the ssl_reject_handshake sink for unknown SNI
#   CERT_DIR       holds im.crt im.key api.crt api.key (PEM)
#   RUN_DIR        pid file and temp files (must exist, writable)
#   LOG_DIR        error.log and access.log
#   NGINX_MODULES  load_module lines; default: the stream module when this machine's nginx
#                  has it as a dynamic module (Debian), nothing when it is built in
#
# The hops must be TCP on loopback: set_real_ip_from trusts 127.0.0.1/::1 only, and the
# PROXY header Nginx writes toward imd names the hop's own address as destination.
# shellcheck disable=SC2016 # envsubst and the leftover check want ${NAME} literally
set -eu

die() { echo "render.sh: $*" >&2; exit 1; }

[ $# -eq 2 ] || die "usage: render.sh TEMPLATE OUT|-"
template=$1 out=$2
[ -r "$template" ] || die "cannot read template $template"
command -v envsubst >/dev/null 2>&1 || die "envsubst not found (Debian: apt-get install gettext-base)"

MODE=${MODE:-off}
case "$MODE" in
off) IM_UPSTREAM=im_tls_hop ;;
native) IM_UPSTREAM=imd_tcp ;;
*) die "MODE must be off or native, not '$MODE'" ;;
esac

if [ -z "${NGINX_MODULES+set}" ]; then
	NGINX_MODULES=""
	if command -v nginx >/dev/null 2>&1; then
		build=$(nginx -V 2>&1 || true)
		case "$build" in
		*--with-stream=dynamic*)
			moddir=$(printf '%s\n' "$build" | tr ' ' '\n' | sed -n 's/^--modules-path=//p')
			[ -n "$moddir" ] || moddir=/usr/lib/nginx/modules
			NGINX_MODULES="load_module $moddir/ngx_stream_module.so;"
			;;
		esac
	fi
fi

# Values land in the config verbatim: refuse anything that could end a directive.
check() {
	name=$1 pattern=$2
	eval "value=\${$name:-}"
	[ -n "$value" ] || die "$name is required"
	printf '%s' "$value" | grep -Eqx -- "$pattern" || die "$name='$value' is not valid"
}
check DOMAIN '[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?'
check LISTEN '([0-9]+|[0-9.]+:[0-9]+|\[[0-9A-Fa-f:]+\]:[0-9]+)'
tcp_addr='(unix:/[^ ;{},]+|[A-Za-z0-9.:_-]+:[0-9]+|\[[0-9A-Fa-f:]+\]:[0-9]+)'
http_addr='([A-Za-z0-9.:_-]+:[0-9]+|\[[0-9A-Fa-f:]+\]:[0-9]+)'
check IMD_TCP "$tcp_addr(,$tcp_addr)*"
check IMD_HTTP "$http_addr(,$http_addr)*"
check API_HOP '(127\.[0-9.]+|\[::1\]):[0-9]+'
check IM_HOP '(127\.[0-9.]+|\[::1\]):[0-9]+'
check SINK_HOP '(127\.[0-9.]+|\[::1\]):[0-9]+'
check CERT_DIR '/[^ ;{}]*'
check RUN_DIR '/[^ ;{}]*'
check LOG_DIR '/[^ ;{}]*'
# servers LIST: one upstream server line per comma-separated address.
servers() { printf '%s\n' "$1" | tr ',' '\n' | sed 's/.*/server &;/' | tr '\n' ' '; }
IMD_TCP_SERVERS=$(servers "$IMD_TCP")
IMD_HTTP_SERVERS=$(servers "$IMD_HTTP")

case "$NGINX_MODULES" in *'{'* | *'}'*) die "NGINX_MODULES may hold load_module lines only" ;; esac

export MODE DOMAIN LISTEN IMD_TCP IMD_HTTP IMD_TCP_SERVERS IMD_HTTP_SERVERS API_HOP IM_HOP SINK_HOP CERT_DIR RUN_DIR LOG_DIR NGINX_MODULES IM_UPSTREAM
vars='${NGINX_MODULES} ${RUN_DIR} ${LOG_DIR} ${LISTEN} ${DOMAIN} ${CERT_DIR} ${IM_UPSTREAM} ${API_HOP} ${IM_HOP} ${SINK_HOP} ${IMD_TCP} ${IMD_HTTP} ${IMD_TCP_SERVERS} ${IMD_HTTP_SERVERS}'

if [ "$out" = - ]; then
	rendered=$(envsubst "$vars" <"$template")
	printf '%s\n' "$rendered" | grep -n '\${' >&2 && die "unknown variables left in $template"
	printf '%s\n' "$rendered"
else
	tmp="$out.tmp.$$"
	envsubst "$vars" <"$template" >"$tmp"
	if grep -n '\${' "$tmp" >&2; then
		rm -f "$tmp"
		die "unknown variables left in $template"
	fi
	mv -f "$tmp" "$out"
fi
