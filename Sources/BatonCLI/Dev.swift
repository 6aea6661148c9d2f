import ArgumentParser
import BatonPostgres
import BatonServer
import BatonWorker
import Foundation
import LocalPostgres
import Logging
import Synchronization

struct Dev: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start a private PostgreSQL under ./.baton/, migrate it, and run the API and a worker in one process."
    )

    @Option(
        help:
            "Where the private cluster lives (as root, where the postgres user cannot enter it: a temporary directory, removed on exit)."
    )
    var data: String = ".baton/pgdata"

    @OptionGroup var runtime: RuntimeOptions
    @OptionGroup var options: WorkerOptions
    @OptionGroup var server: ServerOptions

    func run() async throws {
        let settings = try await runtime.settings(options, server)
        let logger = makeLogger("baton.dev")
        // api.tokens-file, api.tokens or api.token when set; else a fresh admin token, printed below.
        let configured = try settings.apiTokens()
        let generated = configured == nil ? APITokens.generateToken() : nil
        let tokens = configured ?? APITokens([(.admin, generated!)])
        let tokensFile = try settings.string(.apiTokensFile)
        let token =
            try generated
            ?? (tokensFile != nil ? "$TOKEN" : settings.list(.apiTokens) != nil ? "$ADMIN_TOKEN" : "$BATON_API_TOKEN")
        // The token the admin commands can use: the one generated, or the one admin token given.
        let adminToken = try generated ?? settings.string(.apiToken)
        let serverConfiguration = try settings.server(tokens: tokens)
        let workerConfiguration = try settings.worker()
        let tasks = try settings.builtinTasks()
        let sections = try settings.sections.checked()
        let dataDirectory = URL(fileURLWithPath: data, isDirectory: true).standardizedFileURL
        try FileManager.default.createDirectory(
            at: dataDirectory.deletingLastPathComponent(), withIntermediateDirectories: true)
        let cluster = try await LocalPostgres.start(
            LocalPostgres.Options(dataDirectory: dataDirectory, temporaryIfUnreachable: true), logger: logger)
        let dataNote =
            cluster.unreachableDataDirectory.map {
                "data in \(cluster.dataDirectory.path), removed on exit: the postgres user cannot enter \($0.path)"
            } ?? "data in \(cluster.dataDirectory.path)"
        let session = Mutex<DevSession?>(nil)
        do {
            let database = try DatabaseConfiguration(url: cluster.url)
            let pool = DatabasePool(configuration: database, logger: logger)
            let worker = Worker(
                pool: pool, tasks: tasks, configuration: workerConfiguration, logger: logger)
            let client = BatonClient(pool: pool, logger: logger, checkingArgs: tasks.argsCheck)
            let postgresURL = cluster.url
            let api = BatonServer(
                configuration: serverConfiguration, client: client, registry: Metrics.registry, logger: logger,
                onListening: { port in
                    let base = "http://\(serverConfiguration.host):\(port)"
                    let dev = DevSession(url: base, token: adminToken)
                    do {
                        try dev.write()
                        session.withLock { $0 = dev }
                    } catch {
                        logger.warning("cannot write \(DevSession.file)", metadata: ["error": "\(error)"])
                    }
                    say(
                        """
                        Baton dev is up.
                          api:      \(base)   (\(generated.map { "token: " + $0 } ?? tokensFile.map { "tokens from " + $0 } ?? "tokens from the environment"))
                          ui:       \(base)/ui   (sign in with that token)
                          database: \(postgresURL)   (\(dataNote))
                          worker:   \(worker.id) serving \(worker.configuration.queues.keys.sorted().joined(separator: ", "))
                        Try:
                          curl -s -H "Authorization: Bearer \(token)" -H 'Content-Type: application/json' \\
                            -d '{"stages": [{"task": "sleep", "args": {"ms": 100}}, {"task": "noop"}]}' \\
                            '\(base)/v1/jobs?wait=5s'
                          baton jobs list      (from this directory; elsewhere first:)
                          export BATON_URL=\(base) BATON_TOKEN=\(adminToken ?? token)
                        Press Ctrl-C to stop.
                        """)
                })
            try await runServices(pool: pool, main: [worker, client, api], logger: logger) {
                try await Migrator(schema: database.schema, logger: logger).migrate(pool)
                try await sections.save(pool, logger: logger)
            }
        } catch {
            session.withLock { $0?.remove() }
            await cluster.shutdown()
            throw error
        }
        session.withLock { $0?.remove() }
        await cluster.shutdown()
    }
}
