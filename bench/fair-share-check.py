#!/usr/bin/env python3
"""Issue 49's quick check against a running Baton: tenant a enqueues 20,000 stages of `sleep 20ms`
(about 10 s of work for 40 slots), then tenant b enqueues 20 `noop` jobs, one every 200 ms; prints
how long after its enqueue each of b's started (from the job's own record), and a's backlog then.

    BATON_API_TOKEN=some-token-of-16-chars baton dev --data /tmp/qc --port 18091 --concurrency 40 &
    BATON_API_TOKEN=some-token-of-16-chars bench/fair-share-check.py [http://127.0.0.1:18091]
"""
import datetime, json, os, sys, time, urllib.request

base = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:18091"
headers = {"Authorization": "Bearer " + os.environ["BATON_API_TOKEN"], "Content-Type": "application/json"}


def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    with urllib.request.urlopen(urllib.request.Request(base + path, method=method, headers=headers, data=data)) as r:
        return json.loads(r.read() or b"null")


def instant(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


flood = {"fair_key": "a", "stages": [{"task": "sleep", "args": {"ms": 20}}]}
for _ in range(2):
    call("POST", "/v1/jobs/batch", {"jobs": [flood] * 10000})
ids = []
for _ in range(20):
    ids.append(call("POST", "/v1/jobs", {"fair_key": "b", "stages": [{"task": "noop"}]})["id"])
    time.sleep(0.2)
waits = []
for id in ids:
    while (job := call("GET", f"/v1/jobs/{id}"))["state"] != "completed":
        time.sleep(0.05)
    waits.append((instant(job["path"][0]["started_at"]) - instant(job["created_at"])).total_seconds() * 1000)
queue = next(q for q in call("GET", "/v1/queues")["queues"] if q["name"] == "default")
print(f"b's 20 jobs started {min(waits):.0f}-{max(waits):.0f} ms after their enqueue (aim: each within 500 ms)")
print(f"a's stages still waiting then: {queue['counts']['available']}")
