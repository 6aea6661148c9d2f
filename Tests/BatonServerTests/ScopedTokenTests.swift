import AsyncHTTPClient
import Baton
import BatonPostgres
import BatonServerTestSupport
import BatonTestSupport
import Crypto
import Foundation
import NIOHTTP1
import Testing

@testable import BatonServer

/// Tokens limited to queues and to operations, named in a token file, fingerprinted with keys.
@Suite(.timeLimit(.minutes(2)))
struct ScopedTokenTests {
    static let billingEnqueue = "billing-enqueue-secret-1"
    static let billingRead = "billing-read-secret-0001"
    static let billingAdmin = "billing-admin-secret-001"
    static let oncall = "oncall-admin-secret-0001"

    static func configure(_ configuration: inout ServerConfiguration) {
        configuration.tokens = APITokens(
            Token.all.tokens + [
                .init(name: "billing-app", role: .enqueue, secret: billingEnqueue, queues: ["billing"]),
                .init(name: "billing-dash", role: .read, secret: billingRead, queues: ["billing", "invoices"]),
                .init(name: "billing-ops", role: .admin, secret: billingAdmin, queues: ["billing"]),
                .init(name: "oncall", role: .admin, secret: oncall, operations: ["getJob", "cancelJob"]),
            ])
    }

    static func job(_ queue: String, task: String = "noop") -> JSONValue {
        ["queue": .string(queue), "stages": [["task": .string(task)]]]
    }

    // MARK: the token file

    @Test func aTokenFileNamesTokensWithTheirScopes() throws {
        let tokens = try APITokens.parse(
            file: """
                # name    role[:queues]            secret                    [only=…]
                billing   enqueue:billing,reports  0123456789abcdef0123
                grafana   read                     fedcba9876543210fedc   # dashboards

                oncall    admin  aaaaaaaaaaaaaaaa1111  only=getJob,cancelJob
                """, named: "tokens")
        #expect(tokens.tokens.map(\.name) == ["billing", "grafana", "oncall"])
        let billing = try #require(tokens.caller(token: "0123456789abcdef0123"))
        #expect(billing.name == "billing" && billing.role == .enqueue && billing.queues == ["billing", "reports"])
        #expect(billing.operations == nil)
        let grafana = try #require(tokens.caller(token: "fedcba9876543210fedc"))
        #expect(grafana.role == .read && grafana.queues == nil)
        #expect(tokens.caller(token: "aaaaaaaaaaaaaaaa1111")?.operations == ["getJob", "cancelJob"])
        #expect(tokens.caller(token: "aaaaaaaaaaaaaaaa111") == nil)
    }

