import AsyncHTTPClient
import Baton
import BatonTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// `baton serve` and `baton dev` as an operator runs them: real processes, real HTTP.
@Suite(.timeLimit(.minutes(3)))
struct CLIServeTests {
    static let noTokens: [String: String?] = ["BATON_API_TOKENS": nil, "BATON_API_TOKEN": nil]

    @Test func serveRefusesToStartWithoutTokens() async throws {
        try await TestDatabase.with { db async throws in
            let child = try await ChildProcess(
                try ChildProcess.builtBinary("baton"), ["serve", "--database-url", db.url, "--port", "0"],
                environment: Self.noTokens)
            #expect(try await child.waitForExit(timeout: .seconds(60)) != 0)
            #expect(child.standardError.contains("BATON_API_TOKENS"))
            let bad = try await ChildProcess(
                try ChildProcess.builtBinary("baton"), ["serve", "--database-url", db.url, "--port", "0"],
                environment: ["BATON_API_TOKENS": "root:abcdefgh12345678"])
            #expect(try await bad.waitForExit(timeout: .seconds(60)) != 0)
            #expect(bad.standardError.contains("roles are admin, enqueue, read"))
        }
    }

    /// `baton dev` starts its own PostgreSQL, the API and a worker, and prints a token and a curl
    /// line that work; the admin commands run from its directory find it without being told;
    /// Ctrl-C (SIGINT) stops it all. In a directory closed to others (a clone under root's home),
    /// where PostgreSQL's user cannot enter as root runs it, the cluster lives in a temporary
    /// directory it names, and nothing of it is left after.
    @Test(arguments: [0o755, 0o700])
    func devPrintsATokenThatEnqueuesAJobThatRuns(permissions: Int) async throws {
        let data = FileManager.default.temporaryDirectory.appending(path: "baton-dev-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: permissions], ofItemAtPath: data.path)
        defer { try? FileManager.default.removeItem(at: data) }
        let dev = try await ChildProcess(
            try ChildProcess.builtBinary("baton"), ["dev", "--port", "0"], environment: Self.noTokens, directory: data)
        defer { if dev.isRunning { dev.signal(SIGKILL) } }
        try await eventually(timeout: .seconds(90), "baton dev to be ready") {
            dev.standardOutput.contains("Press Ctrl-C") || !dev.isRunning
        }
        let output = dev.standardOutput
        let api = try #require(
            output.firstMatch(of: /api: +(http:\/\/[0-9.:]+) +\(token: ([0-9a-f]+)\)/),
            "\(output)\n\(dev.standardError)")
        #expect(output.contains("curl -s -H \"Authorization: Bearer \(api.2)\""))
        #expect(output.contains("export BATON_URL=\(api.1) BATON_TOKEN=\(api.2)"))
        let cluster = try #require(output.firstMatch(of: /\(data in ([^,)]+)(, removed on exit)?/), "\(output)")
        let closed = permissions == 0o700 && getuid() == 0
        #expect((cluster.2 != nil) == closed, "\(output)")
        #expect(cluster.1.hasPrefix(data.path) != closed, "\(output)")
        let session = data.appending(path: ".baton/dev.json")
        let mode = try FileManager.default.attributesOfItem(atPath: session.path)[.posixPermissions] as? Int
        #expect(mode == 0o600, "the file holds a token")
        #expect(
            try JSONValue(parsing: Data(contentsOf: session)) == [
                "url": .string(String(api.1)), "token": .string(String(api.2)),
            ])

        var request = HTTPClientRequest(url: "\(api.1)/v1/jobs?wait=30s")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(api.2)")
        request.body = .bytes(
            ByteBuffer(string: #"{"input": 7, "stages": [{"task": "sleep", "args": {"ms": 10}}, {"task": "noop"}]}"#))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let job = try JSONValue(parsing: try await response.body.collect(upTo: 1 << 20).readableBytesView)
        #expect(response.status == .created)
        #expect(job["state"] == "completed")
        #expect(job["output"] == 7)

        // From the same directory, with no address or token given, the CLI reaches this server.
        let listed = try await ChildProcess(
            try ChildProcess.builtBinary("baton"), ["jobs", "list", "--json"],
            environment: ["BATON_URL": nil, "BATON_TOKEN": nil, "BATON_API_TOKEN": nil], directory: data)
        #expect(try await listed.waitForExit(timeout: .seconds(60)) == 0, "\(listed.standardError)")
        #expect(try JSONValue(parsing: listed.standardOutput)["jobs"]?.arrayValue?.count == 1)

        var unauthorized = HTTPClientRequest(url: "\(api.1)/v1/jobs")
        unauthorized.headers.add(name: "Authorization", value: "Bearer wrong-token")
        #expect(try await HTTPClient.shared.execute(unauthorized, timeout: .seconds(10)).status == .unauthorized)

        dev.signal(SIGINT)
        #expect(try await dev.waitForExit(timeout: .seconds(60)) == 0)
        #expect(!FileManager.default.fileExists(atPath: session.path), "removed when dev stops")
        if closed {
            let base = URL(fileURLWithPath: String(cluster.1)).deletingLastPathComponent()
            #expect(!FileManager.default.fileExists(atPath: base.path), "the temporary cluster is left behind")
        }
    }
}
