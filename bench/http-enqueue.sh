#!/bin/sh
# Enqueue throughput of the HTTP API, next to what the same PostgreSQL does with plain inserts.
#
#   swift build -c release && bench/http-enqueue.sh
#
# Starts a private PostgreSQL (default durability) and `baton serve` on loopback, then measures,
# in this order and on the same cluster:
#   1. pgbench: one-row INSERTs into a plain table, 16 clients (the ceiling for one job per commit);
#   2. wrk: POST /v1/jobs, keep-alive, 16 connections, a one-stage job per request;
#   3. wrk: POST /v1/jobs/batch with 1,000 jobs per request, 4 connections;
#   4. wrk: GET /healthz, 16 connections: no database and a tiny answer, through the same generated
#      server and middlewares: the floor the HTTP stack sets for any operation (docs/benchmarks.md,
#      "The HTTP stack's floor");
#   5. wrk: POST /v1/jobs, 16 connections, a job refused at validation (priority out of range):
#      read and decoded as an enqueue is, answered 400 before the database is asked.
# Each wrk run reports the server's CPU per request and the whole machine's (PostgreSQL's and
# wrk's with it): where the machine is the limit, the second says so.
# No worker runs: jobs pile up, as under a burst. Needs wrk and pgbench (Debian: wrk, postgresql).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
baton=${BATON:-$here/../.build/release/baton}
duration=${DURATION:-20s}
connections=${CONNECTIONS:-16}
# shellcheck disable=SC2012 # version directories only; ls fails loudly when none match, a glob would not
bindir=$(pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | tail -1)
work=$(mktemp -d)
as_postgres=""
if [ "$(id -u)" = 0 ]; then chown postgres "$work"; as_postgres="runuser -u postgres --"; fi
port=$((20000 + $$ % 10000))
api_port=$((port + 1))
cleanup() {
    [ -n "${serve_pid:-}" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
    $as_postgres "$bindir/pg_ctl" -D "$work/data" -m fast stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
$as_postgres "$bindir/initdb" -D "$work/data" -U postgres -A trust >/dev/null
$as_postgres "$bindir/pg_ctl" -D "$work/data" -l "$work/log" -w \
    -o "-p $port -k $work -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
url="postgres://postgres@127.0.0.1:$port/postgres"
psql -q "$url" -c "CREATE TABLE bench_insert (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body jsonb NOT NULL)"
echo "INSERT INTO bench_insert (body) VALUES ('{\"stages\": [{\"task\": \"noop\"}]}');" >"$work/insert.sql"

export BATON_DATABASE_URL="$url" BATON_API_TOKEN=bench-token-0123456789 BATON_LOG_LEVEL="${BATON_LOG_LEVEL:-warning}"
"$baton" migrate >/dev/null
# A worker row serving noop, so that the task check passes as in production (no worker runs).
psql -q "$url" -c "INSERT INTO baton.workers (id, host, pid, queues, tasks) VALUES ('bench', 'bench', 0, '{default}', '{noop}')"
"$baton" serve --port "$api_port" >"$work/serve.log" 2>&1 &
serve_pid=$!
until curl -sf "http://127.0.0.1:$api_port/readyz" >/dev/null; do sleep 0.1; done

echo "== pgbench: one-row INSERT per transaction, $connections clients, $duration"
pgbench -n -f "$work/insert.sql" -c "$connections" -j 2 -T "${duration%s}" "$url" 2>/dev/null | grep -E '^tps'

# The server's CPU time (user + system, in clock ticks) so far: steadier than requests per second
# on a machine whose other load varies.
ticks() { awk '{print $14 + $15}' "/proc/$serve_pid/stat"; }
# The whole machine's busy time (user, nice, system, irq, softirq), in clock ticks: the server's,
# PostgreSQL's and wrk's together, so that what is left besides the server shows.
machine_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
hz=$(getconf CLK_TCK)
run_wrk() { # connections script target [refused: the answers are meant to be 4xx]
    before=$(ticks) machine_before=$(machine_ticks)
    out=$(wrk -t 2 -c "$1" -d "$duration" -s "$here/$2" "http://127.0.0.1:$api_port$3")
    after=$(ticks) machine_after=$(machine_ticks)
    if [ "${4:-}" = refused ]; then
        echo "$out" | grep -E 'Requests/sec|Latency|requests in'
        echo "$out" | grep 'Non-2xx' | awk '{print "  refused, as meant:", $NF}'
    else
        echo "$out" | grep -E 'Requests/sec|Latency|requests in|Non-2xx'
    fi
    requests=$(echo "$out" | grep 'requests in' | awk '{print $1}')
    echo "$before $after $requests $hz $machine_before $machine_after" | awk '{
        printf "  server CPU per request: %.3f ms; the whole machine'"'"'s: %.3f ms\n",
            ($2 - $1) * 1000 / $4 / $3, ($6 - $5) * 1000 / $4 / $3 }'
}

echo "== wrk: POST /v1/jobs, $connections connections, $duration"
run_wrk "$connections" post-job.lua /v1/jobs

echo "== wrk: POST /v1/jobs/batch, 1000 jobs per request, 4 connections, $duration"
run_wrk 4 post-batch.lua /v1/jobs/batch

echo "== wrk: GET /healthz (the HTTP stack's floor), $connections connections, $duration"
run_wrk "$connections" get-healthz.lua /healthz

echo "== wrk: POST /v1/jobs refused at validation (an enqueue before its write), $connections connections, $duration"
run_wrk "$connections" post-invalid.lua /v1/jobs refused
psql -qtA "$url" -c "SELECT 'jobs stored: ' || count(*) FROM baton.jobs"
