import NIOCore
import NIOPosix
import Synchronization

/// A forward proxy on loopback that tunnels `CONNECT host:port` (how AsyncHTTPClient goes through
/// a proxy, for `http://` and `https://` alike) and records each tunnel asked for.
final class ConnectProxy: Sendable {
    struct Tunnel: Sendable, Equatable {
        var target: String
        var proxyAuthorization: String?
    }

    let port: Int
    private let log = Mutex<[Tunnel]>([])

    init(port: Int) { self.port = port }

    var tunnels: [Tunnel] { log.withLock { $0 } }

    fileprivate func record(_ tunnel: Tunnel) { log.withLock { $0.append(tunnel) } }
}

/// Runs a `ConnectProxy` while `body` runs.
func withConnectProxy<T: Sendable>(_ body: @Sendable (ConnectProxy) async throws -> T) async throws -> T {
    typealias Connection = NIOAsyncChannel<ByteBuffer, ByteBuffer>
    let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .bind(host: "127.0.0.1", port: 0) { channel in
            channel.eventLoop.makeCompletedFuture { try Connection(wrappingChannelSynchronously: channel) }
        }
    let proxy = ConnectProxy(port: server.channel.localAddress?.port ?? 0)

    @Sendable func tunnel(_ connection: Connection) async throws {
        try await connection.executeThenClose { inbound, outbound in
            var requests = inbound.makeAsyncIterator()
            var head = ByteBuffer()
            let end = Array("\r\n\r\n".utf8)
            while head.readableBytesView.firstRange(of: end) == nil {
                guard var chunk = try await requests.next() else { return }
                head.writeBuffer(&chunk)
            }
            let split = head.readableBytesView.firstRange(of: end)!
            let text = String(decoding: head.readableBytesView[..<split.lowerBound], as: UTF8.self)
            head.moveReaderIndex(to: split.upperBound)
            let lines = text.components(separatedBy: "\r\n")
            let words = lines[0].split(separator: " ")
            guard words.count == 3, words[0] == "CONNECT", let colon = words[1].lastIndex(of: ":"),
                let port = Int(words[1][words[1].index(after: colon)...])
            else {
                try await outbound.write(
                    ByteBuffer(string: "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n"))
                return
            }
            let authorization = lines.dropFirst().first { $0.lowercased().hasPrefix("proxy-authorization:") }
                .map { String($0.dropFirst("proxy-authorization:".count)).trimmingCharacters(in: .whitespaces) }
            proxy.record(.init(target: String(words[1]), proxyAuthorization: authorization))
            let upstream = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: String(words[1][..<colon]), port: port) { channel in
                    channel.eventLoop.makeCompletedFuture { try Connection(wrappingChannelSynchronously: channel) }
                }
            try await outbound.write(ByteBuffer(string: "HTTP/1.1 200 Connection Established\r\n\r\n"))
            try await upstream.executeThenClose { answers, forward in
                if head.readableBytes > 0 { try await forward.write(head) }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { for try await chunk in answers { try await outbound.write(chunk) } }
                    while let chunk = try await requests.next() { try await forward.write(chunk) }
                    group.cancelAll()
                }
            }
        }
    }

    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            try await server.executeThenClose { connections in
                try await withThrowingDiscardingTaskGroup { tunnels in
                    for try await connection in connections {
                        tunnels.addTask { try? await tunnel(connection) }
                    }
                }
            }
        }
        defer { group.cancelAll() }
        return try await body(proxy)
    }
}
