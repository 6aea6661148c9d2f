#!/usr/bin/env bash
# Fair share (issue 49), one line of JSON per run, one run after the other on private clusters:
#   1. tenant A's JOBS no-op jobs enqueued at once, tenant B ("trickle") enqueuing 10 a second during
#      A's burn-down, with keys (--fair-keys 1) and without (the queue's order): B's pickups;
#   2. the burn-down of JOBS no-op jobs over 0, 10 and 10,000 keys, ROUNDS times alternated.
#
#   swift build -c release --product baton-bench && bench/fair-share.sh [JOBS] [ROUNDS]   (500000, 2)
#
# B's idle pickup is the run's own `pickup_p99_ms` (200 samples on the idle worker afterwards).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench=${BATON_BENCH:-$(cd "$here/.." && swift build -c release --show-bin-path)/baton-bench}
jobs=${1:-500000}; rounds=${2:-2}
"$bench" --jobs "$jobs" --fair-keys 1 --trickle 10 --json
"$bench" --jobs "$jobs" --trickle 10 --json
for _ in $(seq "$rounds"); do
    for keys in 0 10 10000; do
        "$bench" --jobs 100000 --fair-keys "$keys" --pickup-samples 0 --json
    done
done
