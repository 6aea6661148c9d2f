#!/usr/bin/env bash
# Runs the full test suite N times in a row and catches a stall: should a run print nothing for
# 120 s, every thread's stack (gdb), the open descriptors and the process tree are saved in
# /tmp/hunt/stall-I.*, and the run is killed. It runs a copy of the built test bundle and binaries
# (in /tmp/hunt), so that building meanwhile does not disturb it. Results: /tmp/hunt/summary.
#
#   swift build --build-tests && scripts/stall-hunt.sh 20
set -uo pipefail
n=${1:-20}
cd "$(dirname "$0")/.." || exit
mkdir -p /tmp/hunt
bin=$(swift build --show-bin-path)
cp "$bin"/{baton,BatonReliability,BatonTestWorker,BatonQuickStart,BatonHTTPEnqueue,batonPackageTests.xctest} /tmp/hunt/
for i in $(seq 1 "$n"); do
    log=/tmp/hunt/run-$i.log
    start=$(date +%s)
    /tmp/hunt/batonPackageTests.xctest --testing-library swift-testing >"$log" 2>&1 &
    pid=$!
    last=-1; still=0; stalled=0
    while kill -0 "$pid" 2>/dev/null; do
        sleep 5
        size=$(stat -c %s "$log")
        if [ "$size" = "$last" ]; then still=$((still + 5)); else still=0; last=$size; fi
        if [ "$still" -ge 120 ]; then
            stalled=1
            gdb -p "$pid" -batch -ex 'info threads' -ex 'thread apply all bt' >"/tmp/hunt/stall-$i.gdb" 2>&1
            ls -l /proc/$pid/fd >"/tmp/hunt/stall-$i.fd" 2>&1
            ps -ef --forest >"/tmp/hunt/stall-$i.ps"
            grep -oE 'Test [A-Za-z]+\(' "$log" | sort | uniq -u >"/tmp/hunt/stall-$i.unfinished"
            kill -9 "$pid"
            break
        fi
    done
    wait "$pid"; status=$?
    pkill -f 'baton-pg-' >/dev/null 2>&1
    summary=$(grep -aoE "Test run with [0-9]+ tests.*" "$log" | tail -1)
    echo "run $i: exit $status stalled $stalled $(( $(date +%s) - start ))s $summary" >>/tmp/hunt/summary
done
echo "done" >>/tmp/hunt/summary
