#!/usr/bin/env bash
# Writes deploy/baton.order, the order in which scripts/build-static.sh lays out the binary's
# functions: those an idle `baton worker` runs (start-up, registration, heartbeats, polls) first,
# then those it adds running 300 two-stage chains (claims, stages, hops, outcomes). Whatever runs
# together then sits together, and the kernel maps (64 KB around each fault) little that does not
# run. Run it again after changes that move a lot of code; a function missing from the list only
# lands after the listed ones.
#
#   scripts/link-order.sh          (needs valgrind; builds with scripts/build-static.sh)
#
# Each run is watched by valgrind's callgrind, which names every function that ran, on a private
# PostgreSQL reached over TLS. Valgrind cannot read the DWARF that Swift 6.3 writes, so it watches
# a copy without debug information (the symbol table is what names the functions).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command -v valgrind >/dev/null || { echo "link-order.sh needs valgrind (apt-get install valgrind)" >&2; exit 1; }
bin=$("$root/scripts/build-static.sh")
# shellcheck source=bench/cluster.sh
. "$root/bench/cluster.sh"
# With TLS, as most databases are reached: the connection's handshake is code a worker runs too.
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 2 \
    -keyout "$work/server.key" -out "$work/server.crt" 2>/dev/null
chmod 600 "$work/server.key"
if [ "$(id -u)" = 0 ]; then chown postgres "$work/server.key" "$work/server.crt"; fi
start_cluster -c ssl=on -c "ssl_cert_file=$work/server.crt" -c "ssl_key_file=$work/server.key"
url=${url%%\?*} # sslmode prefer, the default: TLS, since the server offers it
strip --strip-debug -o "$work/baton" "$bin"
"$work/baton" migrate --database-url "$url" --log-level warning

# ran NAME SECONDS ARGUMENTS…: the functions `baton ARGUMENTS…` ran (stopped by SIGINT after
# SECONDS, as a terminal stops it), mangled, once each, in the order callgrind names them.
ran() {
    local name=$1 seconds=$2
    shift 2
    timeout -s INT "$seconds" valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/$name.cg" \
        "$work/baton" "$@" >"$work/$name.log" 2>&1 || true
    grep -E '^c?fn=\([0-9]+\) ' "$work/$name.cg" | sed -E 's/^c?fn=\([0-9]+\) //'
}
nm --defined-only "$bin" | awk '{print $3}' | sort -u >"$work/defined"
# 300 two-stage chains of no-ops, enqueued through the schema's own function for the second run.
jobs=$(printf '{"chain": [{"task": "noop"}, {"task": "noop"}], "input": %s},' $(seq 300))
{
    ran idle 45 worker --database-url "$url" --log-level warning
    psql -q "$url" -c "SELECT count(*) FROM baton.enqueue('[${jobs%,}]'::jsonb)" >/dev/null
    ran working 45 worker --database-url "$url" --log-level warning --concurrency 50
} | awk 'NR == FNR { defined[$0] = 1; next } ($0 in defined) && !seen[$0]++' "$work/defined" - \
    >"$root/deploy/baton.order"
echo "deploy/baton.order: $(wc -l <"$root/deploy/baton.order") functions"
