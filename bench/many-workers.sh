#!/usr/bin/env bash
# Burn-down with 1, 2, 4 and 8 `baton worker` processes on one database, the same total
# concurrency split between them: does throughput hold as processes are added (no claim
# contention collapse)?
#
#   swift build -c release && bench/many-workers.sh [JOBS] [CONCURRENCY] [PROCESSES...]
#   (defaults: 100000 jobs, 1000 stages at once in all, processes 1 2 4 8)
#
# For each count, on one private cluster (default durability): the queue is paused, JOBS
# single-stage `noop` jobs are enqueued through Baton's `enqueue` function in batches of 1,000,
# the workers start and register, then the queue is resumed (with the wake-up workers listen for)
# and the clock runs until every job is completed. Prints one JSON line per count: jobs per
# second, the transactions PostgreSQL committed per job meanwhile (every client's, the script's
# polls included: a few hundred in all), and the CPU per job of the workers and of PostgreSQL.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
baton=${BATON:-$here/../.build/release/baton}
jobs=${1:-100000}
concurrency=${2:-1000}
counts=(1 2 4 8)
if [ $# -gt 2 ]; then counts=("${@:3}"); fi
pids=()
before_cluster_stops() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
# shellcheck source=bench/cluster.sh
. "$here/cluster.sh"
start_cluster -c max_connections=300
export BATON_DATABASE_URL="$url" BATON_LOG_LEVEL=warning
"$baton" migrate >/dev/null

for processes in "${counts[@]}"; do
    sql "DELETE FROM baton.jobs; DELETE FROM baton.workers"
    sql "VACUUM ANALYZE baton.jobs"
    sql "INSERT INTO baton.paused_queues (queue) VALUES ('default') ON CONFLICT DO NOTHING"
    for _ in $(seq $(( (jobs + 999) / 1000 ))); do
        sql "SELECT count(*) FROM baton.enqueue((SELECT jsonb_agg(jsonb_build_object(
                 'queue', 'default', 'chain', '[{\"task\":\"noop\"}]'::jsonb, 'input', i))
             FROM generate_series(1, 1000) i))" >/dev/null
    done
    total=$(sql "SELECT count(*) FROM baton.jobs")
    pids=()
    for _ in $(seq "$processes"); do
        "$baton" worker --queue "default:$((concurrency / processes))" --retention 1h >>"$work/workers.log" 2>&1 &
        pids+=($!)
    done
    until [ "$(sql "SELECT count(*) FROM baton.workers")" = "$processes" ]; do sleep 0.05; done
    commits_before=$(sql "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
    workers_before=$(process_ticks "${pids[@]}") cluster_before=$(cluster_ticks)
    start=$(date +%s.%N)
    sql "DELETE FROM baton.paused_queues WHERE queue = 'default'; SELECT pg_notify('baton_events', 'q:default')" >/dev/null
    until [ "$(sql "SELECT NOT EXISTS (SELECT 1 FROM baton.jobs WHERE state <> 'completed')")" = t ]; do
        sleep 0.1
    done
    end=$(date +%s.%N)
    workers_after=$(process_ticks "${pids[@]}") cluster_after=$(cluster_ticks)
    commits_after=$(sql "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
    for pid in "${pids[@]}"; do kill -TERM "$pid"; done
    for pid in "${pids[@]}"; do wait "$pid" || true; done
    pids=()
    python3 - "$processes" "$total" "$((concurrency / processes))" "$start" "$end" "$commits_before" "$commits_after" \
        "$workers_before" "$workers_after" "$cluster_before" "$cluster_after" "$(getconf CLK_TCK)" <<'PY'
import json, sys
p, n, c, s, e, c0, c1, w0, w1, pg0, pg1, hz = sys.argv[1:]
n = int(n)
ms_per_job = lambda before, after: round((int(after) - int(before)) / int(hz) * 1000 / n, 4)
print(json.dumps({"processes": int(p), "jobs": n, "concurrency_each": int(c),
    "jobs_per_s": round(n / (float(e) - float(s))), "transactions_per_job": round((int(c1) - int(c0)) / n, 3),
    "baton_cpu_ms_per_job": ms_per_job(w0, w1), "postgres_cpu_ms_per_job": ms_per_job(pg0, pg1)}))
PY
done
