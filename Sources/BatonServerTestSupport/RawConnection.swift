import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A TCP connection that sends exactly the bytes it is given, when it is given them: for clients
/// a well-behaved HTTP library will not imitate (a body cut short, headers sent a byte at a time).
package final class RawConnection: Sendable {
    private let channel: any Channel
    private let received: Received

    private final class Received: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let bytes = Mutex<[UInt8]>([])
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            bytes.withLock { $0 += buffer.readableBytesView }
        }
    }

    /// Connects to `port` on loopback.
    package init(port: Int) async throws {
        let received = Received()
        self.received = received
        channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(received) }
            }
            .connect(host: "127.0.0.1", port: port).get()
    }

    /// The port of a base URL such as `http://127.0.0.1:8123`.
    package convenience init(base: String) async throws {
        try await self.init(port: Int(base.split(separator: ":").last!)!)
    }

    package func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text))
    }

    package func close() async {
        try? await channel.close()
    }

    /// Whether the server has closed the connection.
    package var isClosed: Bool { !channel.isActive }

    /// What the server has sent so far.
    package var text: String { String(decoding: received.bytes.withLock { $0 }, as: UTF8.self) }
}
