#!/usr/bin/env bash
# The reliability suite: fault, load and soak scenarios against real processes (a private
# PostgreSQL, `baton serve`, worker processes), each printing what it measured; exits 1 if any
# scenario lost a job, ran a lane's stages at once or out of order, or broke its own promise.
#
#   scripts/reliability.sh                      all nine scenarios, full length, release build
#   scripts/reliability.sh --quick              shorter runs, smaller loads
#   scripts/reliability.sh worker-crash overload --setting autovacuum_naptime=10s
#
# Scenarios: worker-crash database-restart connections-killed pool-pressure vacuum-held overload
# lane-soak failover failover-async (the last two need pg_auto_failover: Debian's
# pg-auto-failover-cli and postgresql-15-auto-failover). Results are also appended as JSON lines
# to reliability-results.jsonl (--report).
# Set BUILD=debug to use the debug build (quicker to build; see docs/reliability.md on what it
# does under a retry storm); the default, and what CI runs, is release.
set -euo pipefail
cd "$(dirname "$0")/.."
configuration=${BUILD:-release}
swift build -c "$configuration" --product baton >&2
swift build -c "$configuration" --product BatonReliability >&2
bin=$(swift build -c "$configuration" --show-bin-path)
report=()
case " $* " in *" --report "*) ;; *) report=(--report reliability-results.jsonl) ;; esac
exec "$bin/BatonReliability" run "${report[@]}" "$@"
