#!/usr/bin/env bash
# Measures how `baton serve` answers through a PostgreSQL outage: GET /v1/queues back to back
# while the server is stopped, then the time from its return to the first 200.
# usage: bench/outage.sh BATON_BINARY SECONDS MODE   (as root; MODE is fast or immediate)
# e.g.   bench/outage.sh .build/debug/baton 75 fast
set -euo pipefail
B=$1 down=$2 mode=$3
bindir=$(pg_config --bindir) work=$(mktemp -d)
chmod 755 "$work"; chown postgres "$work"
port=$((30000 + RANDOM % 1000)); api=$((port + 1000))
pg() { runuser -u postgres -- "$bindir/pg_ctl" -D "$work/data" "$@" >/dev/null; }
cleanup() {
    [ -n "${serve:-}" ] && kill "$serve" 2>/dev/null && wait "$serve" 2>/dev/null
    pg -m immediate -w stop 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
runuser -u postgres -- "$bindir/initdb" -D "$work/data" -U postgres -A trust >/dev/null
pg -l "$work/log" -w -o "-p $port -k $work" start
url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"; "$B" migrate --database-url "$url" >/dev/null
BATON_API_TOKEN=outage-token-0123456789 BATON_LOG_LEVEL=critical "$B" serve --database-url "$url" --port "$api" \
    >/dev/null 2>&1 &
serve=$!
until curl -sf "http://127.0.0.1:$api/readyz" >/dev/null; do sleep 0.1; done
ask() {
    curl -s -o /dev/null -w "%{http_code} %{time_total}\n" -H "Authorization: Bearer outage-token-0123456789" \
        "http://127.0.0.1:$api/v1/queues"
}
pg -m "$mode" -w stop
start=$(date +%s.%N) codes="" slowest=0
while (($(echo "$(date +%s.%N) - $start < $down" | bc))); do
    read -r code t < <(ask)
    codes+="$code "
    slowest=$(echo "if ($t > $slowest) $t else $slowest" | bc)
done
echo "during ${down}s outage ($mode): $(echo "$codes" | tr ' ' '\n' | grep . | sort | uniq -c | tr '\n' ' ') slowest answer ${slowest}s"
pg -l "$work/log" -w -o "-p $port -k $work" start
back=$(date +%s.%N)
until [ "$(ask | cut -d' ' -f1)" = 200 ]; do :; done
echo "first 200 after the return: $(echo "$(date +%s.%N) - $back" | bc) s"
