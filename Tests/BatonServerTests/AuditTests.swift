import AsyncHTTPClient
import Baton
import BatonPostgres
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import NIOHTTP1
import PostgresNIO
import Testing

@testable import BatonServer

/// The audit trail: every change made through the API, with who made it, in the change's own
/// transaction.
@Suite(.timeLimit(.minutes(2)))
struct AuditTests {
    static func job(_ queue: String = "idle", stages: JSONValue = [["task": "noop"]]) -> JSONValue {
        ["queue": .string(queue), "stages": stages]
    }

    /// Sends a request with its own request id, which the event must carry.
    static func call(
        _ server: TestServer, _ method: HTTPMethod, _ path: String, body: JSONValue? = nil, id: String
    ) async throws -> Reply {
        try await server.call(method, path, body: body, headers: [("X-Request-Id", id)])
    }

    @Test func everyChangeIsRecordedWithWhoMadeItAndWhat() async throws {
        try await withServer(worker: nil) { server async throws in
            let cancelled = try await server.enqueue(Self.job(), query: "?unchecked=true")
            let awaiting = try await server.enqueue(
                Self.job(stages: [["await": "approval"], ["task": "noop"]]), query: "?unchecked=true")
            let bulk = try await server.enqueue(Self.job(), query: "?unchecked=true")
            let schedule: JSONValue = ["cron": "@daily", "job": Self.job()]
            let steps: [(HTTPMethod, String, JSONValue?, String, String, JSONValue)] = [
                (
                    .POST, "/v1/jobs/\(cancelled)/cancel", nil, "cancelJob", "job:\(cancelled)",
                    ["queue": "idle", "to": "cancelled", "cancelled": 1]
                ),
                (
                    .POST, "/v1/jobs/\(cancelled)/retry", nil, "retryJob", "job:\(cancelled)",
                    ["queue": "idle", "to": "available"]
                ),
                (
                    .POST, "/v1/jobs/\(awaiting)/signals/approval", ["ok": 1.50], "deliverSignal", "job:\(awaiting)",
                    ["queue": "idle", "signal": "approval", "outcome": "kept"]
                ),
                (
                    .POST, "/v1/jobs/bulk", ["action": "cancel", "filter": ["ids": [.number(JSONNumber(bulk))]]],
                    "bulkJobs", "jobs", ["action": "cancel", "ids": [.number(JSONNumber(bulk))]]
                ),
                (.DELETE, "/v1/jobs/\(bulk)", nil, "deleteJob", "job:\(bulk)", ["queue": "idle", "from": "cancelled"]),
                (.POST, "/v1/queues/idle/pause", nil, "pauseQueue", "queue:idle", ["paused": true]),
                (.POST, "/v1/queues/idle/resume", nil, "resumeQueue", "queue:idle", ["paused": false]),
                (
                    .PUT, "/v1/schedules/nightly?unchecked=true", schedule, "putSchedule", "schedule:nightly",
                    ["cron": "@daily", "time_zone": "UTC", "queue": "idle", "paused": false]
                ),
                (.POST, "/v1/schedules/nightly/pause", nil, "pauseSchedule", "schedule:nightly", ["paused": true]),
                (.POST, "/v1/schedules/nightly/resume", nil, "resumeSchedule", "schedule:nightly", ["paused": false]),
                (.DELETE, "/v1/schedules/nightly", nil, "deleteSchedule", "schedule:nightly", ["queue": "idle"]),
                (
                    .PUT, "/v1/lane-settings/tenant-*", ["width": 3], "setLaneSetting", "lane:tenant-*",
                    ["from": nil, "width": 3]
                ),
                (
                    .DELETE, "/v1/lane-settings/tenant-*", nil, "deleteLaneSetting", "lane:tenant-*",
                    ["from": 3, "width": nil]
                ),
                (
                    .PUT, "/v1/rate-limits/partner", ["rate": 10, "per": "1s", "burst": 20], "setRateLimit",
                    "rate-limit:partner", ["rate": 10, "per_ms": 1000, "burst": 20]
                ),
                (.DELETE, "/v1/rate-limits/partner", nil, "deleteRateLimit", "rate-limit:partner", [:]),
            ]
            var expected = steps.map(\.5)
            for (index, (method, path, body, action, _, _)) in steps.enumerated() {
                let reply = try await Self.call(server, method, path, body: body, id: "req-\(index)")
                #expect(reply.status < 300, "\(method) \(path): \(reply.text)")
                // What the server answered is what it records: the signal's outcome, the
                // expression as it reads it.
                if action == "deliverSignal", case .object(var details) = expected[index] {
                    details["outcome"] = reply["outcome"]
                    expected[index] = .object(details)
                }
                if action == "putSchedule", case .object(var details) = expected[index] {
                    details["cron"] = reply["cron"]
                    details["time_zone"] = reply["time_zone"]
                    expected[index] = .object(details)
                }
            }
            let events = try await server.call(.GET, "/v1/audit?limit=100")["events"]?.items.reversed() ?? []
            #expect(events.count == steps.count, "\(events)")
            for (index, (event, step)) in zip(events, steps).enumerated() {
                #expect(event["actor"] == "admin-1")
                #expect(event["request_id"] == .string("req-\(index)"))
                #expect(event["action"] == .string(step.3))
                #expect(event["target"] == .string(step.4))
                #expect(event["details"] == expected[index], "\(step.3): \(event)")
            }
            // A run of a schedule records the job it enqueued.
            #expect(try await server.call(.PUT, "/v1/schedules/again?unchecked=true", body: schedule).status == 200)
            let run = try await server.call(.POST, "/v1/schedules/again/run")
            let runs = try await server.call(.GET, "/v1/audit?action=runSchedule")["events"]?.items
            #expect(runs?.first?["details"] == ["job": run["id"] ?? nil])
        }
    }

