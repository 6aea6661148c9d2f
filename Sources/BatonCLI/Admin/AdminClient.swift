import AsyncHTTPClient
import Baton
import BatonAPI
import Foundation
import NIOCore
import NIOHTTP1

/// The control plane over HTTP, answers decoded into the wire types the server encodes them with
/// (`BatonAPI`), so the CLI and the server cannot drift apart. Every failure is an `AdminFailure`
/// whose message says what to do next.
struct AdminClient: Sendable {
    /// `http://host:port`, without a trailing slash.
    let base: String
    let token: String?

    /// One client for the process. A refused connection is reported at once rather than retried
    /// until the request's deadline (AsyncHTTPClient's default, right for servers, not for a CLI).
    static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout.connect = .seconds(5)
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    init(base: String, token: String?) throws {
        let trimmed = base.hasSuffix("/") ? String(base.dropLast()) : base
        guard let url = URL(string: trimmed), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw AdminFailure(.usage, "--url must be an http:// or https:// address, such as http://127.0.0.1:8080")
        }
        self.base = trimmed
        self.token = token
    }

    /// A 2xx answer.
    struct Reply {
        var status: Int
        var body: [UInt8]
    }

    /// Sends a request; a 2xx answer is returned, anything else thrown as an `AdminFailure`.
    func send(
        _ method: HTTPMethod, _ target: String, body: [UInt8]? = nil, headers: [(String, String)] = [],
        timeout: Duration = .seconds(30)
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: base + target)
        request.method = method
        request.headers.add(name: "User-Agent", value: "baton-cli/\(BatonVersion.current)")
        request.headers.add(name: "Accept", value: "application/json")
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let status: Int
        let bytes: [UInt8]
        do {
            let response = try await Self.http.execute(request, timeout: .milliseconds(timeout.milliseconds))
            status = Int(response.status.code)
            bytes = Array(buffer: try await response.body.collect(upTo: 256 << 20))
        } catch {
            throw AdminFailure(
                .unreachable,
                "cannot reach the Baton API at \(base): \(error)\n"
                    + "is `baton serve` running at \(base)? set --url or BATON_URL")
        }
        guard (200..<300).contains(status) else { throw failure(status: status, body: bytes) }
        return Reply(status: status, body: bytes)
    }

    /// Sends a request and decodes its answer as `T`.
    func call<T: Decodable>(
        _ method: HTTPMethod, _ target: String, as type: T.Type, body: [UInt8]? = nil,
        headers: [(String, String)] = [], timeout: Duration = .seconds(30)
    ) async throws -> T {
        try decode(T.self, from: try await send(method, target, body: body, headers: headers, timeout: timeout), target)
    }

    func decode<T: Decodable>(_ type: T.Type, from reply: Reply, _ target: String) throws -> T {
        do {
            return try JSONValue(parsing: reply.body).decode(as: T.self)
        } catch {
            throw AdminFailure(
                .failed,
                "the answer from \(base)\(target) is not what this baton \(BatonVersion.current) expects (\(error)); "
                    + "is --url a Baton API of the same version?")
        }
    }

    private func failure(status: Int, body: [UInt8]) -> AdminFailure {
        guard let problem = try? JSONValue(parsing: body).decode(as: ProblemDetails.self) else {
            let text = Text.truncate(Text.printable(String(decoding: body.prefix(200), as: UTF8.self)), to: 120)
            return AdminFailure(
                .failed, "\(base) answered HTTP \(status), not a Baton problem (\(text)); is --url a Baton API?")
        }
        let detail = Text.printable(problem.detail ?? problem.title)
        switch status {
        case 401:
            return AdminFailure(
                .unauthorized,
                token == nil
                    ? "no token: set --token or BATON_TOKEN (`baton dev` prints one)"
                    : "the server refused the token; set --token or BATON_TOKEN to a token it accepts")
        case 403:
            return AdminFailure(.unauthorized, "the token's role may not do this: \(detail); use an admin token")
        case 404:
            return AdminFailure(.notFound, detail)
        default:
            var message = "\(Text.printable(problem.title)): \(detail)"
            if let path = problem.path, !path.isEmpty { message += " (at \(Text.printable(path)))" }
            if problem.name == "unknown-task" { message += "; --unchecked enqueues it anyway" }
            return AdminFailure(.failed, message)
        }
    }
}
