-- The job of post-job.lua with a priority out of range: read and decoded as an enqueue is, then
-- refused with a 400 before the database is asked. What an enqueue costs before its write.
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer bench-token-0123456789"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"input": {"n": 1}, "stages": [{"task": "noop"}], "priority": 40000}'
