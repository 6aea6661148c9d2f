import AsyncHTTPClient
import Baton
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import LocalPostgres
import NIOHTTP1
import PostgresNIO
import Testing

/// Queues, lanes, workers, health, readiness and metrics.
@Suite(.timeLimit(.minutes(2)))
struct OperatorTests {
    /// A paused queue hands out nothing; resumed, its jobs run.
    @Test func pausedQueuesAreNotClaimedUntilResumed() async throws {
        try await withServer { server async throws in
            let paused = try await server.call(.POST, "/v1/queues/default/pause")
            #expect(paused.json == ["name": "default", "paused": true])
            let id = try await server.enqueue(["stages": [["task": "noop"]]])
            // What a worker's fetch would do: nothing is claimable.
            #expect(try await server.db.store.claim(queue: "default", limit: 10, worker: "probe").isEmpty)
            let queues = try await server.call(.GET, "/v1/queues", token: Token.read)
            let queue = try #require(queues["queues"]?.items.first { $0["name"] == "default" })
            #expect(queue["paused"] == true)
            #expect(queue["counts"]?["available"] == 1)
            #expect(queue["oldest_available_age_seconds"] != .null)
            #expect(
                try await server.call(.POST, "/v1/queues/default/resume").json == ["name": "default", "paused": false])
            let job = try await server.job(id) { $0["state"] == "completed" }
            #expect(job["state"] == "completed")
        }
    }

    /// A queue's finished jobs are those of the last day, from the history: a job completed now is
    /// counted once its worker writes its share; one kept from two days ago is not (no finished row
    /// is counted, however many are kept).
    @Test func queuesCountTheLastDaysFinishedJobs() async throws {
        try await withServer { server async throws in
            let schema = server.db.configuration.schema
            try await server.db.pool.execute(
                """
                INSERT INTO \(unescaped: schema).jobs (queue, state, chain, stage_count, finished_at)
                VALUES ('default', 'completed', '[{"task":"noop"}]', 1, now() - interval '2 days')
                """)
            let id = try await server.enqueue(["stages": [["task": "noop"]]])
            _ = try await server.job(id) { $0["state"] == "completed" }
            try await eventually("the worker's history to count the job") {
                let queues = try await server.call(.GET, "/v1/queues")["queues"]?.items ?? []
                return queues.first { $0["name"] == "default" }?["counts"]?["completed"] == 1
            }
        }
    }

    /// Jobs are found by text in their last error (case-insensitive, LIKE's wildcards taken as
    /// text) and by creation time, over HTTP and from the CLI.
    @Test func jobsAreFilteredByErrorTextAndCreationTime() async throws {
        try await withServer { server async throws in
            let failed = try await server.enqueue([
                "input": 1, "stages": [["task": "fail-first", "args": ["key": .string("Disk_50%_full-\(UUID())")]]],
            ])
            let fine = try await server.enqueue(["stages": [["task": "noop"]]])
            for id in [failed, fine] {
                _ = try await server.job(id) { $0["state"] == "discarded" || $0["state"] == "completed" }
            }
            func ids(_ query: String) async throws -> [Int64?] {
                try await server.call(.GET, "/v1/jobs?" + query, token: Token.read)["jobs"]?.items.map {
                    $0["id"]?.int64
                }
                    ?? []
            }
            #expect(try await ids("error=disk_50%25_FULL") == [failed])
            #expect(try await ids("error=disk%2550") == [], "% is not a wildcard")
            let long = try await server.call(
                .GET, "/v1/jobs?error=" + String(repeating: "x", count: 201), token: Token.read)
            #expect(long.status == 400)
            #expect(long["path"] == "error")
            let soon = RFC3339.format(Date().addingTimeInterval(60)).replacingOccurrences(of: ":", with: "%3A")
            #expect(try await ids("created_after=\(soon)") == [])
            #expect(try await ids("created_before=\(soon)") == [fine, failed])
            let cli = try await server.baton(["jobs", "list", "--error", "50%_full", "--since", "10m", "--json"])
            #expect(cli.status == 0, "\(cli.err)")
            #expect(try JSONValue(parsing: cli.out)["jobs"]?.items.map { $0["id"]?.int64 } == [failed])
        }
    }

    /// A lane shows its head (and the head's state, so a stuck lane is visible) and its depth.
    @Test func lanesShowTheirHeadAndWaitingJobs() async throws {
        try await withServer(worker: nil) { server async throws in
            for _ in 0..<3 {
                try await server.enqueue(
                    ["stages": [["task": "noop", "lane": "acct-1"]], "queue": "idle"], query: "?unchecked=true")
            }
            try await server.enqueue(
                ["stages": [["task": "noop", "lane": "acct-2"]], "queue": "idle"], query: "?unchecked=true")
            let lanes = try await server.call(.GET, "/v1/lanes", token: Token.read)
            let list = lanes["lanes"]?.items ?? []
            #expect(list.map { $0["lane"] } == ["acct-1", "acct-2"])
            #expect(list.map { $0["waiting"] } == [2, 0])
            #expect(list.map { $0["head"]?["state"] } == ["available", "available"])
            #expect(list.map { $0["blocked"] } == [false, false])
            let page = try await server.call(.GET, "/v1/lanes?limit=1")
            #expect(page["lanes"]?.items.count == 1)
            let cursor = try #require(page["next_cursor"]?.stringValue)
            let next = try await server.call(.GET, "/v1/lanes?limit=1&cursor=\(cursor)")
            #expect(next["lanes"]?.items.map { $0["lane"] } == ["acct-2"])
            #expect(next["next_cursor"] == nil, "the last page has none")
        }
    }

    /// A lane's width is set over the API (for a lane or a prefix), takes effect at once, shows in
    /// `GET /v1/lanes`, and bad input is a 400 naming the field; the settings file's are its own.
    @Test func laneWidthsAreSetListedAndRefusedWhenWrong() async throws {
        try await withServer(worker: nil) { server async throws in
            for _ in 0..<4 {
                try await server.enqueue(
                    ["stages": [["task": "noop", "lane": "acct-1"]], "queue": "idle"], query: "?unchecked=true")
            }
            let set = try await server.call(.PUT, "/v1/lane-settings/acct-*", body: ["width": 3])
            #expect(set.status == 200)
            #expect(set["lane"] == "acct-*")
            #expect(set["width"] == 3)
            #expect(set["source"] == "api")
            let lane = try #require(try await server.call(.GET, "/v1/lanes", token: Token.read)["lanes"]?.items.first)
            #expect(lane["width"] == 3)
            #expect(lane["held"] == 3)
            #expect(lane["waiting"] == 1)
            let listed = try await server.call(.GET, "/v1/lane-settings", token: Token.read)
            #expect(listed["settings"]?.items.map { $0["lane"] } == ["acct-*"])

            for (body, path) in [
                (["width": 0] as JSONValue, "width"), (["width": 10_001], "width"), (["width": 2.5], ""),
                (["width": 2, "rate": 1], ""), ([:], ""),
            ] {
                let refused = try await server.call(.PUT, "/v1/lane-settings/acct-1", body: body)
                #expect(refused.status == 400, "\(body)")
                if !path.isEmpty { #expect(refused["path"]?.stringValue == path, "\(refused.text)") }
            }
            let control = try await server.call(.PUT, "/v1/lane-settings/a%01b", body: ["width": 2])
            #expect((control.status, control["path"]?.stringValue) == (400, "lane"))
            #expect(
                try await server.call(.PUT, "/v1/lane-settings/acct-1", token: Token.read, body: ["width": 2]).status
                    == 403)
            #expect(try await server.call(.DELETE, "/v1/lane-settings/acct-9").status == 404)

            // A setting the settings file owns is changed there.
            try await server.db.store.syncSettingsLanes([.init(lane: "file-lane", width: 2, source: .settings)])
            #expect(try await server.call(.PUT, "/v1/lane-settings/file-lane", body: ["width": 5]).status == 409)
            #expect(try await server.call(.DELETE, "/v1/lane-settings/file-lane").status == 409)

            #expect(try await server.call(.DELETE, "/v1/lane-settings/acct-*").status == 204)
            let after = try await server.call(.GET, "/v1/lanes", token: Token.read)["lanes"]?.items.first
            #expect(after?["width"] == 1)
            #expect(after?["held"] == 3, "holders admitted under the old width run on")
        }
    }

    /// A rate limit is set over the API, listed with its tokens, and paces the stages naming its
    /// key (a stage waiting for a token is available, no attempt spent); bad input is a 400 naming
    /// the field.
    @Test func rateLimitsAreSetListedAndRefusedWhenWrong() async throws {
        try await withServer(worker: nil) { server async throws in
            let set = try await server.call(
                .PUT, "/v1/rate-limits/partner", body: ["rate": 2, "per": "1h", "burst": 1])
            #expect(set.status == 200, "\(set.text)")
            #expect(set["per"] == "1h")
            #expect(set["burst"] == 1)
            #expect(set["tokens"] == 1)
            var ids: [Int64] = []
            for _ in 0..<2 {
                ids.append(
                    try await server.enqueue(
                        ["stages": [["task": "noop", "rate": "partner"]], "queue": "idle"], query: "?unchecked=true"))
            }
            let job = try await server.call(.GET, "/v1/jobs/\(ids[0])")
            #expect(job["stages"]?.items.first?["rate"] == "partner")
            let claimed = try await server.db.store.claim(queue: "idle", limit: 10, worker: "probe")
            #expect(claimed.map(\.id) == [ids[0]], "one token, one start")
            let waiting = try await server.call(.GET, "/v1/jobs/\(ids[1])")
            #expect(waiting["state"] == "available")
            let reason = try #require(waiting["waiting_for"]?.items.first { $0["reason"] == "rate-limited" })
            #expect(
                reason["message"]?.stringValue?.hasPrefix("waits for a token of rate limit \"partner\" (2 per 1h)")
                    == true)
            #expect(reason["until"] != nil)
            let listed = try await server.call(.GET, "/v1/rate-limits", token: Token.read)
            #expect(listed["rate_limits"]?.items.map { $0["key"] } == ["partner"])
            #expect(listed["rate_limits"]?.items.first?["tokens"]?.numberValue.map { $0.double < 1 } == true)

            for (body, path) in [
                (["rate": 0, "per": "1s"] as JSONValue, "rate"), (["rate": 1, "per": "1 fortnight"], "per"),
                (["rate": 1, "per": "0s"], "per"), (["rate": 1, "per": "32d"], "per"),
                (["rate": 1, "per": "1s", "burst": 0], "burst"), (["rate": 1], ""),
                (["rate": 1, "per": "1s", "x": 1], ""),
            ] {
                let refused = try await server.call(.PUT, "/v1/rate-limits/k", body: body)
                #expect(refused.status == 400, "\(body)")
                if !path.isEmpty { #expect(refused["path"]?.stringValue == path, "\(refused.text)") }
            }
            let badStage = try await server.call(
                .POST, "/v1/jobs?unchecked=true", body: ["stages": [["task": "noop", "rate": ""]]])
            #expect((badStage.status, badStage["path"]?.stringValue) == (400, "stages[0].rate"))
            #expect(try await server.call(.DELETE, "/v1/rate-limits/nothing").status == 404)
            #expect(try await server.call(.DELETE, "/v1/rate-limits/partner").status == 204)
            #expect(try await server.db.store.claim(queue: "idle", limit: 10, worker: "probe").map(\.id) == [ids[1]])
        }
    }

    /// A limit on a whole queue binds the stages there that name no key, shown as waiting for it;
    /// a queue or lane key must name one.
    @Test func aQueueRateLimitIsSetOverHTTPAndShownOnItsStages() async throws {
        try await withServer(worker: nil) { server async throws in
            let set = try await server.call(.PUT, "/v1/rate-limits/queue:idle", body: ["rate": 1, "per": "1h"])
            #expect(set.status == 200, "\(set.text)")
            #expect(set["key"] == "queue:idle")
            var ids: [Int64] = []
            for _ in 0..<2 {
                ids.append(
                    try await server.enqueue(["stages": [["task": "noop"]], "queue": "idle"], query: "?unchecked=true"))
            }
            #expect(try await server.db.store.claim(queue: "idle", limit: 10, worker: "probe").map(\.id) == [ids[0]])
            let waiting = try await server.call(.GET, "/v1/jobs/\(ids[1])")
            let reason = try #require(waiting["waiting_for"]?.items.first { $0["reason"] == "rate-limited" })
            #expect(reason["message"]?.stringValue?.hasPrefix("waits for a token of rate limit \"queue:idle\"") == true)
            for key in ["queue:", "lane:"] {
                let refused = try await server.call(.PUT, "/v1/rate-limits/\(key)", body: ["rate": 1, "per": "1s"])
                #expect((refused.status, refused["path"]?.stringValue) == (400, "key"), "\(refused.text)")
            }
        }
    }

    /// A lane whose head failed and waits to retry is blocked: `?blocked=true` lists only such
    /// lanes, the overview counts them and the lanes page shows them first.
    @Test func blockedLanesAreListedCountedAndShownFirst() async throws {
        try await withServer { server async throws in
            try await server.enqueue(
                ["stages": [["task": "noop", "lane": "a-free"]], "queue": "idle"], query: "?unchecked=true")
            let head = try await server.enqueue([
                "stages": [
                    [
                        "task": "http", "args": ["method": "GET", "url": "http://127.0.0.1:1/down"], "lane": "z-stuck",
                        "max_attempts": 5, "backoff": ["kind": "constant", "initial": "1h"],
                    ]
                ]
            ])
            let follower = try await server.enqueue(["stages": [["task": "noop", "lane": "z-stuck"]]])
            _ = try await server.job(head) { $0["state"] == "retryable" }
            for query in ["lane=z-stuck&state=waiting", "lane=z-stuck&state=retryable,waiting", "lane=z-stuck"] {
                let listed = try await server.call(.GET, "/v1/jobs?" + query, token: Token.read)["jobs"]?.items ?? []
                let expected = query.contains("state=waiting") ? [follower] : [follower, head]
                #expect(listed.map { $0["id"]?.int64 } == expected, "\(query)")
            }

            let blocked = try await server.call(.GET, "/v1/lanes?blocked=true", token: Token.read)
            #expect(blocked["lanes"]?.items.map { $0["lane"] } == ["z-stuck"])
            #expect(blocked["lanes"]?.items.first?["waiting"] == 1)
            let all = try await server.call(.GET, "/v1/lanes", token: Token.read)
            #expect(all["lanes"]?.items.map { $0["lane"] } == ["a-free", "z-stuck"])

            var visitor = DashboardTests.Visitor(base: server.base)
            try await visitor.signIn(Token.read)
            let overview = try await visitor.get("/ui").html
            #expect(overview.contains("<strong>2</strong> lanes"))
            #expect(overview.contains("<strong>1</strong> blocked lanes"))
            let lanes = try await visitor.get("/ui/lanes").html
            #expect(lanes.contains("2 lanes, 1 blocked"))
            let stuck = try #require(lanes.range(of: ">z-stuck<"))
            let free = try #require(lanes.range(of: ">a-free<"))
            #expect(stuck.lowerBound < free.lowerBound, "blocked lanes first")
        }
    }

    /// Unstuck from where it is seen: a lane holder waiting out an hour's backoff runs now when
    /// retried, keeping its place (it runs before the job behind it), its attempts as they were; a
    /// job scheduled for an hour from now runs now too. A running job cannot be retried.
    @Test func retryRunsAScheduledOrRetryableJobNow() async throws {
        try await withServer { server async throws in
            let key = "retry-now-\(UUID())"
            let head = try await server.enqueue([
                "input": 1,
                "stages": [
                    [
                        "task": "fail-first", "args": ["key": .string(key), "retryable": true], "lane": "unstuck",
                        "max_attempts": 5,
                        "backoff": ["kind": "constant", "initial": "1h"],
                    ]
                ],
            ])
            let behind = try await server.enqueue(["stages": [["task": "noop", "lane": "unstuck"]]])
            _ = try await server.job(head) { $0["state"] == "retryable" }
            #expect(try await server.call(.GET, "/v1/jobs/\(behind)")["state"] == "waiting")
            let retried = try await server.call(.POST, "/v1/jobs/\(head)/retry")
            #expect(retried.status == 200, "\(retried.text)")
            let done = try await server.job(head) { $0["state"] == "completed" }
            #expect(done["stages"]?.items.first?["attempts"] == 2, "the failed attempt still counts")
            let next = try await server.job(behind) { $0["state"] == "completed" }
            #expect(
                (next["stages"]?.items.first?["started_at"]?.stringValue ?? "")
                    >= (done["stages"]?.items.first?["finished_at"]?.stringValue ?? "~"), "the head ran first")

            let later = try await server.enqueue(["delay": "1h", "stages": [["task": "noop"]]])
            #expect(try await server.call(.GET, "/v1/jobs/\(later)")["state"] == "scheduled")
            #expect(try await server.call(.POST, "/v1/jobs/\(later)/retry").status == 200)
            _ = try await server.job(later) { $0["state"] == "completed" }

            let sleeping = try await server.enqueue(["stages": [["task": "sleep", "args": ["ms": 60000]]]])
            _ = try await server.job(sleeping) { $0["state"] == "running" }
            let refused = try await server.call(.POST, "/v1/jobs/\(sleeping)/retry")
            #expect(refused.status == 409)
            #expect(
                refused["detail"]?.stringValue?.contains("only a scheduled, retryable, discarded or cancelled") == true)
        }
    }

    /// A lane holder waiting out an hour's backoff is skipped with a reason: it is discarded, the
    /// reason kept as its stage's last error and in the audit, and the job behind it runs. A
    /// running job, a finished one and an empty reason are refused, each saying why.
    @Test func skippingALaneHolderLetsTheLaneMoveOn() async throws {
        try await withServer { server async throws in
            let head = try await server.enqueue([
                "stages": [
                    [
                        "task": "http", "args": ["method": "GET", "url": "http://127.0.0.1:1/down"], "lane": "skipped",
                        "max_attempts": 5, "backoff": ["kind": "constant", "initial": "1h"],
                    ]
                ]
            ])
            let behind = try await server.enqueue(["stages": [["task": "noop", "lane": "skipped"]]])
            _ = try await server.job(head) { $0["state"] == "retryable" }
            // Its page says what it holds up, and how to let it go.
            let reason = try await server.call(.GET, "/v1/jobs/\(head)")["waiting_for"]?.items.first?["message"]
            #expect(
                reason?.stringValue?.contains("it keeps its place in lane \"skipped\", where 1 job waits behind it")
                    == true, "\(String(describing: reason))")
            // Blank as the spec's pattern says it: ASCII spaces, tabs and line breaks only.
            for blank: JSONValue in ["  ", "\u{0B}", "\t\r\n\u{0C}"] {
                let empty = try await server.call(.POST, "/v1/jobs/\(head)/skip", body: ["reason": blank])
                #expect(empty.status == 400 && empty["path"] == "reason", "\(empty.text)")
            }
            let long = try await server.call(
                .POST, "/v1/jobs/\(head)/skip", body: ["reason": .string(String(repeating: "é", count: 1001))])
            #expect(long.status == 400 && long["path"] == "reason", "\(long.text)")
            let skipped = try await server.call(
                .POST, "/v1/jobs/\(head)/skip", body: ["reason": "the partner is gone; refunded by hand"])
            #expect(skipped.status == 200, "\(skipped.text)")
            #expect(skipped["state"] == "discarded")
            #expect(
                skipped["stages"]?.items.first?["errors"]?.items.last?["error"]
                    == "skipped: the partner is gone; refunded by hand")
            _ = try await server.job(behind) { $0["state"] == "completed" }
            let audit = try await server.call(.GET, "/v1/audit?target=job:\(head)")
            #expect(audit["events"]?.items.first?["action"] == "skipJob", "\(audit.text)")

            let again = try await server.call(.POST, "/v1/jobs/\(head)/skip", body: ["reason": "twice"])
            #expect(again.status == 409 && again["detail"]?.stringValue?.contains("is discarded") == true)
            let sleeping = try await server.enqueue(["stages": [["task": "sleep", "args": ["ms": 60000]]]])
            _ = try await server.job(sleeping) { $0["state"] == "running" }
            let running = try await server.call(.POST, "/v1/jobs/\(sleeping)/skip", body: ["reason": "no"])
            #expect(running.status == 409 && running["detail"]?.stringValue?.contains("cancel it instead") == true)
            #expect(try await server.call(.POST, "/v1/jobs/999999/skip", body: ["reason": "no"]).status == 404)
        }
    }

    @Test func workersListTheirQueuesTasksAndHeartbeat() async throws {
        try await withServer { server async throws in
            let workers = try await server.call(.GET, "/v1/workers", token: Token.read)["workers"]?.items ?? []
            #expect(workers.count == 1)
            #expect(workers.first?["queues"] == ["default"])
            #expect(workers.first?["tasks"]?.items.contains("add") == true)
            #expect(workers.first?["pid"]?.int64 == Int64(ProcessInfo.processInfo.processIdentifier))
        }
    }

    @Test func healthReadinessAndMetrics() async throws {
        try await withServer { server async throws in
            #expect(try await server.call(.GET, "/healthz", token: nil).json == ["status": "ok"])
            let ready = try await server.call(.GET, "/readyz", token: nil)
            #expect(ready["status"] == "ready")
            try await server.enqueue(["stages": [["task": "noop"]], "queue": "metered"], query: "?unchecked=true")
            #expect(try await server.call(.GET, "/metrics", token: nil).status == 401)
            let metrics = try await server.call(.GET, "/metrics", token: Token.read)
            #expect(metrics.text.contains("baton_jobs_enqueued_total{queue=\"metered\",task=\"noop\"} 1"))
            #expect(metrics.text.contains("http_server_requests_total{"))
            #expect(metrics.text.contains("# HELP baton_jobs_enqueued_total "))
        }
    }

    /// While the database cannot be reached, requests that need it answer 503 with Retry-After
    /// (an outage the caller can wait out, not a 500); once it is back, they succeed again.
    @Test func aDatabaseOutageIsA503ThatSaysWhenToRetry() async throws {
        try await withLocalPostgres(LocalPostgres.Options(fast: true)) { cluster in
            try await withServer(worker: nil, baseURL: cluster.url) { server async throws in
                let job: JSONValue = ["stages": [["task": "noop"]]]
                #expect(try await server.call(.POST, "/v1/jobs?unchecked=true", body: job).status == 201)
                var admin = server.db.configuration
                admin.database = "template1"
                let outside = try await admin.connect(id: 1, logger: server.db.logger)
                let database = try #require(server.db.configuration.database)
                try await outside.execute(
                    "ALTER DATABASE \(unescaped: database) ALLOW_CONNECTIONS false", logger: server.db.logger)
                try await outside.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = \(database)",
                    logger: server.db.logger)
                do {
                    let refused = try await server.call(.POST, "/v1/jobs?unchecked=true", body: job)
                    #expect(refused.status == 503, "\(refused.text)")
                    #expect(refused["type"] == "urn:baton:problem:database-unavailable")
                    #expect(refused.headers.first(name: "Retry-After") == "1")
                    #expect(try await server.call(.GET, "/v1/queues").status == 503)
                } catch {
                    Issue.record(error)
                }
                try await outside.execute(
                    "ALTER DATABASE \(unescaped: database) ALLOW_CONNECTIONS true", logger: server.db.logger)
                try await outside.close()
                try await eventually("the database to take requests again") {
                    try await server.call(.POST, "/v1/jobs?unchecked=true", body: job).status == 201
                }
            }
        }
    }

    /// Readiness fails while the schema is not migrated (or the database is away).
    @Test func notReadyBeforeMigrations() async throws {
        try await withServer(worker: nil, schema: "never_migrated") { server async throws in
            let reply = try await server.call(.GET, "/readyz", token: nil)
            #expect(reply.status == 503)
            #expect(reply["detail"]?.stringValue?.contains("baton migrate") == true)
        }
    }

    /// Every answer carries a request id; a caller's own is kept.
    @Test func requestIDsAreReturned() async throws {
        try await withServer(worker: nil) { server async throws in
            let own = try await server.call(.GET, "/healthz", headers: [("X-Request-Id", "trace-123")])
            #expect(own.headers.first(name: "X-Request-Id") == "trace-123")
            let fresh = try await server.call(.GET, "/healthz")
            #expect(fresh.headers.first(name: "X-Request-Id")?.isEmpty == false)
        }
    }
}