    /// A refused change records nothing; a change whose record cannot be written does not happen.
    @Test func theChangeAndItsRecordCommitTogether() async throws {
        try await withServer(
            worker: nil,
            configure: {
                $0.tokens = APITokens(
                    Token.all.tokens + [.init(name: "blocked", role: .admin, secret: "blocked-admin-token-1")])
            }
        ) { server async throws in
            let id = try await server.enqueue(Self.job(), query: "?unchecked=true")
            // The trail refuses this actor's records (as a full disk or a lost connection would
            // fail the insert): the cancel must fail with it.
            try await server.db.pool.execute(
                """
                ALTER TABLE \(unescaped: server.db.configuration.schema).audit_events
                ADD CONSTRAINT refuse CHECK (actor <> 'blocked')
                """)
            let refused = try await server.call(.POST, "/v1/jobs/\(id)/cancel", token: "blocked-admin-token-1")
            #expect(refused.status == 500)
            #expect(try await server.client.store.job(id)?.state == .available)
            // A change that changed nothing (a finished job's cancel) is not recorded.
            #expect(try await server.call(.POST, "/v1/jobs/\(id)/cancel").status == 200)
            #expect(try await server.call(.POST, "/v1/jobs/\(id)/cancel").status == 409)
            let events = try await server.call(.GET, "/v1/audit")["events"]?.items
            #expect(events?.map { $0["action"] } == ["cancelJob"])
        }
    }

    /// Saying again what is so changes nothing, and records nothing.
    @Test func aRepeatedSettingIsRecordedOnce() async throws {
        try await withServer(worker: nil) { server async throws in
            let schedule: JSONValue = ["cron": "@daily", "job": Self.job()]
            #expect(try await server.call(.PUT, "/v1/schedules/s?unchecked=true", body: schedule).status == 200)
            for _ in 0..<2 {
                #expect(try await server.call(.PUT, "/v1/lane-settings/l", body: ["width": 2]).status == 200)
                #expect(try await server.call(.PUT, "/v1/rate-limits/k", body: ["rate": 5, "per": "1s"]).status == 200)
                #expect(try await server.call(.POST, "/v1/schedules/s/pause").status == 200)
                #expect(try await server.call(.POST, "/v1/queues/q/pause?unchecked=true").status == 200)
            }
            let actions = try await server.call(.GET, "/v1/audit")["events"]?.items.compactMap {
                $0["action"]?.stringValue
            }
            #expect(actions == ["pauseQueue", "pauseSchedule", "setRateLimit", "setLaneSetting", "putSchedule"])
        }
    }

    /// Swift code records its changes by naming itself, and reads the trail; unnamed, it records
    /// nothing.
    @Test func swiftCallersNameThemselvesToBeRecorded() async throws {
        try await withServer(worker: nil) { server async throws in
            let named = try await server.enqueue(Self.job(), query: "?unchecked=true")
            let unnamed = try await server.enqueue(Self.job(), query: "?unchecked=true")
            #expect(try await server.client.cancel(named, by: AuditActor(name: "billing-service")))
            #expect(try await server.client.cancel(unnamed))
            let events = try await server.client.auditEvents()
            #expect(events.map(\.actor) == ["billing-service"])
            #expect(events.map(\.target) == ["job:\(named)"])
            #expect(try await server.client.auditEvents(AuditFilter(actor: "someone")).isEmpty)
        }
    }

    @Test func theTrailIsFilteredPagedAndForAdminsOnly() async throws {
        try await withServer(worker: nil) { server async throws in
            for queue in ["a", "b", "c"] {
                #expect(try await server.call(.POST, "/v1/queues/\(queue)/pause?unchecked=true").status == 200)
            }
            #expect(try await server.call(.POST, "/v1/queues/b/resume").status == 200)
            let first = try await server.call(.GET, "/v1/audit?limit=2")
            #expect(first["events"]?.items.map { $0["target"] } == ["queue:b", "queue:c"])
            let cursor = try #require(first["next_cursor"]?.stringValue)
            let second = try await server.call(.GET, "/v1/audit?limit=2&cursor=\(cursor)")
            #expect(second["events"]?.items.map { $0["target"] } == ["queue:b", "queue:a"])
            #expect(second["next_cursor"] == nil)
            let b = try await server.call(.GET, "/v1/audit?target=queue:b")["events"]?.items.map { $0["action"] }
            #expect(b == ["resumeQueue", "pauseQueue"])
            #expect(try await server.call(.GET, "/v1/audit?actor=someone")["events"]?.items.isEmpty == true)
            #expect(try await server.call(.GET, "/v1/audit?cursor=bogus").status == 400)
            #expect(try await server.call(.GET, "/v1/audit", token: Token.read).status == 403)
            #expect(try await server.call(.GET, "/v1/audit", token: Token.enqueue).status == 403)
        }
    }

    @Test func eventsPastTheirRetentionArePruned() async throws {
        try await TestDatabase.with { db async throws in
            for queue in ["old", "new"] {
                try await db.store.setPaused(true, queue: queue, unchecked: true, by: AuditActor(name: "ops"))
            }
            try await db.pool.execute(
                """
                UPDATE \(unescaped: db.configuration.schema).audit_events SET at = now() - interval '91 days'
                WHERE target = 'queue:old'
                """)
            #expect(try await db.store.pruneAudit(retention: .seconds(90 * 86400), limit: 100) == 1)
            #expect(try await db.store.auditEvents(AuditFilter()).map(\.target) == ["queue:new"])
        }
    }
}
