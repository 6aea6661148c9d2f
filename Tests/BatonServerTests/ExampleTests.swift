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
    /// time, each three stages with the second in a lane, gathered in order.
    @Test func theFanOutExampleGathersEveryElementInOrder() async throws {
        let readme = try String(contentsOf: Self.root.appending(path: "README.md"), encoding: .utf8)
        #expect(readme.contains("-d @Examples/http/fan-out.json"))
        let example = try Self.fanOutExample()
        try await withServer { server async throws in
            let id = try await server.enqueue(example)
            let job = try await server.job(id) { $0["state"] == "completed" }
            #expect(job["output"] == example["input"], "\(job["output"]?.items.count ?? -1) elements")
        }
    }

    static func fanOutExample() throws -> JSONValue {
        try JSONValue(
            parsing: try String(contentsOf: root.appending(path: "Examples/http/fan-out.json"), encoding: .utf8))
    }
}

/// The fan-out example with 2,000 elements (issue 48: it must complete too). Its runs pass one
/// lane of width 1 one at a time, minutes under the full suite's load, which it would add to
/// every timing the other tests assert: `.ci/run` runs it on its own after the suite
/// (`BATON_LONG_TESTS=1`).
@Suite(.timeLimit(.minutes(10)), .enabled(if: ProcessInfo.processInfo.environment["BATON_LONG_TESTS"] == "1"))
struct FanOutAtScaleTests {
    @Test func theFanOutExampleOf2000ElementsGathersThemInOrder() async throws {
        guard case .object(var job) = try ExampleTests.fanOutExample() else { return }
        let numbers = JSONValue.array((1...2000).map { .number(JSONNumber($0)) })
        job["input"] = numbers
        let large = JSONValue.object(job)
        try await withServer { server async throws in
            let id = try await server.enqueue(large)
            let done = try await eventually(timeout: .seconds(540), "the 2,000-element map to complete") {
                let reply = try await server.call(.GET, "/v1/jobs/\(id)?wait=1s").json
                // (Not `cond ? reply : nil`: that `nil` would be JSON's null, and end the wait.)
                return reply["state"] == "completed" ? Optional(reply) : nil
            }
            #expect(
                done["output"] == numbers, "\(done["state"] ?? .null), \(done["output"]?.items.count ?? 0) elements")
        }
    }
}
