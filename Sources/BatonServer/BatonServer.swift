import BatonAPI
import BatonPostgres
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import OpenAPIHummingbird
import Prometheus
import ServiceLifecycle
import UnixSignals

/// Baton's HTTP control plane: enqueue, inspect and steer jobs over JSON (see `/openapi.json`).
///
/// Run it in a `ServiceGroup` next to the `PostgresClient` and the `BatonClient` it uses (which
/// wakes workers after enqueues and wakes `?wait=` requests when jobs finish):
///
/// ```swift
/// let server = BatonServer(configuration: .init(tokens: tokens), client: baton, logger: logger)
/// let group = ServiceGroup(services: [postgres, baton, server], logger: logger)
/// ```
public struct BatonServer: Service {
    let application: Application<RouterResponder<BatonRequestContext>>
    let access: Access
    let logger: Logger

    /// - Parameters:
    ///   - registry: where `/metrics` reads from; bootstrap swift-metrics with a
    ///     `PrometheusMetricsFactory` on it to see request and enqueue metrics there.
    ///   - onListening: called with the port once the server accepts connections.
    public init(
        configuration: ServerConfiguration, client: BatonClient, registry: PrometheusCollectorRegistry? = nil,
        logger: Logger, onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) {
        let api = API(
            client: client, catalog: WorkerCatalog(store: client.store, window: configuration.taskWindow),
            configuration: configuration, registry: registry)
        access = api.access
        self.logger = logger
        application = Application(
            router: Self.router(api),
            server: .http1(
                configuration: .init(
                    additionalChannelHandlers: [RequestDeadlineHandler(limits: configuration.connections)],
                    idleTimeout: TimeAmount(configuration.connections.idleTimeout))),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "baton",
                availableConnectionsDelegate: MaximumAvailableConnections(
                    configuration.connections.maxConnections, logger: logger)),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? configuration.port) },
            logger: logger)
    }

    /// Serves until shut down. `SIGHUP` reads the token file again (with tokens from a file), and
    /// is otherwise logged and ignored: a `systemctl reload` must not stop the server.
    public func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await application.run() }
            group.addTask {
                // The database's fingerprint key, before the first request needs it (a request
                // still reads it itself if the database is away now).
                _ = try? await access.keys()
                for await _ in hangups { access.reload(logger: logger) }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    /// Every operation of the OpenAPI document, registered by the generated code, behind the
    /// checks it declares (roles, query parameters, the body); every other method on those paths is
    /// a 405 naming the allowed ones, and any error a problem+json.
    static func router(_ api: API) -> Router<BatonRequestContext> {
        let document = APIDocument.shared
        let router = Router(context: BatonRequestContext.self)
        router.add(middleware: RequestLogMiddleware(level: api.configuration.requestLogLevel))
        router.add(middleware: MetricsMiddleware())
        // A span per request (a no-op until the process bootstraps a tracer); enqueues nest in it.
        router.add(middleware: TracingMiddleware())
        router.add(middleware: ProblemMiddleware(allowed: document.allowedMethods))
        // The document and the generated code come from the same file: registration cannot fail.
        try! api.registerHandlers(
            on: router, configuration: .baton,
            middlewares: [
                AccessMiddleware(
                    access: api.access, document: document,
                    metricsOpen: !api.configuration.metricsRequireToken),
                QueryParametersMiddleware(document: document), RawHeaderValuesServerMiddleware(),
                ExactJSONServerMiddleware(maxBodySize: api.configuration.maxBodySize),
                RequestDecodingMiddleware(document: document),
            ])
        // The web dashboard at /ui, over the same operations.
        Dashboard(api: api).register(on: router)
        // The usual methods get routes of their own, so that `/v1/jobs/batch` answers 405 rather
        // than reaching `/v1/jobs/{id}`; any other method (QUERY, PROPFIND …) is answered by the
        // problem middleware.
        let usual: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options, .trace]
        for (path, allowed) in document.allowedMethods.all {
            for method in usual where !allowed.contains(method) {
                router.on(RouterPath(path), method: method) { request, _ -> Response in
                    throw Problem.methodNotAllowed(request.method, path: path, allow: allowed)
                }
            }
        }
        return router
    }
}
