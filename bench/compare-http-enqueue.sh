#!/bin/sh
# Two baton binaries' HTTP enqueue throughput, alternated in one run: each round runs
# bench/http-enqueue.sh once with OLD and once with NEW (each on a fresh cluster, pgbench first),
# and prints the requests per second of each part, the HTTP stack's floor (`GET /healthz`) and an
# enqueue refused before its write among them.
#
#   bench/compare-http-enqueue.sh OLD_BATON NEW_BATON [ROUNDS]      (default 2 rounds, DURATION=10s)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
old=$1
new=$2
rounds=${3:-2}
export DURATION="${DURATION:-10s}"
for round in $(seq "$rounds"); do
    for side in old new; do
        if [ "$side" = old ]; then binary=$old; else binary=$new; fi
        out=$(BATON="$binary" "$here/http-enqueue.sh")
        tps=$(echo "$out" | grep -E '^tps' | head -1 | awk '{print $3}')
        # The wrk parts, in http-enqueue.sh's order: one job a request, batches, the floor, refused.
        rate() { echo "$out" | grep 'Requests/sec' | sed -n "$1p" | awk '{print $2}'; }
        cpu() { echo "$out" | grep 'server CPU' | sed -n "$1p" | awk '{print $5}'; }
        single=$(rate 1) single_cpu=$(cpu 1) batch=$(rate 2) batch_cpu=$(cpu 2)
        floor=$(rate 3) floor_cpu=$(cpu 3) refused=$(rate 4) refused_cpu=$(cpu 4)
        errors=$(echo "$out" | grep -c 'Non-2xx' || true)
        echo "round $round $side: pgbench $tps TPS; POST /v1/jobs $single req/s ($single_cpu ms CPU each);" \
            "batch $batch req/s ($batch_cpu ms CPU each, x1000 jobs); floor $floor req/s ($floor_cpu ms CPU each);" \
            "refused before the write $refused req/s ($refused_cpu ms CPU each); non-2xx lines $errors"
    done
done
