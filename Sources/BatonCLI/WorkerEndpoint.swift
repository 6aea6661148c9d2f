import Baton
import BatonServer
import Hummingbird
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle

/// `baton worker --metrics-port`: `/metrics` (Prometheus text, no token: bind it where only the
/// scraper reaches) and `/healthz`, for a worker process, which has no API of its own.
///
/// `/healthz` answers 503 `{"status": "stalled", "loops": […]}` while `stalled` names loops that
/// have stopped coming round (`Worker.stalledLoops(at:)`): a liveness probe restarts the process.
struct WorkerEndpoint: Service {
    let application: Application<RouterResponder<BasicRequestContext>>

    init(
        host: String, port: Int, registry: PrometheusCollectorRegistry, logger: Logger,
        stalled: @escaping @Sendable () -> [String] = { [] },
        onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) {
        let router = Router()
        router.get("/metrics") { _, _ -> Response in
            let bytes = MetricsExposition.page(of: registry)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
        router.get("/healthz") { _, _ -> Response in
            let loops = stalled()
            let body: JSONValue =
                loops.isEmpty ? ["status": "ok"] : ["status": "stalled", "loops": .array(loops.map { .string($0) })]
            return Response(
                status: loops.isEmpty ? .ok : .serviceUnavailable, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: body.jsonText)))
        }
        application = Application(
            router: router,
            configuration: .init(address: .hostname(host, port: port), serverName: "baton"),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? port) },
            logger: logger)
    }

    func run() async throws {
        try await application.run()
    }
}
