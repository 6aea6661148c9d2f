import NIOCore
import NIOPosix
import Synchronization

/// A TCP proxy on loopback that holds every chunk for `delay` before passing it on, each way: a
/// round trip through it costs at least twice `delay`, as between hosts on a network.
///
/// `baton-bench --network-delay` puts it between Baton and PostgreSQL (this machine's kernel has no
/// `netem` qdisc to delay packets). With a delay of zero it is the same path without the wait, the
/// figure to compare with. It counts the chunks clients send: each is a flight of statements
/// written together, so their count is the round trips Baton made.
final class DelayProxy: Sendable {
    let port: Int
    private let channel: any Channel
    private let flights: Flights

    /// Listens on 127.0.0.1 (a free port) and connects each client to `host`:`targetPort`.
    static func start(
        to host: String, port targetPort: Int, delay: TimeAmount,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> DelayProxy {
        let flights = Flights()
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                // The upstream connection on the client's event loop: both halves share one
                // thread, so each direction's chunks keep their order.
                ClientBootstrap(group: inbound.eventLoop)
                    .channelOption(.socketOption(.tcp_nodelay), value: 1)
                    .connect(host: host, port: targetPort)
                    .flatMap { outbound in
                        do {
                            try outbound.pipeline.syncOperations.addHandler(
                                Relay(peer: inbound, delay: delay, flights: nil))
                            try inbound.pipeline.syncOperations.addHandler(
                                Relay(peer: outbound, delay: delay, flights: flights))
                        } catch {
                            return inbound.eventLoop.makeFailedFuture(error)
                        }
                        return inbound.eventLoop.makeSucceededVoidFuture()
                    }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return DelayProxy(channel: channel, port: channel.localAddress?.port ?? 0, flights: flights)
    }

    private init(channel: any Channel, port: Int, flights: Flights) {
        self.channel = channel
        self.port = port
        self.flights = flights
    }

    /// Chunks clients have sent through the proxy so far.
    var flightsToServer: Int { flights.count.load(ordering: .relaxed) }

    func stop() async {
        try? await channel.close()
    }
}

private final class Flights: Sendable {
    let count = Atomic(0)
}

/// One direction of a proxied connection: what is read here is written to `peer` after `delay`,
/// in the order it was read.
private final class Relay: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer

    private let peer: any Channel
    private let delay: TimeAmount
    private let flights: Flights?
    private var pending = CircularBuffer<ByteBuffer>()

    init(peer: any Channel, delay: TimeAmount, flights: Flights?) {
        self.peer = peer
        self.delay = delay
        self.flights = flights
    }

    /// The client's side starts reading once it is active, its upstream connected by then.
    func channelActive(context: ChannelHandlerContext) {
        context.read()
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        flights?.count.add(1, ordering: .relaxed)
        let bytes = unwrapInboundIn(data)
        guard delay > .zero else {
            peer.writeAndFlush(bytes, promise: nil)
            return
        }
        pending.append(bytes)
        // Every chunk waits the same delay, so the task scheduled for this one never runs before
        // the one of the chunk before: taking the oldest keeps the order whatever the ties.
        let peer = self.peer
        context.eventLoop.assumeIsolated().scheduleTask(in: delay) {
            if let next = self.pending.popFirst() { peer.writeAndFlush(next, promise: nil) }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.read()
    }

    func channelInactive(context: ChannelHandlerContext) {
        // Close the other side once what is pending has gone.
        let peer = self.peer
        context.eventLoop.assumeIsolated().scheduleTask(in: delay) { peer.close(promise: nil) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
