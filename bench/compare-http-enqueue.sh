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
        single=$(echo "$out" | grep 'Requests/sec' | sed -n 1p | awk '{print $2}')
        batch=$(echo "$out" | grep 'Requests/sec' | sed -n 2p | awk '{print $2}')
        single_cpu=$(echo "$out" | grep 'server CPU' | sed -n 1p | awk '{print $5}')
        batch_cpu=$(echo "$out" | grep 'server CPU' | sed -n 2p | awk '{print $5}')
        floor=$(echo "$out" | grep 'Requests/sec' | sed -n 3p | awk '{print $2}')
        floor_cpu=$(echo "$out" | grep 'server CPU' | sed -n 3p | awk '{print $5}')
        refused=$(echo "$out" | grep 'Requests/sec' | sed -n 4p | awk '{print $2}')
        refused_cpu=$(echo "$out" | grep 'server CPU' | sed -n 4p | awk '{print $5}')
        errors=$(echo "$out" | grep -c 'Non-2xx' || true)
        echo "round $round $side: pgbench $tps TPS; POST /v1/jobs $single req/s ($single_cpu ms CPU each);" \
            "batch $batch req/s ($batch_cpu ms CPU each, x1000 jobs); floor $floor req/s ($floor_cpu ms CPU each);" \
            "refused before the write $refused req/s ($refused_cpu ms CPU each); non-2xx lines $errors"
    done
done
