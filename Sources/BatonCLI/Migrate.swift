import ArgumentParser
import BatonPostgres

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create or upgrade Baton's schema (the SQL is built into this binary).")

    @OptionGroup var runtime: RuntimeOptions
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let settings = try await runtime.settings(database)
        let logger = makeLogger("baton.migrate")
        let configuration = try settings.database()
        let applied = try await withPostgres(configuration, logger: logger) { pool in
            try await Migrator(schema: configuration.schema, logger: logger).migrate(pool)
        }
        say(
            applied.isEmpty
                ? "schema \(configuration.schema) is up to date (version \(Migrator.latestVersion))"
                : "applied \(applied.joined(separator: ", ")) to schema \(configuration.schema)")
    }
}
