import AsyncHTTPClient
import Baton
import BatonTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization
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

    /// `baton serve` over `db` with `environment`, and the address it listens on once it does.
    static func serve(_ db: TestDatabase, environment: [String: String?]) async throws -> (ChildProcess, String) {
        let serve = try await ChildProcess(
            try ChildProcess.builtBinary("baton"), ["serve", "--database-url", db.url, "--port", "0"],
            environment: environment)
        let address = try await eventually(timeout: .seconds(60), "the API to listen") {
            guard serve.isRunning else { throw TestFailure("the API exited: \(serve.standardError)") }
            return serve.standardOutput.firstMatch(of: /listening on (http:\/\/[0-9.:]+)/)?.1
        }
        return (serve, String(address))
    }

    /// The status of `GET /v1/queues` with `token`.
    static func status(_ address: String, token: String) async throws -> Int {
        var request = HTTPClientRequest(url: "\(address)/v1/queues")
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        return Int(try await HTTPClient.shared.execute(request, timeout: .seconds(10)).status.code)
    }

    /// `systemctl reload` sends SIGHUP whatever the tokens' source: without a file it is ignored,
    /// and the server goes on.
    @Test func sighupWithoutATokenFileLeavesTheServerRunning() async throws {
        try await TestDatabase.with { db async throws in
            var environment = Self.noTokens
            environment["BATON_API_TOKENS"] = "admin:env-admin-secret-0001"
            let (serve, address) = try await Self.serve(db, environment: environment)
            defer { if serve.isRunning { serve.signal(SIGKILL) } }
            serve.signal(SIGHUP)
            try await eventually("the signal to be logged") { serve.standardError.contains("SIGHUP ignored") }
            #expect(try await Self.status(address, token: "env-admin-secret-0001") == 200)
            #expect(serve.isRunning)
        }
    }

    /// Named tokens from a file: a file that does not read is refused at start with its line; on
    /// SIGHUP the file is read again while requests go on (none fails), a bad file keeps the
    /// tokens as they were; logs name the token, never its secret.
    @Test func tokensFromAFileAreReadAgainOnSighup() async throws {
        try await TestDatabase.with { db async throws in
            let file = FileManager.default.temporaryDirectory.appending(path: "baton-tokens-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: file) }
            func write(_ text: String) throws { try Data(text.utf8).write(to: file) }
            var environment = Self.noTokens
            environment["BATON_API_TOKENS_FILE"] = file.path

            try write("ops admin ops-secret-0000000001\nci enqueue:builds short\n")
            let refused = try await ChildProcess(
                try ChildProcess.builtBinary("baton"), ["serve", "--database-url", db.url, "--port", "0"],
                environment: environment)
            #expect(try await refused.waitForExit(timeout: .seconds(60)) != 0)
            #expect(
                refused.standardError.contains("\(file.path):2: the secret of \"ci\" is shorter than 16 characters"),
                "\(refused.standardError)")

            try write("ops admin ops-secret-0000000001\nold read old-secret-0000000001\n")
            let (serve, address) = try await Self.serve(db, environment: environment)
            defer { if serve.isRunning { serve.signal(SIGKILL) } }
            func status(_ token: String) async throws -> Int { try await Self.status(address, token: token) }
            #expect(try await status("old-secret-0000000001") == 200)
            #expect(try await status("new-secret-0000000001") == 401)

            // Requests with the token both files hold, all through the reloads.
            let stop = StopFlag()
            let answers = Task {
                var statuses: [Int] = []
                while !stop.isSet { statuses.append(try await status("ops-secret-0000000001")) }
                return statuses
            }
            try write("ops admin ops-secret-0000000001\nnew read:builds new-secret-0000000001\n")
            serve.signal(SIGHUP)
            try await eventually("the new file to be read") { try await status("new-secret-0000000001") == 200 }
            #expect(try await status("old-secret-0000000001") == 401)

            try write("ops admin ops-secret-0000000001\nnew root new-secret-0000000001\n")
            serve.signal(SIGHUP)
            try await eventually("the bad file to be reported") {
                // The whole line as logfmt writes it (quotes escaped).
                serve.standardError.contains(#"\#(file.path):2: the role \"root\" is not admin, enqueue or read"#)
            }
            #expect(try await status("new-secret-0000000001") == 200, "the tokens are kept as they were")
            stop.set()
            let statuses = try await answers.value
            #expect(!statuses.isEmpty && statuses.allSatisfy { $0 == 200 }, "\(Set(statuses))")
            #expect(serve.isRunning)
            #expect(serve.standardError.contains("token=ops"), "the request log names the token")
            #expect(!serve.standardError.contains("ops-secret"), "and never its secret")
        }
    }
}

/// Set once, read from another task.
private final class StopFlag: Sendable {
    private let value = Atomic(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
}
