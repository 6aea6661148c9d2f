-- 1,000 single-stage jobs per request.
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer bench-token-0123456789"
wrk.headers["Content-Type"] = "application/json"
local jobs = {}
for i = 1, 1000 do jobs[i] = '{"input": {"n": ' .. i .. '}, "stages": [{"task": "noop"}]}' end
wrk.body = '{"jobs": [' .. table.concat(jobs, ",") .. ']}'
