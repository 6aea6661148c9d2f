import ArgumentParser
import BatonPostgres
import BatonWorker
import Configuration
import Foundation
import Logging
import PostgresNIO

struct DatabaseOptions: ParsableArguments, SettingFlags {
    @Option(
        name: .customLong("database-url"),
        help: "postgres://user:password@host:port/database (BATON_DATABASE_URL, DATABASE_URL).")
    var url: String?

    @Option(help: "PostgreSQL schema of Baton's tables (BATON_DATABASE_SCHEMA; default baton).")
    var schema: String?

    @Option(help: "Connections in this process's pool (BATON_DATABASE_POOL_SIZE; default 20).")
    var poolSize: Int?

    @Option(
        name: .customLong("listen-url"),
        help:
            "PostgreSQL itself, for the LISTEN connection, when --database-url is a PgBouncer in transaction mode (BATON_DATABASE_LISTEN_URL)."
    )
    var listenURL: String?

    @Option(
        help: "TLS: disable, allow, prefer, require, verify-ca or verify-full, as in libpq (BATON_DATABASE_SSLMODE).")
    var sslmode: String?

    @Option(help: "PEM file of the CAs to check the server against, or `system` (BATON_DATABASE_SSLROOTCERT).")
    var sslrootcert: String?

    @Option(help: "Client certificate, PEM (BATON_DATABASE_SSLCERT).")
    var sslcert: String?

    @Option(help: "The client certificate's private key, PEM (BATON_DATABASE_SSLKEY).")
    var sslkey: String?

    var flags: [Setting: ConfigContent] {
        var flags: [Setting: ConfigContent] = [:]
        flags.add(.databaseURL, url.map(ConfigContent.string))
        flags.add(.databaseSchema, schema.map(ConfigContent.string))
        flags.add(.databasePoolSize, poolSize.map(ConfigContent.int))
        flags.add(.databaseListenURL, listenURL.map(ConfigContent.string))
        flags.add(.databaseSSLMode, sslmode.map(ConfigContent.string))
        flags.add(.databaseSSLRootCert, sslrootcert.map(ConfigContent.string))
        flags.add(.databaseSSLCert, sslcert.map(ConfigContent.string))
        flags.add(.databaseSSLKey, sslkey.map(ConfigContent.string))
        return flags
    }
}

extension Settings {
    /// The database to use: `database.url`, in `database.schema` (else the URL's `?schema=`).
    func database() throws -> DatabaseConfiguration {
        guard let url = try string(.databaseURL) else {
            throw ValidationError("no database: pass --database-url or set BATON_DATABASE_URL (or use `baton dev`)")
        }
        // TLS settings given to Baton win over the URL's, which win over libpq's PGSSL* variables.
        var tlsSettings: [String: String] = [:]
        for (parameter, setting) in [
            ("sslmode", Setting.databaseSSLMode), ("sslrootcert", .databaseSSLRootCert), ("sslcert", .databaseSSLCert),
            ("sslkey", .databaseSSLKey),
        ] {
            tlsSettings[parameter] = try string(setting)
        }
        var configuration: DatabaseConfiguration
        do {
            configuration = try DatabaseConfiguration(url: url, environment: environment, tlsSettings: tlsSettings)
        } catch let error as ConfigurationError {
            // A TLS file's problem names its setting already.
            throw ValidationError(error.description.hasPrefix("ssl") ? "\(error)" : "database.url: \(error)")
        }
        if let listenURL = try string(.databaseListenURL) {
            do {
                configuration = try configuration.listening(at: listenURL)
            } catch let error as ConfigurationError {
                throw ValidationError("database.listen-url: \(error)")
            }
        }
        if let schema = try string(.databaseSchema) { configuration = try configuration.inSchema(schema) }
        if let size = try int(.databasePoolSize) {
            guard (1...1000).contains(size) else { throw ValidationError("database.pool-size must be within 1...1000") }
            configuration.maximumConnections = size
        }
        return configuration
    }

    /// A pool for the database, once it has answered (an unreachable one is reported at once
    /// with PostgreSQL's own message).
    func connect(logger: Logger) async throws -> DatabasePool {
        DatabasePool(configuration: try await database().checkConnection(logger: logger), logger: logger)
    }
}

/// Runs `body` with a pool connected to `database` (its `run()` going alongside), configured the
/// way that connected (``DatabaseConfiguration/checkConnection(logger:)``); reports an unreachable
/// database at once with PostgreSQL's own message.
func withPostgres<T: Sendable>(
    _ database: DatabaseConfiguration, logger: Logger, _ body: @Sendable (DatabasePool) async throws -> T
) async throws -> T {
    let pool = DatabasePool(configuration: try await database.checkConnection(logger: logger), logger: logger)
    return try await withThrowingTaskGroup(of: T?.self) { group in
        // Immediate: `run()` is entered before `body` leases a connection, so PostgresNIO does not
        // warn that `run()` "hasn't been called yet" (a child task added the usual way may start
        // after the parent's first query).
        group.addImmediateTask {
            await pool.run()
            return nil
        }
        defer { group.cancelAll() }
        return try await body(pool)
    }
}

/// Fails unless the schema is at this binary's version.
func requireMigrated(_ pool: DatabasePool, logger: Logger) async throws {
    let database = pool.configuration
    let version = try await Migrator(schema: database.schema, logger: logger).currentVersion(pool)
    guard version >= Migrator.latestVersion else {
        throw ValidationError(
            "the database schema \(database.schema) is at version \(version), this binary needs \(Migrator.latestVersion): run `baton migrate`"
        )
    }
}
