#!/usr/bin/env bash
# Two builds of Baton alternated on one cluster of their own: throughput and CPU, per run.
#
#   bench/compare-cpu.sh BEFORE AFTER [ROUNDS] [-- BENCH ARGUMENTS]
#   e.g. bench/compare-cpu.sh /tmp/baton-bench-before .build/release/baton-bench 3 -- --jobs 100000 --lanes 100
#
# BEFORE and AFTER are `baton-bench` binaries (copy a release build aside before changing it). Each
# round runs `baton-bench --database-url … --concurrency 1000 --pickup-samples 0 --json` with
# BEFORE, then with AFTER (default arguments `--jobs 100000`), against one private PostgreSQL
# (default durability, `pg_stat_statements` loaded). Prints one line of JSON per run: jobs/s
# processed, pickup p50/p99, the CPU seconds (user + system) of `baton-bench` (its producer and
# worker) and of PostgreSQL's processes during the run. On a shared machine jobs/s vary more than
# CPU seconds: compare those.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
before=$1 after=$2
shift 2
rounds=3
if [ $# -gt 0 ] && [ "$1" != "--" ]; then rounds=$1; shift; fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--jobs 100000)

# shellcheck source=bench/cluster.sh
. "$here/cluster.sh"
start_cluster -c max_connections=200 -c shared_preload_libraries=pg_stat_statements
ticks=$(getconf CLK_TCK)

TIMEFORMAT='%U %S'
for _ in $(seq "$rounds"); do
    for build in before after; do
        binary=$before
        [ $build = after ] && binary=$after
        cpu_before=$(cluster_ticks)
        { time "$binary" --database-url "$url" --concurrency 1000 --pickup-samples 0 --json "${args[@]}" \
            >"$work/bench.json" 2>"$work/bench.err"; } 2>"$work/time"
        cpu_after=$(cluster_ticks)
        read -r user system <"$work/time"
        python3 - "$build" "$user" "$system" "$cpu_before" "$cpu_after" "$ticks" "$work/bench.json" <<'PY'
import json, sys
build, user, system, before, after, ticks, path = sys.argv[1:]
report = json.load(open(path))
print(json.dumps({
    "build": build, "process_per_s": round(report["process_per_s"]),
    "pickup_p50_ms": report["pickup_p50_ms"], "pickup_p99_ms": report["pickup_p99_ms"],
    "baton_cpu_s": round(float(user) + float(system), 2),
    "postgres_cpu_s": round((int(after) - int(before)) / int(ticks), 2)}))
PY
    done
done
