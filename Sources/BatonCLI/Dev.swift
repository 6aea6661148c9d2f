import ArgumentParser
import BatonPostgres
import BatonWorker
import Foundation
import LocalPostgres
import Logging

struct Dev: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start a private PostgreSQL under ./.baton/, migrate it and run a worker, in one process.")

    @Option(help: "Where the private cluster lives.")
    var data: String = ".baton/pgdata"

    @OptionGroup var options: WorkerOptions

    func run() async throws {
        let logger = makeLogger("baton.dev")
        let dataDirectory = URL(fileURLWithPath: data, isDirectory: true).standardizedFileURL
        try FileManager.default.createDirectory(
            at: dataDirectory.deletingLastPathComponent(), withIntermediateDirectories: true)
        let server = try await LocalPostgres.start(LocalPostgres.Options(dataDirectory: dataDirectory), logger: logger)
        do {
            let database = try DatabaseConfiguration(url: server.url)
            let postgres = database.makeClient(logger: logger)
            let worker = BatonWorker.Worker(
                postgres: postgres, database: database, tasks: TaskRegistry(),
                configuration: try options.configuration(), logger: logger)
            try await runServices(postgres: postgres, main: [worker], logger: logger) {
                try await Migrator(schema: database.schema, logger: logger).migrate(postgres)
                say(
                    """
                    Baton dev is up.
                      database: \(server.url)   (data in \(dataDirectory.path))
                      worker:   \(worker.id) serving \(worker.configuration.queues.keys.sorted().joined(separator: ", "))
                    Press Ctrl-C to stop.
                    """)
            }
        } catch {
            server.stop()
            throw error
        }
        server.stop()
    }
}
