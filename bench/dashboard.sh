#!/usr/bin/env bash
# How fast the dashboard's pages answer over a big table: 1,000,000 finished and 100,000 live
# jobs (plus a day of per-minute history for 10 queues and 10 workers), loaded straight into a
# fresh database, then each page asked N times in a row; prints p50, p95 and max per page.
# The finished jobs carry a tenant in their metadata (30 % of them "big", the rest spread over
# t0…t999) and a customer in their args (0…49,999), for the searches by metadata and args.
# usage: bench/dashboard.sh BATON_BINARY [N]   (as root, like bench/outage.sh)
# e.g.   bench/dashboard.sh .build/release/baton 50
set -euo pipefail
B=$1; n=${2:-50}
bindir=$(pg_config --bindir); work=$(mktemp -d); chmod 755 "$work"; chown postgres "$work"
port=$((30000 + RANDOM % 1000)); api=$((port + 1000))
runuser -u postgres -- "$bindir/initdb" -D "$work/data" -U postgres -A trust >/dev/null
runuser -u postgres -- "$bindir/pg_ctl" -D "$work/data" -l "$work/log" -w \
  -o "-p $port -k $work -c shared_buffers=512MB -c max_wal_size=4GB -c fsync=off" start >/dev/null
trap 'kill $serve 2>/dev/null; runuser -u postgres -- $bindir/pg_ctl -D $work/data -m immediate -w stop >/dev/null; rm -rf "$work"' EXIT
url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"; $B migrate --database-url "$url" >/dev/null 2>&1
psql() { command psql -q -X -v ON_ERROR_STOP=1 "$url" "$@"; }
echo "loading 1,100,000 jobs…"
load_start=$(date +%s)
psql <<'SQL'
SET search_path TO baton;
-- 1,000,000 finished: 94 % completed, 5 % discarded (with an error), 1 % cancelled, over the last day.
INSERT INTO jobs (queue, state, run_at, chain, stage_count, attempt, errors, created_at, finished_at, attempted_at,
                  metadata)
SELECT 'queue-' || (i % 10), s.state, t,
       jsonb_build_array(jsonb_build_object('task', 'noop', 'args', jsonb_build_object('customer', i % 50000))), 1, 1,
       CASE WHEN s.state = 'discarded' THEN jsonb_build_array(jsonb_build_object('stage', 0, 'attempt', 1,
            'at', t, 'error', 'HTTP 503 from upstream ' || (i % 97))) ELSE '[]' END, t, t + interval '1 second', t,
       jsonb_build_object('tenant', CASE WHEN i % 10 < 3 THEN 'big' ELSE 't' || (i % 1000) END)
FROM generate_series(1, 1000000) i,
     LATERAL (SELECT now() - (i % 86400) * interval '1 second' AS t) x,
     LATERAL (SELECT (CASE WHEN i % 100 < 94 THEN 'completed' WHEN i % 100 < 99 THEN 'discarded'
                           ELSE 'cancelled' END)::job_state AS state) s;
-- 100,000 live: available in queues no worker serves, scheduled, retrying, waiting in 10,000 lanes.
INSERT INTO jobs (queue, state, run_at, chain, stage_count)
SELECT 'queue-' || (i % 10), 'available', now() - (i % 3600) * interval '1 second', '[{"task":"noop","args":{}}]', 1
FROM generate_series(1, 60000) i;
INSERT INTO jobs (queue, state, run_at, chain, stage_count)
SELECT 'queue-' || (i % 10), 'scheduled', now() + (i % 3600) * interval '1 second', '[{"task":"noop","args":{}}]', 1
FROM generate_series(1, 20000) i;
-- (the first 1,000 of them hold a lane each, and block it)
INSERT INTO jobs (queue, state, run_at, chain, stage_count, attempt, errors, lane)
SELECT 'queue-' || (i % 10), 'retryable', now() + interval '1 hour', '[{"task":"noop","args":{}}]', 1, 1,
       '[{"stage":0,"attempt":1,"at":"2026-01-01T00:00:00Z","error":"timeout"}]',
       CASE WHEN i <= 1000 THEN 'lane-' || i END
