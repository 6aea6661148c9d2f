#!/usr/bin/env bash
# What PostgreSQL alone does for Baton's work on this machine, and Baton as a fraction of it.
#
#   swift build -c release --product baton-bench && bench/ceiling.sh [JOBS] [BATCH]        (defaults 100000 and 300)
#
# On one private cluster (default durability), one after the other:
#   1. the ceiling: JOBS bare rows inserted in bulk (then vacuumed) into a table shaped like the hot part of
#      Baton's (state, queue, priority, run_at, a jsonb payload, a partial index on what is
#      available), then claimed and completed by 2 pgbench clients in batches of BATCH, each
#      batch two transactions as in Baton (a claim with FOR UPDATE SKIP LOCKED, then completing
#      what this client holds); no Baton;
#   2. Baton: `baton-bench --jobs JOBS --concurrency 1000 --pickup-samples 0` against the same
#      cluster, with the CPU (user + system) its process used.
# Prints one JSON object: both rates, the fraction, Baton's CPU per job (its producer and worker
# in one process), and PostgreSQL's WAL bytes per job for each (Baton's: enqueue and run).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench=${BATON_BENCH:-$here/../.build/release/baton-bench}
jobs=${1:-100000}
batch=${2:-300}
# shellcheck source=bench/cluster.sh
. "$here/cluster.sh"
start_cluster -c max_connections=200 -c shared_preload_libraries=pg_stat_statements
wal() { sql "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn"; }

sql "CREATE TABLE ceiling_jobs (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    state text NOT NULL DEFAULT 'available', queue text NOT NULL DEFAULT 'default',
    priority smallint NOT NULL DEFAULT 0, run_at timestamptz NOT NULL DEFAULT now(),
    worker int, attempted_at timestamptz, finished_at timestamptz,
    chain jsonb NOT NULL, output jsonb)"
sql "CREATE INDEX ceiling_available ON ceiling_jobs (queue, priority, run_at, id) WHERE state = 'available'"
# What a client holds, found by its index as Baton finds outcomes by id.
sql "CREATE INDEX ceiling_running ON ceiling_jobs (worker) WHERE state = 'running'"
cat >"$work/claim.sql" <<SQL
UPDATE ceiling_jobs j SET state = 'running', worker = :client_id, attempted_at = now()
FROM (SELECT id FROM ceiling_jobs WHERE state = 'available' AND queue = 'default'
      ORDER BY priority, run_at, id LIMIT $batch FOR UPDATE SKIP LOCKED) c
WHERE j.id = c.id;
UPDATE ceiling_jobs SET state = 'completed', finished_at = now(), output = 'null'
WHERE state = 'running' AND worker = :client_id;
SQL

wal_before=$(wal)
start=$(date +%s.%N)
sql "INSERT INTO ceiling_jobs (chain) SELECT '[{\"task\":\"bench\"}]' FROM generate_series(1, $jobs)"
# Vacuumed and analysed before the claims (hint bits set, the visibility map and statistics
# current), which roughly triples the claims' rate here: the best case, so Baton's fraction of
# it errs low (its own bench claims rows as freshly enqueued).
sql "VACUUM ANALYZE ceiling_jobs"
inserted=$(date +%s.%N)
per_client=$(( (jobs + 2 * batch - 1) / (2 * batch) ))
pgbench -n -c 2 -j 2 -t "$per_client" -f "$work/claim.sql" "$url" >"$work/pgbench.log" 2>&1
done_at=$(date +%s.%N)
wal_after=$(wal)
left=$(sql "SELECT count(*) FROM ceiling_jobs WHERE state <> 'completed'")
[ "$left" = 0 ] || { echo "the ceiling run left $left jobs unfinished" >&2; exit 1; }

TIMEFORMAT='%R %U %S'
baton_wal_before=$(wal)
{ time "$bench" --database-url "$url" --jobs "$jobs" --concurrency 1000 --pickup-samples 0 --json \
    >"$work/baton.json" 2>"$work/baton.err"; } 2>"$work/time"
read -r _ user system <"$work/time"
baton_wal_after=$(wal)

python3 - "$jobs" "$start" "$inserted" "$done_at" "$wal_before" "$wal_after" "$user" "$system" "$baton_wal_before" "$baton_wal_after" "$work/baton.json" <<'PY'
import json, sys
jobs, start, inserted, done, wal0, wal1, user, system, bwal0, bwal1 = (float(x) for x in sys.argv[1:11])
baton = json.load(open(sys.argv[11]))
ceiling = jobs / (done - inserted)
print(json.dumps({
    "jobs": int(jobs),
    "ceiling_insert_per_s": round(jobs / (inserted - start)),
    "ceiling_claim_complete_per_s": round(ceiling),
    "ceiling_wal_bytes_per_job": round((wal1 - wal0) / jobs),
    "baton_enqueue_per_s": round(baton["enqueue_per_s"]),
    "baton_process_per_s": round(baton["process_per_s"]),
    "baton_fraction_of_ceiling": round(baton["process_per_s"] / ceiling, 3),
    "baton_cpu_ms_per_job": round((user + system) * 1000 / jobs, 4),
    "baton_wal_bytes_per_job": round((bwal1 - bwal0) / jobs),
    "baton_statements_per_job": baton.get("statements_per_job"),
}))
PY
