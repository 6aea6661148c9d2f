import ArgumentParser
import Baton
import BatonPostgres
import BatonServer
import BatonWorker
import Configuration
import Foundation
import Logging
import Metrics
import Prometheus

struct ServerOptions: ParsableArguments, SettingFlags {
    @Option(help: "Address to listen on (BATON_API_HOST; default 127.0.0.1).")
    var host: String?

    @Option(help: "Port to listen on, 0 for any free port (BATON_API_PORT; default 8080).")
    var port: Int?

    @Option(help: "Largest request body accepted, in bytes (BATON_API_MAX_BODY; default 1048576).")
    var maxBody: Int?

    @Flag(help: "Serve /metrics without a token, for a scraper that cannot send one (BATON_API_METRICS_OPEN).")
    var metricsOpen = false

    @Option(
        help: "The longest a ?wait= holds a request; longer waits are cut to this (BATON_API_MAX_WAIT; default 5m).")
    var maxWait: Duration?

    var flags: [Setting: ConfigContent] {
        var flags: [Setting: ConfigContent] = [:]
        flags.add(.apiHost, host.map(ConfigContent.string))
        flags.add(.apiPort, port.map(ConfigContent.int))
        flags.add(.apiMaxBody, maxBody.map(ConfigContent.int))
        flags.add(.apiMetricsOpen, metricsOpen ? .bool(true) : nil)
        flags.add(.apiMaxWait, maxWait.map { .string(DurationFormat.format($0)) })
        return flags
    }
}

extension Settings {
    /// The control plane's configuration; `tokens` when given (`baton dev`'s generated one), else
    /// `api.tokens` or `api.token`, which `baton serve` cannot run without.
    func server(tokens given: APITokens? = nil) throws -> ServerConfiguration {
        guard let tokens = try given ?? apiTokens() else {
            throw ValidationError(
                "no API tokens: set BATON_API_TOKENS_FILE, BATON_API_TOKENS=role:token,… (roles admin, enqueue, read) or BATON_API_TOKEN"
            )
        }
        var keys: [[UInt8]] = []
        for (index, key) in (try list(.apiFingerprintKeys) ?? []).enumerated() {
            guard key.count >= 32 else {
                throw ValidationError("api.fingerprint-keys: key \(index + 1) is shorter than 32 characters")
            }
            keys.append(Array(key.utf8))
        }
        let port = try int(.apiPort) ?? 8080
        guard (0...65535).contains(port) else { throw ValidationError("api.port must be within 0...65535") }
        let maxBody = try int(.apiMaxBody) ?? 1 << 20
        guard maxBody >= 1024 else { throw ValidationError("api.max-body must be at least 1024 bytes") }
        let maxWait = try duration(.apiMaxWait) ?? .seconds(300)
        guard maxWait > .zero, maxWait <= .seconds(3600) else {
            throw ValidationError("api.max-wait must be a duration from 1ms to 1h")
        }
        var configuration = ServerConfiguration(
            host: try string(.apiHost) ?? "127.0.0.1", port: port, tokens: tokens, maxBodySize: maxBody,
            metricsRequireToken: !(try bool(.apiMetricsOpen) ?? false), maxWait: maxWait)
        for (setting, timeout) in [
            (Setting.apiHeaderTimeout, \ConnectionLimits.headerTimeout), (.apiBodyTimeout, \.bodyTimeout),
            (.apiIdleTimeout, \.idleTimeout),
        ] {
            guard let value = try duration(setting) else { continue }
            guard value >= .milliseconds(100), value <= .seconds(3600) else {
                throw ValidationError("\(setting.key) must be a duration from 100ms to 1h")
            }
            configuration.connections[keyPath: timeout] = value
        }
        if let connections = try int(.apiMaxConnections) {
            guard connections >= 16 else { throw ValidationError("api.max-connections must be at least 16") }
            configuration.connections.maxConnections = connections
        }
        configuration.tokensFile = try string(.apiTokensFile)
        configuration.fingerprintKeys = keys
        return configuration
    }

    /// `api.tokens-file`, `api.tokens` (`role:token,…`) or `api.token` (one admin token); nil if
    /// none is set. A token file that does not read is refused with its line and problem.
    func apiTokens() throws -> APITokens? {
        do {
            if let file = try string(.apiTokensFile) {
                guard try self.list(.apiTokens) == nil, try string(.apiToken) == nil else {
                    throw ConfigurationError("set api.tokens-file or api.tokens (api.token), not both")
                }
                return try APITokens.load(file: file)
            }
            if let list = try self.list(.apiTokens), !list.isEmpty {
                return try APITokens.parse(list.joined(separator: ","))
            }
            if let token = try string(.apiToken) {
                guard token.count >= 16 else { throw ConfigurationError("api.token is shorter than 16 characters") }
                return APITokens([(.admin, token)])
            }
            return nil
        } catch let error as ConfigurationError {
            throw ValidationError("API tokens: \(error)")
        }
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the HTTP control plane (tokens from BATON_API_TOKENS_FILE, BATON_API_TOKENS or BATON_API_TOKEN)."
    )

    @OptionGroup var runtime: RuntimeOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var options: ServerOptions

    func run() async throws {
        let settings = try await runtime.settings(database, options)
        let logger = makeLogger("baton.serve")
        let serverConfiguration = try settings.server()
        let sections = try settings.sections.checked()
        let pool = try await settings.connect(logger: logger)
        let client = BatonClient(pool: pool, logger: logger, checkingArgs: TaskRegistry().argsCheck)
        let server = BatonServer(
            configuration: serverConfiguration, client: client, registry: Metrics.registry, logger: logger,
            onListening: { port in say("Baton API listening on http://\(serverConfiguration.host):\(port)") })
        try await runServices(pool: pool, main: [client, server], logger: logger) {
            try await requireMigrated(pool, logger: logger)
            try await sections.save(pool, logger: logger)
        }
    }
}

/// The process's metrics, exported by `/metrics` (bootstrapped before anything records one).
enum Metrics {
    static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        let factory = MetricsExposition.factory(registry: registry)
        MetricsSystem.bootstrap(factory)
        return registry
    }()
}