FROM generate_series(1, 10000) i;
INSERT INTO jobs (queue, state, run_at, chain, stage_count, lane, lane_ready_at)
SELECT 'queue-' || (i % 10), 'waiting', now(), jsonb_build_array(jsonb_build_object('task', 'noop', 'lane', 'lane-' || (i % 10000))),
       1, 'lane-' || (i % 10000), now() + i * interval '1 microsecond'
FROM generate_series(1, 10000) i;
-- A day of history: 10 queues, every minute.
INSERT INTO queue_minutes (minute, queue, completed, discarded, wait_10ms, wait_25ms, wait_50ms, wait_100ms,
                           wait_250ms, wait_500ms, wait_1s, wait_2500ms, wait_5s, wait_10s)
SELECT date_trunc('minute', now()) - m * interval '1 minute', 'queue-' || q, 600, 30, 100, 100, 100, 100, 100, 50,
       20, 10, 10, 10
FROM generate_series(0, 1439) m, generate_series(0, 9) q;
-- What the enqueue writes for each job (the rows above were not enqueued).
INSERT INTO job_tags (name, value, job_id)
SELECT DISTINCT left(t.name, 120), left(t.value, 200), j.id FROM jobs j CROSS JOIN LATERAL tags_of(j.chain, j.metadata) t;
VACUUM ANALYZE jobs; VACUUM ANALYZE queue_minutes; VACUUM ANALYZE job_tags;
SQL
echo "loaded in $(( $(date +%s) - load_start ))s"
token=dashboard-bench-token-0123456789
BATON_API_TOKEN=$token BATON_LOG_LEVEL=critical $B serve --database-url "$url" --port $api >/dev/null 2>&1 &
serve=$!
until curl -sf "http://127.0.0.1:$api/readyz" >/dev/null; do sleep 0.1; done
jar=$work/cookies
curl -s -o /dev/null -c "$jar" -H "Origin: http://127.0.0.1:$api" --data "token=$token&next=/ui" "http://127.0.0.1:$api/ui/login"
job=$(psql -t -A -c "SELECT max(id) FROM baton.jobs WHERE state = 'discarded'")
printf "%-46s %8s %8s %8s\n" page p50_ms p95_ms max_ms
cursor=$(curl -s -b "$jar" "http://127.0.0.1:$api/ui/lanes" | grep -o 'href="/ui/lanes?cursor=[^"]*"' | cut -d'"' -f2)
for page in "/ui" "/ui?range=day" "/ui/jobs" "/ui/jobs?state=discarded" "/ui/jobs?state=cancelled" \
    "/ui/jobs?queue=queue-3" "/ui/jobs?queue=queue-3&state=available" "/ui/jobs?task=noop" \
    "/ui/jobs?task=missing" "/ui/jobs?state=discarded&error=upstream%2042" "/ui/jobs?error=nowhere" \
    "/ui/jobs?lane=lane-77" "/ui/jobs?lane=lane-77&state=waiting" "/ui/jobs/$job" "/ui/lanes" "$cursor" "/ui/workers" \
    "/ui/jobs?metadata=tenant%3Dbig" "/ui/jobs?metadata=tenant%3Dt7" "/ui/jobs?metadata=tenant%3Dt7&state=discarded" \
    "/ui/jobs?args=customer%3D123" "/ui/jobs?metadata=tenant%3Dnobody" "/v1/jobs?metadata.tenant=t7" \
    "/v1/jobs?metadata.tenant=big&args.customer=123"; do
  for _ in $(seq "$n"); do
    curl -s -o /dev/null -w "%{http_code} %{time_total}\n" -b "$jar" -H "Authorization: Bearer $token" \
      "http://127.0.0.1:$api$page"
  done | sort -k2 -n | awk -v page="$page" '$1 != 200 { bad++ } { t[NR] = $2 * 1000 } END {
      printf "%-46s %8.1f %8.1f %8.1f%s\n", page, t[int((NR + 1) * 0.5)], t[int(NR * 0.95 + 0.5)], t[NR],
             bad ? "  (" bad " not 200)" : "" }'
done
