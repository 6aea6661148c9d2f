#!/usr/bin/env bash
# How long a bulk retry of N discarded jobs takes (POST /v1/jobs/bulk through `baton jobs retry`),
# on a fresh cluster holding them (a tenth of them laned, over 1,000 lanes) among 10 × N completed
# jobs, and then a bulk cancel of the same N, now unfinished (`baton jobs cancel`). Prints the dry
# run's, the retry's and the cancel's wall-clock times.
# usage: bench/bulk-retry.sh BATON_BINARY [N]   (as root, like bench/dashboard.sh)
# e.g.   bench/bulk-retry.sh .build/release/baton 100000
set -euo pipefail
B=$1; n=${2:-100000}
bindir=$(pg_config --bindir); work=$(mktemp -d); chmod 755 "$work"; chown postgres "$work"
port=$((30000 + RANDOM % 1000)); api=$((port + 1000))
runuser -u postgres -- "$bindir/initdb" -D "$work/data" -U postgres -A trust >/dev/null
runuser -u postgres -- "$bindir/pg_ctl" -D "$work/data" -l "$work/log" -w -o "-p $port -k $work -c shared_buffers=512MB -c max_wal_size=4GB" start >/dev/null
trap 'kill $serve 2>/dev/null; runuser -u postgres -- $bindir/pg_ctl -D $work/data -m immediate -w stop >/dev/null; rm -rf "$work"' EXIT
url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"; $B migrate --database-url "$url" >/dev/null 2>&1
psql -q -X -v ON_ERROR_STOP=1 "$url" <<SQL
SET search_path TO baton;
INSERT INTO jobs (queue, state, run_at, chain, stage_count, attempt, created_at, finished_at)
SELECT 'billing', 'completed', now(), '[{"task":"noop","args":{}}]', 1, 1, now(), now()
FROM generate_series(1, 10 * $n) i;
INSERT INTO jobs (queue, state, run_at, chain, stage_count, attempt, errors, created_at, finished_at, lane)
SELECT 'billing', 'discarded', now(), CASE WHEN i % 10 = 0 THEN jsonb_build_array(jsonb_build_object('task', 'noop', 'lane', 'lane-' || (i % 1000)))
       ELSE '[{"task":"noop","args":{}}]' END, 1, 3,
       '[{"stage":0,"attempt":3,"at":"2026-01-01T00:00:00Z","error":"HTTP 503 from upstream"}]', now(), now(),
       CASE WHEN i % 10 = 0 THEN 'lane-' || (i % 1000) END
FROM generate_series(1, $n) i;
VACUUM ANALYZE jobs;
SQL
token=bulk-bench-token-0123456789
BATON_API_TOKEN=$token BATON_LOG_LEVEL=critical $B serve --database-url "$url" --port $api >/dev/null 2>&1 &
serve=$!
until curl -sf "http://127.0.0.1:$api/readyz" >/dev/null; do sleep 0.1; done
export BATON_URL=http://127.0.0.1:$api BATON_TOKEN=$token
start=$(date +%s.%N); $B jobs retry --state discarded --queue billing --dry-run >"$work/dry.txt"; dry=$(date +%s.%N); head -1 "$work/dry.txt"
$B jobs retry --state discarded --queue billing; done=$(date +%s.%N)
echo "dry run $(echo "$dry - $start" | bc) s; retry $(echo "$done - $dry" | bc) s"
psql -q -X -t -A "$url" -c "SELECT state, count(*) FROM baton.jobs WHERE queue = 'billing' GROUP BY state ORDER BY 1"
$B jobs cancel --state available,waiting --queue billing >/dev/null; cancelled=$(date +%s.%N)
echo "cancel $(echo "$cancelled - $done" | bc) s"
psql -q -X -t -A "$url" -c "SELECT state, count(*) FROM baton.jobs WHERE queue = 'billing' GROUP BY state ORDER BY 1"
