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
/// Its timer is lazy: moving the deadline later (every request moves it twice) only writes a
/// field, and the timer, when it fires, waits again for the deadline of the moment; it is
/// scheduled anew only when a deadline comes sooner than it, about once per timeout, not per
/// request (two timers scheduled and cancelled per request cost `GET /healthz` ~10 %,
/// docs/benchmarks.md#the-deadlines-timer).
/// A cut body reaches the handler reading it as ``RequestTimeout``, which the problem middleware
/// answers as a client gone (`incomplete-request`, not a 500).
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let limits: ConnectionLimits
    /// When the client's time runs out, and what it has not done by then; nil while a request is
    /// being answered.
    private var deadline: (at: NIODeadline, reason: RequestTimeout)?
    /// The timer, due at `timerAt` (at or before `deadline`, or at a deadline since moved later).
    private var timer: Scheduled<Void>?
    private var timerAt = NIODeadline.distantFuture

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

    func handlerRemoved(context: ChannelHandlerContext) { stop() }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
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
        let at = NIODeadline.now() + TimeAmount(timeout)
        deadline = (at, reason)
        if timer == nil || at < timerAt { schedule(at, context) }
    }

    /// No deadline until the next ``arm(_:_:_:)``: the timer, if it fires meanwhile, does nothing.
    private func disarm() { deadline = nil }

    private func schedule(_ at: NIODeadline, _ context: ChannelHandlerContext) {
        timer?.cancel()
        timerAt = at
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: at) { bound.value.handler.fire(bound.value.context) }
    }

    private func fire(_ context: ChannelHandlerContext) {
        timer = nil
        guard let deadline else { return }
        guard deadline.at <= .now() else { return schedule(deadline.at, context) }
        context.fireErrorCaught(deadline.reason)
        context.close(promise: nil)
    }

    private func stop() {
        deadline = nil
        timer?.cancel()
        timer = nil
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
