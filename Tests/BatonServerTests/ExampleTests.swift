import Baton
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import Testing

/// The Swift examples of docs/swift.md are the files under `Examples/`, word for word, and they
/// work: each is built with the package and run here against a real database or server.
@Suite(.timeLimit(.minutes(3)))
struct ExampleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test(arguments: ["Examples/QuickStart/main.swift", "Examples/HTTPEnqueue/main.swift"])
    func theREADMEShowsTheExampleAsItIs(_ file: String) throws {
        let guide = try String(contentsOf: Self.root.appending(path: "docs/swift.md"), encoding: .utf8)
        let example = try String(contentsOf: Self.root.appending(path: file), encoding: .utf8)
        #expect(guide.contains("```swift\n" + example + "```"), "docs/swift.md no longer shows \(file) as it is")
    }

    @Test func theQuickStartRunsAChainWithItsOwnWorker() async throws {
        try await TestDatabase.with { db async throws in
            let child = try await ChildProcess(try ChildProcess.builtBinary("BatonQuickStart"), [db.url])
            #expect(try await child.waitForExit(timeout: .seconds(90)) == 0, "\(child.standardError)")
            #expect(child.standardOutput == "HELLO, BATON!\n")
        }
    }

    @Test func theHTTPExampleEnqueuesOverHTTPAndGetsItsNumberBackExactly() async throws {
        try await withServer { server async throws in
            let child = try await ChildProcess(
                try ChildProcess.builtBinary("BatonHTTPEnqueue"), [server.base, Token.admin])
            #expect(try await child.waitForExit(timeout: .seconds(90)) == 0, "\(child.standardError)")
            #expect(child.standardOutput == "completed {\"order\":9007199254740993}\n")
        }
    }

    /// `Examples/http/fan-out.json`, which the README posts: a map of 50 numbers, ten runs at a
    /// time, each three stages with the second in a lane, gathered in order; the same with 2,000.
    @Test func theFanOutExampleGathersEveryElementInOrder() async throws {
        let readme = try String(contentsOf: Self.root.appending(path: "README.md"), encoding: .utf8)
        #expect(readme.contains("-d @Examples/http/fan-out.json"))
        let example = try JSONValue(
            parsing: try String(contentsOf: Self.root.appending(path: "Examples/http/fan-out.json"), encoding: .utf8))
        try await withServer { server async throws in
            let id = try await server.enqueue(example)
            let job = try await server.job(id) { $0["state"] == "completed" }
            #expect(job["output"] == example["input"])

            guard case .object(var large) = example else { return }
            let numbers = JSONValue.array((1...2000).map { .number(JSONNumber($0)) })
            large["input"] = numbers
            let big = try await server.enqueue(.object(large))
            // 2,000 runs through one lane of width 1: longer than `job(_:until:)` waits on a loaded machine.
            let done = try await eventually(timeout: .seconds(150), "the 2,000-element map to complete") {
                let reply = try await server.call(.GET, "/v1/jobs/\(big)?wait=1s").json
                return reply["state"] == "completed" ? reply : nil
            }
            #expect(done["output"] == numbers)
        }
    }
}
