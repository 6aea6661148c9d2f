-- One single-stage job per request.
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer bench-token-0123456789"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"input": {"n": 1}, "stages": [{"task": "noop"}]}'
