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
}
