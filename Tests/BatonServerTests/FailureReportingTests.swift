import Baton
import BatonPostgres
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import Synchronization
import Testing

@testable import BatonWorker

/// Fails its first two attempts at each job, then returns its input.
struct FailTwice: BatonTask {
    static let attempts = Mutex([Int64: Int]())
    struct Flake: Error, CustomStringConvertible { var description: String { "flaked" } }

    func run(_ input: Int, context: StageContext) async throws -> Int {
        let attempt = Self.attempts.withLock { attempts in
            attempts[context.jobID, default: 0] += 1
            return attempts[context.jobID]!
        }
        if attempt <= 2 { throw Flake() }
        return input
    }
}

/// Failures reach people: every failed attempt and discard reaches the worker's Swift handler, and
/// each discard is POSTed to the discard webhook.
@Suite(.timeLimit(.minutes(2)))
struct FailureReportingTests {
    @Test func failedAttemptsReachTheHandlerAndDiscardsTheWebhook() async throws {
        let reported = Mutex<[StageFailure]>([])
        try await withTargetServer({ _ in TargetServer.text("thanks") }) { target async throws in
            try await TestDatabase.with { db async throws in
                var tasks = serverTestTasks
                tasks.register(FailTwice.self)
                var configuration = WorkerConfiguration(
                    queues: ["default": 4], lease: .seconds(2), schedulerInterval: .milliseconds(20))
                configuration.failures = FailureReporting(
                    handler: { failure in reported.withLock { $0.append(failure) } },
                    discardWebhook: URL(string: target.base + "/hooks/baton"))
                let client = BatonClient(pool: db.pool, logger: db.logger)
                let worker = Worker(pool: db.pool, tasks: tasks, configuration: configuration, logger: db.logger)
                try await withRunningServices([client, worker], logger: db.logger) {
                    let flaky = try await client.enqueue(
                        Chain(input: 3).then(FailTwice()).retry(.constant(.zero, attempts: 5)),
                        metadata: ["team": "ops"])
                    #expect(try await flaky.result() == 3)
                    let doomed = try await client.enqueue(
                        Chain(input: 1).then(FailFirst(key: "report-\(UUID())"), name: "charge"),
                        metadata: ["customer": .number(JSONNumber("12345678901234567890")!)])
                    #expect(try await client.waitUntilFinished(doomed.id).state == .discarded)

                    let hook = try await eventually("the discard webhook to be called") {
                        target.received(path: "/hooks/baton").first
                    }
                    #expect(hook.method == "POST")
                    let body = try #require(hook.json)
                    #expect(body["event"] == "job.discarded")
                    #expect(body["job"] == .number(JSONNumber(doomed.id)))
                    #expect(body["stage_name"] == "charge" && body["task"] == "fail-first")
                    #expect(body["error"]?.stringValue?.hasPrefix("first run of report-") == true)
                    #expect(body["metadata"] == ["customer": .number(JSONNumber("12345678901234567890")!)])

                    try await eventually("the handler to hear of all three failures") {
                        reported.withLock { $0.count } == 3
                    }
                    let failures = reported.withLock { $0 }
                    #expect(failures.filter { $0.jobID == flaky.id }.map(\.attempt) == [1, 2])
                    #expect(failures.filter { $0.jobID == flaky.id }.allSatisfy { $0.error == "flaked" })
                    #expect(failures.first { $0.jobID == flaky.id }?.metadata == ["team": "ops"])
                    #expect(failures.last?.jobID == doomed.id && failures.last?.outcome == .discarded)
                    #expect(target.received(path: "/hooks/baton").count == 1, "retries are not posted")
                }
            }
        }
    }
}
