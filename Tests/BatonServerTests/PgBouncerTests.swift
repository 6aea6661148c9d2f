import Baton
import BatonHTTPClient
import BatonPostgres
import BatonTestSupport
import Foundation
import LocalPostgres
import PostgresNIO
import Testing

/// The API and workers through a real PgBouncer, set up as the README says: the pool through the
/// bouncer, in transaction or session mode; in transaction mode the LISTEN connection straight to
/// PostgreSQL (`BATON_DATABASE_LISTEN_URL`); migrations straight to PostgreSQL.
@Suite(.serialized, .timeLimit(.minutes(4)))
struct PgBouncerTests {
    static let listenWarning = "do not reach the LISTEN connection"

    /// Transaction pooling without `database.listen-url`: LISTEN goes through the bouncer and hears
    /// nothing. The worker and the API each say so at start, with the fix.
    @Test func transactionPoolingWithoutAListenURLIsWarnedOf() async throws {
        try await withLocalPostgres(LocalPostgres.Options(fast: true)) { server in
            try await withLocalPgBouncer(in: server, mode: .transaction, poolSize: 10) { bouncer in
                try await TestDatabase.with(baseURL: server.url) { db async throws in
                    let viaBouncer =
                        bouncer.url(database: try #require(db.configuration.database))
                        + "&schema=\(db.configuration.schema)"
                    let environment: [String: String?] = [
                        "BATON_DATABASE_URL": viaBouncer, "BATON_API_TOKENS": "admin:pgbouncer-test-token-0123",
                        "BATON_API_TOKEN": nil, "DATABASE_URL": nil, "BATON_DATABASE_LISTEN_URL": nil,
                        "BATON_TEST_LOG_LEVEL": "info",
                    ]
                    let api = try await ChildProcess(
                        try ChildProcess.builtBinary("baton"), ["serve", "--port", "0"], environment: environment)
                    let worker = try await ChildProcess(
                        try ChildProcess.builtBinary("BatonTestWorker"), [viaBouncer, "default:2", "2000", "1000"],
                        environment: environment)
                    defer { for process in [api, worker] where process.isRunning { process.signal(SIGKILL) } }
                    for process in [api, worker] {
                        try await eventually(timeout: .seconds(30), "the warning") {
                            process.standardError.contains(Self.listenWarning)
                        }
                        #expect(process.standardError.contains("database.listen-url"), "the fix is named")
                    }
                }
            }
        }
    }

    @Test(arguments: [LocalPgBouncer.PoolMode.transaction, .session])
    func apiAndWorkersWorkThroughPgBouncer(mode: LocalPgBouncer.PoolMode) async throws {
        try await withLocalPostgres(LocalPostgres.Options(fast: true)) { server in
            // Three processes, each with a pool of 8 and a LISTEN connection. Transaction pooling
            // shares 10 server connections among them; session pooling gives each client connection
            // one of its own for as long as it is open, so it needs them all (27) or clients wait.
            try await withLocalPgBouncer(in: server, mode: mode, poolSize: mode == .transaction ? 10 : 30) { bouncer in

                // Migrated directly (`baton migrate` takes a session lock), as documented.
                try await TestDatabase.with(baseURL: server.url) { db async throws in
                    let schema = db.configuration.schema
                    let viaBouncer =
                        bouncer.url(database: try #require(db.configuration.database)) + "&schema=\(schema)"
                    try await db.createRunsTable()
                    var environment: [String: String?] = [
                        "BATON_DATABASE_URL": viaBouncer, "BATON_DATABASE_POOL_SIZE": "8",
                        "BATON_API_TOKENS": "admin:pgbouncer-test-token-0123", "BATON_API_TOKEN": nil,
                        "DATABASE_URL": nil,
                        "BATON_DATABASE_LISTEN_URL": nil, "BATON_TEST_LOG_LEVEL": "info",
                    ]
                    if mode == .transaction { environment["BATON_DATABASE_LISTEN_URL"] = db.url }

                    let api = try await ChildProcess(
                        try ChildProcess.builtBinary("baton"), ["serve", "--port", "0"], environment: environment)
                    var workers: [ChildProcess] = []
                    for _ in 0..<2 {
                        workers.append(
                            try await ChildProcess(
                                try ChildProcess.builtBinary("BatonTestWorker"),
                                [viaBouncer, "default:8", "2000", "5000"],
                                environment: environment))
                    }
                    defer {
                        for process in [api] + workers where process.isRunning { process.signal(SIGKILL) }
                    }
                    let address = try await eventually(timeout: .seconds(60), "the API to listen") {
                        guard api.isRunning else { throw TestFailure("the API exited: \(api.standardError)") }
                        return api.standardOutput.firstMatch(of: /listening on (http:\/\/[0-9.:]+)/)?.1
                    }
                    let url = try #require(URL(string: String(address)), "\(api.standardError)")
                    let client = try BatonHTTPClient(url: url, token: "pgbouncer-test-token-0123")

                    // Ordered stages over 6 lanes, behind a background stage, across both workers.
                    let lanes = 6
                    let jobs = try (0..<120).map { index in
                        try BatonHTTPClient.JobRequest(
                            ChainDefinition(
                                input: .number(index),
                                stages: [
                                    .task("record", args: ["min_ms": 0, "max_ms": 3]),
                                    .task("record", args: ["min_ms": 1, "max_ms": 6], lane: "lane-\(index % lanes)"),
                                ]))
                    }
                    let enqueued = try await client.enqueue(batch: jobs)
                    #expect(enqueued.count == 120)

                    // A long-polled enqueue answers with the finished job.
                    let waited = try await client.enqueue(
                        BatonHTTPClient.JobRequest(
                            ChainDefinition(input: 7, stages: [.task("record", args: ["min_ms": 5])])),
                        wait: .seconds(60))
                    #expect(waited.job.state == .completed)
                    #expect(waited.job.output == 7)

                    // A running stage is cancelled: the worker hears of it on its LISTEN connection.
                    let sleeper = try await client.enqueue(
                        BatonHTTPClient.JobRequest(
                            ChainDefinition(input: .null, stages: [.task("sleep", args: ["ms": 120_000])])))
                    try await eventually("the sleeping stage to run") {
                        try await client.job(sleeper.job.id).state == .running
                    }
                    _ = try await client.cancel(sleeper.job.id)
                    let cancelled = try await client.waitUntilFinished(sleeper.job.id, timeout: .seconds(30))
                    #expect(cancelled.state == .cancelled)
                    // The job is marked at once; the stage stops only when its worker hears the NOTIFY
                    // (through transaction pooling, without the direct LISTEN connection, it never does).
                    try await eventually(timeout: .seconds(20), "the sleeping stage to stop") {
                        workers.contains { $0.standardError.contains("stage cancelled") }
                    }

                    for job in enqueued {
                        let finished = try await client.waitUntilFinished(job.id, timeout: .seconds(60))
                        #expect(finished.state == .completed, "job \(job.id)")
                    }
                    for process in [api] + workers { process.signal(SIGTERM) }
                    for process in [api] + workers {
                        #expect(try await process.waitForExit(timeout: .seconds(30)) == 0, "\(process.standardError)")
                        #expect(!process.standardError.contains(Self.listenWarning), "set up as documented")
                    }

                    // Nothing lost, nothing run twice, never two stages of one lane at once.
                    #expect(
                        try await db.values("SELECT count(*)::int FROM \(unescaped: schema).jobs", as: Int.self) == [
                            122
                        ])
                    #expect(
                        try await db.values(
                            "SELECT count(*)::int FROM \(unescaped: schema).test_runs WHERE stage = 1", as: Int.self)
                            == [120])
                    #expect(try await db.laneOverlaps(stage: 1) == 0)
                    #expect(
                        try await db.values(
                            "SELECT count(DISTINCT pid)::int FROM \(unescaped: schema).test_runs", as: Int.self) == [2])
                }
            }
        }
    }
}
