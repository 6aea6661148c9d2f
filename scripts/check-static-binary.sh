#!/usr/bin/env bash
# The release binary, built with the static Swift standard library, copied alone into an empty
# directory: it links no Swift library, prints its version, and migrates a fresh PostgreSQL with
# an empty environment (the migrations are inside it).
#
#   scripts/check-static-binary.sh        (builds `swift build -c release --static-swift-stdlib`)
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product baton --static-swift-stdlib >&2
bin="$(swift build -c release --show-bin-path)/baton"

work=$(mktemp -d)
chmod 755 "$work"
pgbin=$(pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
    as_postgres "$pgbin/pg_ctl" -D "$work/pgdata" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

mkdir "$work/bin"
cp "$bin" "$work/bin/baton"
echo "binary: $(du -h "$work/bin/baton" | cut -f1), $(ldd "$work/bin/baton" | wc -l) shared libraries:"
ldd "$work/bin/baton" | sed 's/^/  /'
if ldd "$work/bin/baton" | grep -E 'libswift|libFoundation|libdispatch|libBlocksRuntime'; then
    echo "FAIL: the binary links Swift libraries dynamically" >&2
    exit 1
fi

cd "$work/bin"
version=$(env -i ./baton --version)
echo "baton --version: $version"

mkdir "$work/pgdata" "$work/socket"
if [ "$(id -u)" = 0 ]; then chown postgres "$work/pgdata" "$work/socket"; fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_postgres "$pgbin/initdb" -D "$work/pgdata" -U baton --auth=trust >/dev/null
as_postgres "$pgbin/pg_ctl" -D "$work/pgdata" -w -l "$work/pgdata/log" \
    -o "-p $port -k $work/socket -c listen_addresses=127.0.0.1" start >/dev/null
url="postgres://baton@127.0.0.1:$port/postgres?sslmode=disable"

env -i BATON_DATABASE_URL="$url" ./baton migrate
env -i BATON_DATABASE_URL="$url" ./baton migrate
applied=$(psql "$url" -Atc "SELECT count(*) FROM baton.migrations")
echo "migrations recorded in baton.migrations: $applied"
[ "$applied" -ge 1 ]
echo "ok: the static binary runs and migrates with nothing else copied"
