import Baton
import BatonServerTestSupport
import BatonWorker
import Foundation
import Testing

/// What the worker says about the attempts it runs.
@Suite struct WorkerLogTests {
    /// Fails its first attempt (retried by policy), succeeds after.
    struct Flaky: BatonTask {
        static let name = "flaky"
        func run(_ input: Int, context: StageContext) async throws -> Int {
            guard context.attempt > 1 else { throw TaskFailure.retry(after: .milliseconds(20), "not yet") }
            return input
        }
    }

    /// A failed attempt that will be retried is a warning naming the job, stage, attempt, error and
    /// delay; a stage that fails for good is an error; a success says nothing above debug.
    @Test func failedAttemptsRetriesAndDiscardsAreLogged() async throws {
        var tasks = serverTestTasks
        tasks.register(Flaky.self)
        let logs = LogCapture()
        try await withServer(worker: tasks, workerLogger: logs.logger()) { server async throws in
            let retried = try await server.enqueue(["stages": [["task": "flaky", "max_attempts": 3]], "input": 5])
            _ = try await server.job(retried) { $0["state"] == "completed" }
            let key = "log-\(UUID())"
            let discarded = try await server.enqueue(
                ["stages": [["task": "fail-first", "args": ["key": .string(key)], "max_attempts": 1]], "input": 1])
            _ = try await server.job(discarded) { $0["state"] == "discarded" }

            let lines = logs.text.split(separator: "\n")
            let retry = try #require(lines.first { $0.contains("stage failed; retrying") }, "\(logs.text)")
            #expect(retry.hasPrefix("warning"))
            for field in ["job": "\(retried)", "stage": "0", "attempt": "1", "task": "flaky", "error": "not yet"] {
                #expect(retry.contains("\"\(field.key)\": \(field.value)"), "\(retry)")
            }
            #expect(retry.contains("\"retry_in\": 20ms"), "\(retry)")
            let discard = try #require(lines.first { $0.contains("stage failed; job discarded") }, "\(logs.text)")
            #expect(discard.hasPrefix("error"))
            #expect(discard.contains("\"job\": \(discarded)") && discard.contains("first run of \(key) fails"))
            #expect(
                !lines.contains {
                    $0.contains("\"job\": \(retried)") && $0.contains("attempt\": 2") && !$0.hasPrefix("debug")
                })
        }
    }
}
