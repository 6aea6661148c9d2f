#!/bin/bash
# Issue 49's trickle against the machine's own bound: one `baton-bench` burn-down with a trickle
# (`--fair-keys 1 --trickle 10`) while pgbench probes, 20 times a second each, a plain round trip
# (`SELECT 1`) and a committing one (a one-row UPDATE, as a claim commits); prints each probe's
# p50/p99 during the burn-down (the seconds in which claims or flushes are running) and outside it,
# beside the bench's own pickup figures. A pickup needs at least one commit, so the committing
# probe's p99 under the same load is what no claim beats.
#
#   swift build -c release --product baton-bench
#   bench/trickle-bound.sh postgres://postgres@127.0.0.1:5432/postgres [.build/release/baton-bench]
#
# The database: a PostgreSQL of your own (the bench works in a schema it drops afterwards); psql
# and pgbench on PATH.
set -euo pipefail
url=${1:?a database URL}
bench=${2:-.build/release/baton-bench}
logs=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$logs"' EXIT
psql "$url" -qc "CREATE TABLE IF NOT EXISTS baton_probe (id int PRIMARY KEY, n bigint);
                 INSERT INTO baton_probe VALUES (1, 0) ON CONFLICT DO NOTHING;"
echo "SELECT 1;" >"$logs/probe-select.sql"
echo "UPDATE baton_probe SET n = n + 1 WHERE id = 1;" >"$logs/probe-update.sql"
(while true; do
    busy=$(psql "$url" -Atc "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid()
        AND state = 'active' AND (query LIKE '%claim_committed%' OR query LIKE '%apply_outcomes_committed%')")
    if [ "${busy:-0}" -gt 0 ]; then date +%s.%N >>"$logs/busy"; fi
    sleep 0.2
done) &
pgbench -n -f "$logs/probe-select.sql" -R 20 -T 90 -l --log-prefix="$logs/select" "$url" >/dev/null 2>&1 &
select=$!
pgbench -n -f "$logs/probe-update.sql" -R 20 -T 90 -l --log-prefix="$logs/update" "$url" >/dev/null 2>&1 &
update=$!
"$bench" --database-url "$url" --jobs 200000 --fair-keys 1 --trickle 10 --pickup-samples 200 | grep -E "process|pickup|trickle"
wait $select $update
python3 - "$logs" <<'PY'
import glob, sys
logs = sys.argv[1]
seen = [float(line) for line in open(f"{logs}/busy")]
# The burn-down: the longest stretch of busy samples less than a second apart.
stretches, start, previous = [], seen[0], seen[0]
for t in seen[1:]:
    if t - previous > 1.0:
        stretches.append((start, previous))
        start = t
    previous = t
stretches.append((start, previous))
a, b = max(stretches, key=lambda s: s[1] - s[0])
print(f"  burn-down   {b - a:.1f} s")
for probe in ("select", "update"):
    during, outside = [], []
    for name in glob.glob(f"{logs}/{probe}.*"):
        for line in open(name):
            fields = line.split()
            at = int(fields[4]) + int(fields[5]) / 1e6
            (during if a <= at <= b else outside).append(int(fields[2]) / 1000)
    for label, values in (("during", during), ("outside", outside)):
        values.sort()
        if values:
            p50, p99 = values[len(values) // 2], values[max(0, int(len(values) * 0.99) - 1)]
            print(f"  {probe:6} {label:7} p50 {p50:.2f} ms   p99 {p99:.2f} ms   ({len(values)} probes)")
PY
