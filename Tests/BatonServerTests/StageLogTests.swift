import Baton
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import Testing

/// What a task logs through `context.logger` is kept with its attempt, shown by the API, and cut
/// to its last 64 KiB.
@Suite(.timeLimit(.minutes(2)))
struct StageLogTests {
    @Test func eachAttemptKeepsWhatItsTaskLogged() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue([
                "stages": [
                    [
                        "task": "chatty", "args": ["lines": 2, "fail_first": true],
                        "backoff": ["kind": "constant", "initial": "1ms"],
                    ],
                    ["task": "noop"],
                ]
            ])
            let job = try await server.job(id) { $0["state"] == "completed" }
            let stages = job["stages"]?.items ?? []
            let failed = try #require(stages.first?["errors"]?.items.first?["log"]?.stringValue, "\(job)")
            #expect(failed.split(separator: "\n").count == 2)
            #expect(failed.contains("info line 1 of attempt 1 n=1") && failed.contains("line 2 of attempt 1"))
            #expect(!failed.contains("job=") && !failed.contains("attempt=1"), "the attempt is where it is kept")
            let completed = try #require(stages.first?["log"]?.stringValue)
            #expect(completed.contains("line 1 of attempt 2") && !completed.contains("attempt 1"))
            #expect(stages.last?["log"] == nil, "noop logs nothing")
        }
    }

    @Test func anAttemptKeepsTheLast64KiBOfItsLog() async throws {
        try await withServer { server async throws in
            let text = String(repeating: "x", count: 990)
            let id = try await server.enqueue([
                "stages": [["task": "chatty", "args": ["lines": 100, "text": .string(text)]]]
            ])
            let job = try await server.job(id) { $0["state"] == "completed" }
            let log = try #require(job["stages"]?.items.first?["log"]?.stringValue)
            let lines = log.split(separator: "\n")
            #expect(log.utf8.count <= 64 * 1024 + 200)
            #expect(
                lines.first?.hasPrefix("[") == true && lines.first?.contains("earlier lines") == true,
                "\(lines.first ?? "")")
            #expect(lines.last?.contains("\(text) 100 of attempt 1") == true, "the newest lines are kept")
            #expect(!log.contains("\(text) 1 of attempt 1 "), "the oldest are cut")
        }
    }
}
