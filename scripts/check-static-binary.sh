#!/usr/bin/env bash
# The release binary, built with the static Swift standard library, copied alone into an empty
# directory: it links no Swift library, prints its version, and migrates a fresh PostgreSQL with
# an empty environment (the migrations are inside it). Then an idle `baton worker` of it says how
# much memory it holds (reported, not judged).
#
#   scripts/check-static-binary.sh        (builds it with scripts/build-static.sh, as the image does)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(scripts/build-static.sh)

work=$(mktemp -d)
chmod 755 "$work"
# shellcheck disable=SC2012 # version directories only; ls fails loudly when none match, a glob would not
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

# An idle worker's resident memory (issue 21 aims at under 30 MB): read once it has registered and
# had a few seconds to settle. The binary's pages are dropped from the page cache first, so that it
# starts as a deployed binary does, read from disk: how the file came into the cache (copied, or
# run just now) changes how much the kernel maps around each fault, by up to 2 MB.
python3 -c 'import os, sys; f = os.open(sys.argv[1], os.O_RDONLY); os.fsync(f); os.posix_fadvise(f, 0, 0, os.POSIX_FADV_DONTNEED)' ./baton
env -i BATON_DATABASE_URL="$url" BATON_LOG_LEVEL=warning ./baton worker --queue default:20 &
worker=$!
until [ "$(psql "$url" -Atc "SELECT count(*) FROM baton.workers")" = 1 ]; do
    kill -0 "$worker" || { echo "FAIL: the worker exited" >&2; exit 1; }
    sleep 0.1
done
sleep 3
grep -E '^(VmRSS|RssAnon|RssFile)' "/proc/$worker/status" | tr -s ' \t' ' ' | sed 's/^/idle worker: /'
kill -TERM "$worker"
wait "$worker"
