import ArgumentParser
import BatonPostgres
import Foundation
import Logging
import PostgresNIO

struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .customLong("database-url"),
        help: "postgres://user:password@host:port/database (default: $BATON_DATABASE_URL, then $DATABASE_URL).")
    var url: String?

    @Option(help: "PostgreSQL schema of Baton's tables.")
    var schema: String?

    func configuration() throws -> DatabaseConfiguration {
        guard
            var configuration = try url.map({ try DatabaseConfiguration(url: $0) })
                ?? DatabaseConfiguration.fromEnvironment()
        else {
            throw ValidationError("no database: pass --database-url or set BATON_DATABASE_URL (or use `baton dev`)")
        }
        if let schema { configuration = try configuration.inSchema(schema) }
        return configuration
    }

    /// The configuration and a pool for it, once the database has answered (an unreachable one
    /// is reported at once with PostgreSQL's own message).
    func connect(logger: Logger) async throws -> (DatabaseConfiguration, PostgresClient) {
        let configuration = try configuration()
        try await configuration.checkConnection(logger: logger)
        return (configuration, configuration.makeClient(logger: logger))
    }
}

/// Runs `body` with a pool connected to `database` (its `run()` going alongside); reports an
/// unreachable database at once with PostgreSQL's own message.
func withPostgres<T: Sendable>(
    _ database: DatabaseConfiguration, logger: Logger, _ body: @Sendable (PostgresClient) async throws -> T
) async throws -> T {
    try await database.checkConnection(logger: logger)
    let client = database.makeClient(logger: logger)
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            await client.run()
            return nil
        }
        defer { group.cancelAll() }
        return try await body(client)
    }
}

/// Fails unless the schema is at this binary's version.
func requireMigrated(_ client: PostgresClient, database: DatabaseConfiguration, logger: Logger) async throws {
    let version = try await Migrator(schema: database.schema, logger: logger).currentVersion(client)
    guard version >= Migrator.latestVersion else {
        throw ValidationError(
            "the database schema \(database.schema) is at version \(version), this binary needs \(Migrator.latestVersion): run `baton migrate`"
        )
    }
}
