#!/usr/bin/env bash
# /healthz under a slowloris: what 100 slow clients cost everyone else, and how long they last.
#
#   swift build -c release && bench/slowloris.sh
#
# Starts a private PostgreSQL and `baton serve` on loopback, then measures GET /healthz latency
# (500 requests, one at a time, a new connection each) before and during an attack of
# SLOW (default 100) connections: a third silent, a third sending their headers a line every
# 200 ms, a third stalled in their body. Prints p50, p99 and max of each, and when the last slow
# connection was closed by the server (api.header-timeout, api.body-timeout: 10 s and 60 s by
# default; BATON_API_HEADER_TIMEOUT and BATON_API_BODY_TIMEOUT to try others).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
baton=${BATON:-$here/../.build/release/baton}
slow=${SLOW:-100}
# shellcheck source=bench/cluster.sh
. "$here/cluster.sh"
before_cluster_stops() { [ -n "${serve_pid:-}" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null; }
start_cluster
api_port=$((20001 + $$ % 10000))
export BATON_DATABASE_URL="$url" BATON_API_TOKEN=bench-token-0123456789
export BATON_LOG_LEVEL="${BATON_LOG_LEVEL:-warning}"
"$baton" migrate >/dev/null
"$baton" serve --port "$api_port" >"$work/serve.log" 2>&1 &
serve_pid=$!
until curl -sf "http://127.0.0.1:$api_port/readyz" >/dev/null; do sleep 0.1; done

python3 - "$api_port" "$slow" <<'PY'
import socket, sys, threading, time
port, slow = int(sys.argv[1]), int(sys.argv[2])

def healthz_latencies(count):
    out = []
    for _ in range(count):
        start = time.perf_counter()
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        while s.recv(65536):
            pass
        s.close()
        out.append((time.perf_counter() - start) * 1000)
    return sorted(out)

def report(name, values):
    p = lambda q: values[min(len(values) - 1, int(q * len(values)))]
    print(f"{name}: p50 {p(0.5):.2f} ms, p99 {p(0.99):.2f} ms, max {values[-1]:.2f} ms")

report("/healthz alone", healthz_latencies(500))
sockets, closed_at = [], {}
opened = time.monotonic()
for index in range(slow):
    s = socket.create_connection(("127.0.0.1", port))
    if index % 3 == 1:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: bench\r\n")
    elif index % 3 == 2:
        s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 100\r\n\r\n{\"stages\"")
    sockets.append((index, s))

def watch(index, s):
    s.settimeout(None)
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass
    closed_at[index] = time.monotonic() - opened

def drip():
    while len(closed_at) < slow:
        for index, s in sockets:
            if index % 3 == 1 and index not in closed_at:
                try:
                    s.sendall(b"X-Slow: 1\r\n")
                except OSError:
                    pass
        time.sleep(0.2)

for index, s in sockets:
    threading.Thread(target=watch, args=(index, s), daemon=True).start()
threading.Thread(target=drip, daemon=True).start()
report(f"/healthz with {slow} slow connections", healthz_latencies(500))
while len(closed_at) < slow:
    time.sleep(0.1)
kinds = {0: "silent", 1: "dripping headers", 2: "stalled body"}
for kind, name in kinds.items():
    times = [t for i, t in closed_at.items() if i % 3 == kind]
    print(f"{name}: all {len(times)} closed by the server after {max(times):.1f} s")
PY
