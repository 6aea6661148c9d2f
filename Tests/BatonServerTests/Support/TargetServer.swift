import Baton
import BatonTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A request as the target server received it.
struct Received: Sendable {
    var method: String
    /// `host:port` as the client addressed the server.
    var authority: String
    var path: String
    var query: String
    var headers: HTTPFields
    var body: String
    var bytes: [UInt8]
    var at: ContinuousClock.Instant

    subscript(header: String) -> String? { headers[HTTPField.Name(header)!] }
    var json: JSONValue? { try? JSONValue(parsing: body) }
}

/// A real HTTP server on loopback for the `http` task to call: it records every request and
/// answers as the test says.
final class TargetServer: Sendable {
    let base: String
    private let log = Mutex<[Received]>([])

    init(base: String) { self.base = base }

    var received: [Received] { log.withLock { $0 } }
    func received(path: String) -> [Received] { received.filter { $0.path == path } }

    fileprivate func record(_ request: Received) { log.withLock { $0.append(request) } }

    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: value.jsonText)))
    }

    static func text(_ text: String, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

/// Runs a target server answering with `respond` while `body` runs.
func withTargetServer<T: Sendable>(
    _ respond: @escaping @Sendable (Received) async throws -> Response,
    _ body: @Sendable (TargetServer) async throws -> T
) async throws -> T {
    let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
    let server = Mutex<TargetServer?>(nil)
    let responder = CallbackResponder { (request: Request, context: BasicRequestContext) -> Response in
        let bytes = try await request.body.collect(upTo: 16 << 20)
        let received = Received(
            method: request.method.rawValue, authority: request.head.authority ?? "", path: request.uri.path,
            query: request.uri.query ?? "",
            headers: request.headers, body: String(buffer: bytes), bytes: Array(buffer: bytes), at: .now)
        server.withLock { $0 }?.record(received)
        return try await respond(received)
    }
    var logger = Logger(label: "target")
    logger.logLevel = .warning
    let application = Application(
        responder: responder, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
        onServerRunning: { channel in portSink.yield(channel.localAddress?.port ?? 0) }, logger: logger)
    return try await withRunningServices([application], logger: logger) {
        var iterator = ports.makeAsyncIterator()
        let port = await iterator.next() ?? 0
        let target = TargetServer(base: "http://127.0.0.1:\(port)")
        server.withLock { $0 = target }
        return try await body(target)
    }
}
