import Logging
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

/// Opens a TCP connection to a PostgreSQL server and negotiates TLS on it as libpq does, before
/// PostgresNIO is given the channel to start the session over.
///
/// Why Baton negotiates TLS itself: PostgresNIO 1.33 builds its own `NIOSSLClientHandler`, and
/// swift-nio-ssl 2.37's host name check (`.fullVerification`) accepts a certificate whose IP
/// subjectAltName equals the address connected to even when a host *name* was asked for: a
/// certificate for `DNS:elsewhere.test, IP:127.0.0.1` passes for `localhost`, which psql refuses.
/// Here swift-nio-ssl checks the chain only, and ``ServerNameCheck`` checks the name libpq's way
/// once the handshake is done, before a byte of the session (the password among them) is sent.
/// `DatabaseTLSTests` "verify-full refuses a certificate for another name holding the address"
/// reproduces it.
///
/// The pool gets its connections through this (``DatabaseConnector``) by building on PostgresNIO's
/// own pool module (`_ConnectionPoolModule`, whose `ConnectionPool` takes a connection factory),
/// since `PostgresClient` takes no factory.
enum PostgresTLSChannel {
    /// How TLS is to be tried on one connection (``DatabaseTLS/Attempt``, with the host to check).
    struct Plan {
        var attempt: DatabaseTLS.Attempt
        /// Checked against the certificate under `verify-full`; sent as SNI unless an IP literal.
        var host: String
        var checkName: Bool
    }

    /// The server answered the SSLRequest with "no", and TLS was required.
    struct Unsupported: Error, CustomStringConvertible {
        var description: String { "the server does not accept TLS connections" }
    }

    /// The server's certificate is valid but not for the host named.
    struct WrongName: Error, CustomStringConvertible {
        var host: String
        var description: String {
            "TLS: the server's certificate does not name \(host) (sslmode=verify-full checks the host name"
                + " against its subjectAltName, as libpq does)"
        }
    }

    /// The server sent more than its one-byte answer to the SSLRequest before the handshake: bytes
    /// a man in the middle could have injected (CVE-2021-23222).
    struct UnexpectedBytes: Error, CustomStringConvertible {
        var description: String { "the server sent unencrypted data after its answer to the TLS request" }
    }

    /// A TCP channel to `host:port` with TLS set up as `plan` says, within `timeout` (a server
    /// that accepts and then says nothing is closed at the deadline); its pipeline then holds only
    /// the TLS handler, if any.
    static func open(
        host: String, port: Int, plan: Plan, timeout: Duration, on eventLoop: any EventLoop
    ) async throws -> any Channel {
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        let channel = try await ClientBootstrap(group: eventLoop).connectTimeout(TimeAmount(timeout))
            .connect(host: host, port: port).get()
        let timer = channel.eventLoop.scheduleTask(deadline: deadline) { channel.close(promise: nil) }
        defer { timer.cancel() }
        do {
            switch plan.attempt {
            case .plain:
                break
            case .prefer(let configuration), .require(let configuration):
                if try await askForTLS(on: channel) {
                    try await handshake(on: channel, configuration: configuration, plan: plan)
                } else if case .require = plan.attempt {
                    throw Unsupported()
                }
            }
            return channel
        } catch {
            try? await channel.close()
            if NIODeadline.now() >= deadline { throw ChannelError.connectTimeout(TimeAmount(timeout)) }
            throw error
        }
    }

    /// Sends the SSLRequest and reads the server's one-byte answer: whether it will speak TLS.
    private static func askForTLS(on channel: any Channel) async throws -> Bool {
        let answer = channel.eventLoop.makePromise(of: UInt8.self)
        try await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.addHandler(AnswerReader(answer: answer), name: AnswerReader.name)
        }.get()
        var request = channel.allocator.buffer(capacity: 8)
        request.writeInteger(Int32(8))
        request.writeInteger(Int32(80_877_103))
        try await channel.writeAndFlush(request)
        let byte = try await answer.futureResult.get()
        try await channel.pipeline.removeHandler(name: AnswerReader.name).get()
        switch byte {
        case UInt8(ascii: "S"): return true
        case UInt8(ascii: "N"): return false
        default: throw Unsupported()
        }
    }

    private static func handshake(on channel: any Channel, configuration: TLSConfiguration, plan: Plan) async throws {
        var configuration = configuration
        // The chain as configured; the name is checked below, libpq's way.
        if configuration.certificateVerification == .fullVerification {
            configuration.certificateVerification = .noHostnameVerification
        }
        let context = try NIOSSLContext(configuration: configuration)
        let serverName = ServerNameCheck(host: plan.host).hostAddress == nil ? plan.host : nil
        let done = channel.eventLoop.makePromise(of: Void.self)
        try await channel.eventLoop.submit {
            let operations = channel.pipeline.syncOperations
            try operations.addHandler(NIOSSLClientHandler(context: context, serverHostname: serverName))
            try operations.addHandler(HandshakeWaiter(done: done), name: HandshakeWaiter.name)
        }.get()
        try await done.futureResult.get()
        try await channel.pipeline.removeHandler(name: HandshakeWaiter.name).get()
        guard plan.checkName else { return }
        guard let certificate = try await channel.nioSSL_peerCertificate().get(),
            try ServerNameCheck(host: plan.host).matches(certificate)
        else { throw WrongName(host: plan.host) }
    }

    /// Reads the one byte answering an SSLRequest, and nothing more.
    private final class AnswerReader: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        static let name = "baton.ssl-answer"
        private var answer: EventLoopPromise<UInt8>?
        init(answer: EventLoopPromise<UInt8>) { self.answer = answer }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            if buffer.readableBytes == 1, let byte = buffer.readInteger(as: UInt8.self) {
                complete { $0.succeed(byte) }
            } else {
                complete { $0.fail(UnexpectedBytes()) }
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) { complete { $0.fail(error) } }
        func channelInactive(context: ChannelHandlerContext) { complete { $0.fail(ChannelError.eof) } }
        func handlerRemoved(context: ChannelHandlerContext) { complete { $0.fail(ChannelError.eof) } }

        private func complete(_ body: (EventLoopPromise<UInt8>) -> Void) {
            if let answer { body(answer) }
            answer = nil
        }
    }

    /// Waits for the TLS handshake's end.
    private final class HandshakeWaiter: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        static let name = "baton.tls-handshake"
        private var done: EventLoopPromise<Void>?
        init(done: EventLoopPromise<Void>) { self.done = done }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case TLSUserEvent.handshakeCompleted = event { complete { $0.succeed() } }
            context.fireUserInboundEventTriggered(event)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) { complete { $0.fail(error) } }
        func channelInactive(context: ChannelHandlerContext) { complete { $0.fail(ChannelError.eof) } }
        func handlerRemoved(context: ChannelHandlerContext) { complete { $0.fail(ChannelError.eof) } }

        private func complete(_ body: (EventLoopPromise<Void>) -> Void) {
            if let done { body(done) }
            done = nil
        }
    }
}
