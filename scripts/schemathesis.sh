#!/usr/bin/env bash
# Property-based testing of the live HTTP API against its own OpenAPI document (schemathesis),
# every check: no 5xx, every response in the documented status codes, content types, headers and
# schemas, schema-violating requests refused, schema-valid ones accepted, undocumented methods
# answered 405, authentication required where documented. Where the API refuses schema-valid
# input for what it means (an unknown task, a cursor it never issued), scripts/schemathesis.toml
# declares the refusal as an expected answer for that operation.
#
#   scripts/schemathesis.sh [MAX_EXAMPLES]        (default 25 per operation; needs `swift build`)
#
# Starts `baton dev` (a private PostgreSQL, the API and a worker) on a free port with an admin
# token and long polls cut to 2 s, runs schemathesis with a fixed seed, stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
baton=${BATON:-.build/debug/baton}
examples=${1:-25}
if ! command -v st >/dev/null 2>&1; then
    python3 -m pip install --quiet --disable-pip-version-check "schemathesis==4.32.5"
fi

work=$(mktemp -d)
chmod 755 "$work"   # as root, PostgreSQL runs as postgres, which must get in
token="st-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
BATON_API_TOKEN=$token BATON_LOG_LEVEL=warning "$baton" dev --data "$work/pgdata" --port 0 --max-wait 2s \
    >"$work/dev.out" 2>"$work/dev.err" &
dev=$!
cleanup() {
    # A server that died under the run leaves its last words here (a Swift runtime trap prints
    # "Fatal error: …" on standard error, which would otherwise go with $work).
    if ! kill -0 "$dev" 2>/dev/null; then
        echo "baton dev exited during the run; its standard error from the crash on:" >&2
        # The backtracer's report starts at "Program crashed"; its end is only registers.
        if grep -q "Program crashed\|Fatal error" "$work/dev.err"; then
            sed -n '/Program crashed\|Fatal error/,+80p' "$work/dev.err" >&2
        else
            tail -n 40 "$work/dev.err" >&2
        fi
    fi
    kill -INT "$dev" 2>/dev/null && wait "$dev" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 600); do
    grep -q "Press Ctrl-C" "$work/dev.out" && break
    kill -0 "$dev" 2>/dev/null || { cat "$work/dev.out" "$work/dev.err"; exit 1; }
    sleep 0.2
done
api=$(grep -oE 'api: +http://[0-9.:]+' "$work/dev.out" | awk '{print $2}')
echo "schemathesis: $api/openapi.json, $examples examples per operation"
st --config-file scripts/schemathesis.toml run "$api/openapi.json" -H "Authorization: Bearer $token" \
    --checks all --max-examples "$examples" --request-timeout 20 --suppress-health-check filter_too_much \
    --seed 20261123 --no-color