    /// Each problem a file can have is refused with its line and what is wrong, never a crash.
    @Test(arguments: [
        ("a admin", "tokens:1: expected `name role[:queue,…] secret [only=operation,…]`, found 2 fields"),
        ("a admin 0123456789abcdef x y", "tokens:1: expected"),
        ("a/b admin 0123456789abcdef", #"tokens:1: the name "a/b" is not"#),
        (
            "a admin 0123456789abcdef\nb read 0123456789abcdeg\na read 0123456789abcdeh",
            #"tokens:3: the name "a" is given on line 1 too"#
        ),
        ("a root 0123456789abcdef", #"tokens:1: the role "root" is not admin, enqueue or read"#),
        ("a enqueue: 0123456789abcdef", #"tokens:1: the scope "" names no queue"#),
        ("a enqueue:x,,y 0123456789abcdef", #"tokens:1: the scope "x,,y" names no queue"#),
        ("a enqueue:bad\u{7}q 0123456789abcdef", "tokens:1: the queue"),
        ("a admin short", #"tokens:1: the secret of "a" is shorter than 16 characters"#),
        ("a read 0123456789abcdef only=cancelJob", #"tokens:1: the read role does not admit "cancelJob""#),
        ("a admin 0123456789abcdef only=launchMissiles", #"tokens:1: "launchMissiles" is not an operation"#),
        ("a admin 0123456789abcdef except=getJob", "tokens:1: the fourth field is `only=operation,…`"),
        (
            "\n\na admin 0123456789abcdef\nb read 0123456789abcdef",
            #"tokens:4: the secret of "b" is the secret of line 3 too"#
        ),
        ("# nothing here\n", "tokens: holds no tokens"),
    ])
    func aBadTokenFileIsRefusedNamingItsLine(text: String, problem: String) {
        #expect {
            try APITokens.parse(file: text, named: "tokens")
        } throws: { error in
            "\(error)".hasPrefix(problem)
        }
    }

    // MARK: queues

    @Test func aTokenLimitedToQueuesEnqueuesIntoThemOnly() async throws {
        try await withServer(configure: Self.configure) { server async throws in
            let token = Self.billingEnqueue
            #expect(
                try await server.call(.POST, "/v1/jobs?unchecked=true", token: token, body: Self.job("billing")).status
                    == 201)
            let other = try await server.call(.POST, "/v1/jobs?unchecked=true", token: token, body: Self.job("reports"))
            #expect(other.status == 403)
            #expect(other["path"] == "queue")
            #expect(other["detail"]?.stringValue?.contains("\"reports\"") == true, "\(other.text)")
            // A stage routed to another queue is refused as well, naming the stage.
            let routed: JSONValue = [
                "queue": "billing", "stages": [["task": "noop"], ["task": "noop", "queue": "gpu"]],
            ]
            let refused = try await server.call(.POST, "/v1/jobs?unchecked=true", token: token, body: routed)
            #expect(refused.status == 403)
            #expect(refused["path"] == "stages[1].queue")
            // A batch with one job outside is refused whole: nothing of it is stored.
            let batch: JSONValue = ["jobs": [Self.job("billing"), Self.job("reports")]]
            let partial = try await server.call(.POST, "/v1/jobs/batch?unchecked=true", token: token, body: batch)
            #expect(partial.status == 403)
            #expect(partial["path"] == "jobs[1].queue")
            #expect(try await server.client.store.jobs(JobFilter(limit: 100)).jobs.count == 1)
        }
    }

    @Test func aTokenLimitedToQueuesSeesTheirJobsQueuesAndSchedulesOnly() async throws {
        try await withServer(configure: Self.configure) { server async throws in
            let billing = try await server.enqueue(Self.job("billing"), query: "?unchecked=true")
            let invoices = try await server.enqueue(Self.job("invoices"), query: "?unchecked=true")
            let reports = try await server.enqueue(Self.job("reports"), query: "?unchecked=true")
            let token = Self.billingRead
            let listed = try await server.call(.GET, "/v1/jobs", token: token)["jobs"]?.items.compactMap {
                $0["id"]?.int64
            }
            #expect(listed == [invoices, billing])
            #expect(try await server.call(.GET, "/v1/jobs?queue=reports", token: token).status == 403)
            #expect(try await server.call(.GET, "/v1/jobs/\(billing)", token: token).status == 200)
            #expect(try await server.call(.GET, "/v1/jobs/\(reports)", token: token).status == 404)
            let queues = try await server.call(.GET, "/v1/queues", token: token)["queues"]?.items.compactMap {
                $0["name"]?.stringValue
            }
            #expect(queues == ["billing", "invoices"])
            // What belongs to the whole cluster is not for it.
            for path in ["/v1/workers", "/v1/lanes", "/v1/lane-settings", "/v1/rate-limits", "/metrics", "/v1/audit"] {
                let reply = try await server.call(.GET, path, token: token)
                #expect(reply.status == 403, "\(path): \(reply.text)")
            }
            // Schedules: its queues' only; another queue's is as if it did not exist.
            for (name, queue) in [("nightly-billing", "billing"), ("nightly-reports", "reports")] {
                let body: JSONValue = ["cron": "@daily", "job": Self.job(queue)]
                #expect(try await server.call(.PUT, "/v1/schedules/\(name)?unchecked=true", body: body).status == 200)
            }
            let schedules = try await server.call(.GET, "/v1/schedules", token: token)["schedules"]?.items.compactMap {
                $0["name"]?.stringValue
            }
            #expect(schedules == ["nightly-billing"])
            #expect(try await server.call(.GET, "/v1/schedules/nightly-reports", token: token).status == 404)
        }
    }

    @Test func anAdminLimitedToQueuesActsOnThemOnly() async throws {
        try await withServer(configure: Self.configure) { server async throws in
            let billing = try await server.enqueue(Self.job("billing"), query: "?unchecked=true")
            let reports = try await server.enqueue(Self.job("reports"), query: "?unchecked=true")
            let token = Self.billingAdmin
            // Another queue's job is not found, and stays as it was.
            #expect(try await server.call(.POST, "/v1/jobs/\(reports)/cancel", token: token).status == 404)
            #expect(try await server.call(.POST, "/v1/jobs/\(reports)/retry", token: token).status == 404)
            #expect(try await server.call(.DELETE, "/v1/jobs/\(reports)", token: token).status == 404)
            #expect(try await server.client.store.job(reports)?.state == .available)
            #expect(try await server.call(.POST, "/v1/jobs/\(billing)/cancel", token: token).status == 200)
            // A bulk operation without a queue reaches its queues only.
            let another = try await server.enqueue(Self.job("billing"), query: "?unchecked=true")
            let bulk: JSONValue = ["action": "cancel", "filter": [:]]
            let done = try await server.call(.POST, "/v1/jobs/bulk", token: token, body: bulk)
            #expect(done["changed"] == 1, "\(done.text)")
            #expect(try await server.client.store.job(another)?.state == .cancelled)
            #expect(try await server.client.store.job(reports)?.state == .available)
            let elsewhere: JSONValue = ["action": "cancel", "filter": ["queue": "reports"]]
            let refused = try await server.call(.POST, "/v1/jobs/bulk", token: token, body: elsewhere)
            #expect(refused.status == 403)
            #expect(refused["path"] == "filter.queue")
            // Queues: its own pause, not another's.
            #expect(try await server.call(.POST, "/v1/queues/billing/pause", token: token).status == 200)
            #expect(try await server.call(.POST, "/v1/queues/reports/pause", token: token).status == 403)
            // Schedules: not into another queue, nor over another queue's schedule of the name.
            let theirs: JSONValue = ["cron": "@daily", "job": Self.job("reports")]
            #expect(try await server.call(.PUT, "/v1/schedules/shared?unchecked=true", body: theirs).status == 200)
            let mine: JSONValue = ["cron": "@daily", "job": Self.job("billing")]
            let replaced = try await server.call(.PUT, "/v1/schedules/shared?unchecked=true", token: token, body: mine)
            #expect(replaced.status == 403)
            #expect(replaced["detail"]?.stringValue?.contains("reports") == false, "the other queue is not named")
            #expect(try await server.client.store.schedule("shared")?.job.queue == "reports")
            #expect(
                try await server.call(.PUT, "/v1/schedules/other?unchecked=true", token: token, body: theirs).status
                    == 403)
            #expect(try await server.call(.POST, "/v1/schedules/shared/run", token: token).status == 404)
            #expect(try await server.call(.DELETE, "/v1/schedules/shared", token: token).status == 404)
            // Lane and rate settings are the cluster's.
            #expect(try await server.call(.PUT, "/v1/lane-settings/l", token: token, body: ["width": 2]).status == 403)
        }
    }

    static func members(_ job: JSONValue) -> [JSONValue] { job["stages"]?.items.first?["members"]?.items ?? [] }

    /// A group member is judged by its job's queue, not by the queue its own stage is routed to.
    @Test func aGroupMemberBelongsToItsJobsQueue() async throws {
        try await withServer(
            configure: {
                Self.configure(&$0)
                $0.tokens = APITokens(
                    $0.tokens.tokens + [
                        .init(name: "default-read", role: .read, secret: "default-read-secret-01", queues: ["default"]),
                        .init(name: "gpu-read", role: .read, secret: "gpu-read-secret-000001", queues: ["gpu"]),
                    ])
            }
        ) { server async throws in
            let job = try await server.enqueue(
                ["stages": [["group": [["task": "noop", "queue": "gpu"]]]]], query: "?unchecked=true")
            let members = Self.members(try await server.job(job) { !Self.members($0).isEmpty })
            let member = try #require(members.first?["id"]?.int64)
            #expect(try await server.call(.GET, "/v1/jobs/\(member)", token: "default-read-secret-01").status == 200)
            #expect(try await server.call(.GET, "/v1/jobs/\(member)", token: "gpu-read-secret-000001").status == 404)
        }
    }

    @Test func aTokenLimitedToOperationsCallsThoseOnly() async throws {
        try await withServer(configure: Self.configure) { server async throws in
            let id = try await server.enqueue(Self.job("billing"), query: "?unchecked=true")
            #expect(try await server.call(.GET, "/v1/jobs/\(id)", token: Self.oncall).status == 200)
            #expect(try await server.call(.GET, "/v1/jobs", token: Self.oncall).status == 403)
            #expect(try await server.call(.POST, "/v1/jobs/\(id)/cancel", token: Self.oncall).status == 200)
            let retry = try await server.call(.POST, "/v1/jobs/\(id)/retry", token: Self.oncall)
            #expect(retry.status == 403)
            #expect(retry["detail"]?.stringValue?.contains("oncall") == true)
        }
    }

    // MARK: fingerprints

    /// A job stores an HMAC of its token under the newest key; a token owns the jobs stored under
    /// any key still configured, and those stored unkeyed before keys, so that adding a key
    /// orphans nothing; dropping a key orphans its jobs for `enqueue` tokens only.
    @Test func fingerprintsAreKeyedAndSurviveARotation() async throws {
        let old = Array("an-old-fingerprint-key-0123456789abcdef".utf8)
        let new = Array("a-new-fingerprint-key-0123456789abcdef".utf8)
        try await withServer(configure: { $0.fingerprintKeys = [old] }) { server async throws in
            let keyed: JSONValue = ["queue": "default", "stages": [["task": "noop"]], "idempotency_key": "order-7"]
            let first = try await server.enqueue(keyed, token: Token.enqueue)
            let stored = try #require(try await server.client.store.job(first)?.enqueuedBy)
            let digest = Array(SHA256.hash(data: Data(Token.enqueue.utf8)))
            let expected = HMAC<SHA256>.authenticationCode(for: digest, using: SymmetricKey(data: old))
            #expect(stored == expected.prefix(16).map { String(format: "%02x", $0) }.joined())
            // A job stored before fingerprints were keyed (the unkeyed form).
            let legacy = NewJob(
                chain: ChainDefinition(stages: [.task("noop")]),
                enqueuedBy: digest.prefix(8).map { String(format: "%02x", $0) }.joined())
            let unkeyed = try await server.client.enqueue([legacy])[0].id

            var rotated = ServerConfiguration(port: 0, tokens: Token.all)
            rotated.fingerprintKeys = [new, old]
            try await withExtraServer(rotated, on: server) { base async throws in
                let reader = TestServer(base: base, db: server.db, client: server.client)
                #expect(try await reader.call(.GET, "/v1/jobs/\(first)", token: Token.enqueue).status == 200)
                #expect(try await reader.call(.GET, "/v1/jobs/\(unkeyed)", token: Token.enqueue).status == 200)
                // Its idempotency key still names its own job: the job, not a 409.
                let again = try await reader.call(.POST, "/v1/jobs", token: Token.enqueue, body: keyed)
                #expect(again.status == 200 && again["id"]?.int64 == first, "\(again.text)")
                let second = try await reader.enqueue(Self.job("default"), token: Token.enqueue)
                #expect(try await server.client.store.job(second)?.enqueuedBy != stored)
                let listed = try await reader.call(.GET, "/v1/jobs", token: Token.enqueue)["jobs"]?.items.count
                #expect(listed == 3)
            }
            var dropped = ServerConfiguration(port: 0, tokens: Token.all)
            dropped.fingerprintKeys = [new]
            try await withExtraServer(dropped, on: server) { base async throws in
                let reader = TestServer(base: base, db: server.db, client: server.client)
                #expect(try await reader.call(.GET, "/v1/jobs/\(first)", token: Token.enqueue).status == 404)
                #expect(try await reader.call(.GET, "/v1/jobs/\(first)", token: Token.read).status == 200)
            }
        }
    }
}

/// Runs a second control plane with `configuration` over the same database and client as
/// `server`, while `body` runs with its address.
func withExtraServer<T: Sendable>(
    _ configuration: ServerConfiguration, on server: TestServer, _ body: @Sendable (String) async throws -> T
) async throws -> T {
    let (ports, sink) = AsyncStream.makeStream(of: Int.self)
    let extra = BatonServer(
        configuration: configuration, client: server.client, logger: server.db.logger,
        onListening: { sink.yield($0) })
    return try await withRunningServices([extra], logger: server.db.logger) {
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        return try await body("http://127.0.0.1:\(port)")
    }
}
