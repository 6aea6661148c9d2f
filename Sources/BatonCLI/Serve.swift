import ArgumentParser
import BatonPostgres
import BatonServer
import Foundation
import Logging
import Metrics
import Prometheus

struct ServerOptions: ParsableArguments {
    @Option(help: "Address to listen on.")
    var host: String = "127.0.0.1"

    @Option(help: "Port to listen on (0: any free port).")
    var port: Int = 8080

    @Option(help: "Largest request body accepted, in bytes.")
    var maxBody: Int = 1 << 20

    @Flag(help: "Serve /metrics without a token, for a scraper that cannot send one (on a network you trust).")
    var metricsOpen = false

    @Option(help: "The longest a ?wait= holds a request (longer waits are cut to this).")
    var maxWait: Duration = .seconds(300)

    func configuration(tokens: APITokens) throws -> ServerConfiguration {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be within 0...65535") }
        guard maxBody >= 1024 else { throw ValidationError("--max-body must be at least 1024 bytes") }
        guard maxWait > .zero, maxWait <= .seconds(3600) else {
            throw ValidationError("--max-wait must be a duration from 1ms to 1h")
        }
        return ServerConfiguration(
            host: host, port: port, tokens: tokens, maxBodySize: maxBody, metricsRequireToken: !metricsOpen,
            maxWait: maxWait)
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the HTTP control plane (tokens from BATON_API_TOKENS or BATON_API_TOKEN).")

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var options: ServerOptions

    func run() async throws {
        let logger = makeLogger("baton.serve")
        guard let tokens = try environmentTokens() else {
            throw ValidationError(
                "no API tokens: set BATON_API_TOKENS=role:token,… (roles admin, enqueue, read) or BATON_API_TOKEN")
        }
        let serverConfiguration = try options.configuration(tokens: tokens)
        let (databaseConfiguration, postgres) = try await database.connect(logger: logger)
        let client = BatonClient(postgres: postgres, configuration: databaseConfiguration, logger: logger)
        let server = BatonServer(
            configuration: serverConfiguration, client: client, registry: Metrics.registry, logger: logger,
            onListening: { port in say("Baton API listening on http://\(serverConfiguration.host):\(port)") })
        try await runServices(postgres: postgres, main: [client, server], logger: logger) {
            try await requireMigrated(postgres, database: databaseConfiguration, logger: logger)
        }
    }
}

/// `BATON_API_TOKENS` or `BATON_API_TOKEN`, nil if neither is set; a malformed list is a usage error.
func environmentTokens() throws -> APITokens? {
    do {
        return try APITokens.fromEnvironment()
    } catch let error as ConfigurationError {
        throw ValidationError("BATON_API_TOKENS: \(error)")
    }
}

/// The process's metrics, exported by `/metrics`.
enum Metrics {
    static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }()
}
