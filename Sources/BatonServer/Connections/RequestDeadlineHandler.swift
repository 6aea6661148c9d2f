import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Closes an HTTP/1 connection whose client is too slow to be worth a file descriptor: one that
/// has not sent a whole request head within ``ConnectionLimits/headerTimeout`` of connecting (or
/// of its previous response, within ``ConnectionLimits/idleTimeout``), or whose body has not
/// ended within ``ConnectionLimits/bodyTimeout`` of its head. A slowloris that drips its headers
/// a byte at a time, or a body that stalls, is cut off, while Hummingbird's own idle timeout only
/// sees requests it has already parsed.
///
/// It sits after the HTTP decoder, so it sees whole parts: the head, the body's pieces, the end.
/// A cut body reaches the handler reading it as ``RequestTimeout``, which the problem middleware
/// answers as a client gone (`incomplete-request`, not a 500).
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let limits: ConnectionLimits
    private var deadline: Scheduled<Void>?

    init(limits: ConnectionLimits) {
        self.limits = limits
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(limits.headerTimeout, RequestTimeout.head, context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(limits.headerTimeout, RequestTimeout.head, context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { disarm() }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: arm(limits.bodyTimeout, RequestTimeout.body, context)
        case .end: disarm()
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // A response ended: the next request has the idle timeout to arrive (Hummingbird's own
        // closes the connection then too; this one also catches a next head dripped slowly).
        if case .end = unwrapOutboundIn(data), deadline == nil {
            arm(limits.idleTimeout, RequestTimeout.head, context)
        }
        context.write(data, promise: promise)
    }

    private func arm(_ timeout: Duration, _ reason: RequestTimeout, _ context: ChannelHandlerContext) {
        disarm()
        let context = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = context.value.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            context.value.fireErrorCaught(reason)
            context.value.close(promise: nil)
        }
    }

    private func disarm() {
        deadline?.cancel()
        deadline = nil
    }
}

/// A client too slow to keep its connection (``RequestDeadlineHandler``).
enum RequestTimeout: Error, CustomStringConvertible {
    /// No whole request head within the header (or idle) timeout.
    case head
    /// The body did not end within the body timeout.
    case body

    var description: String {
        switch self {
        case .head: "no request head in time"
        case .body: "the request body did not arrive in time"
        }
    }
}

/// How long a client may take and how many may be connected at once (``ServerConfiguration``).
public struct ConnectionLimits: Sendable, Equatable {
    /// From connecting to the end of the first request's head.
    public var headerTimeout: Duration
    /// From a request's head to the end of its body.
    public var bodyTimeout: Duration
    /// From a response to the end of the next request's head on a kept-alive connection.
    public var idleTimeout: Duration
    /// Connections open at once; further ones wait in the listen backlog until one closes.
    public var maxConnections: Int

    public init(
        headerTimeout: Duration = .seconds(10), bodyTimeout: Duration = .seconds(60),
        idleTimeout: Duration = .seconds(75), maxConnections: Int = 1024
    ) {
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.maxConnections = maxConnections
    }
}
