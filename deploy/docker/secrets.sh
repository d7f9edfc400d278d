#!/usr/bin/env bash
# secrets.sh: create the secret files deploy/compose.yaml mounts (deploy/secrets/, mode 600),
# random and long, keeping any that exist. imd_mysql_dsn embeds mysql_password, so rotate
# both together (README "Operating imd").
set -euo pipefail
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/secrets"
mkdir -p "$dir"
chmod 700 "$dir"
umask 077
# Hex: safe inside a DSN; no trailing newline, so no reader has to trim one.
random() { printf %s "$(openssl rand -hex 32)"; }
for name in imd_admin_key imd_token_secret mysql_root_password mysql_password grafana_admin_password; do
	[[ -s "$dir/$name" ]] || random >"$dir/$name"
done
[[ -s "$dir/imd_mysql_dsn" ]] ||
	printf 'imd:%s@tcp(mysql:3306)/?parseTime=true&multiStatements=true' "$(cat "$dir/mysql_password")" >"$dir/imd_mysql_dsn"
echo "secrets in $dir"
