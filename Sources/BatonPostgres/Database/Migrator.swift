import Foundation
import Logging
import PostgresNIO

/// Applies the SQL files of `migrations/` (compiled into the binary) that the database lacks, then
/// the functions of `migrations/functions/`.
///
/// A numbered file (tables, types, indexes) is applied once, in file-name order, and recorded in
/// `<schema>.migrations`. The functions are all replaced (`CREATE OR REPLACE`) on every run: a
/// change to a function is a diff of its file. A run is one transaction: the files it lacked,
/// their records and the functions commit together, or nothing does. A function's signature is a
/// contract with running workers of the previous version: change it under a new name, and drop
/// the old one in a numbered file once no release calls it. Concurrent runs (many workers starting
/// at once) wait for each other (``migrate(on:)``).
///
/// Every function a client calls runs with `SET jit = off` (the helpers they call inherit it).
/// PostgreSQL compiles a statement to machine code when its plan's estimated cost passes
/// `jit_above_cost`, and compiles it again at every execution: a plan cached per connection over a
/// deep backlog (a few thousand jobs waiting in each lane) passed it, and each flush of outcomes
/// spent many times longer compiling the hand-over than running it
/// (docs/benchmarks.md#issue-20-compiled-at-every-flush-2026-11-27). Baton's statements each touch
/// a bounded number of rows through indexes; none gains from it. `CompiledPlanTests` holds it, and
/// the list of helpers left out.
public struct Migrator: Sendable {
    public struct Migration: Sendable, Hashable {
        public var version: Int
        public var file: String
        public var sql: String
    }

    /// The migrations this binary carries, by version.
    public static let migrations: [Migration] = EmbeddedMigrations.all.map { file, sql in
        Migration(version: Int(file.prefix(while: \.isNumber)) ?? 0, file: file, sql: sql)
    }

    /// The functions this binary carries: (file name, `CREATE OR REPLACE FUNCTION …`).
    package static let functions = EmbeddedMigrations.functions

    /// The newest schema version this binary knows.
    public static var latestVersion: Int { migrations.map(\.version).max() ?? 0 }

    let schema: String
    let logger: Logger

    public init(schema: String, logger: Logger) {
        self.schema = schema
        self.logger = logger
    }

    /// Applies what is missing; returns the files applied.
    @discardableResult
    public func migrate(_ pool: DatabasePool) async throws -> [String] {
        try await pool.withConnection { connection in
            try await migrate(on: connection)
        }
    }

    /// Applies what is missing on one connection; returns the files applied.
    ///
    /// Runs wait for each other on a session advisory lock (Baton's namespace, "migr"), taken by
    /// this function only: one lock for every schema of the cluster, not one per schema. Schema
    /// changes of many backends at once flood every backend's catalog caches with invalidations:
    /// the test suite, a schema migrated per test all at once, stalled new connections to the
    /// whole cluster (docs/benchmarks.md#the-test-suites-start). (The tests now copy one migrated
    /// database.)
    @discardableResult
    public func migrate(on connection: PostgresConnection) async throws -> [String] {
        try await connection.execute("SELECT pg_advisory_lock(1650553966, 1835100530)", logger: logger)
        do {
            let applied = try await applyMissing(on: connection)
            try await connection.execute("SELECT pg_advisory_unlock(1650553966, 1835100530)", logger: logger)
            return applied
        } catch {
            _ = try? await connection.execute("SELECT pg_advisory_unlock(1650553966, 1835100530)", logger: logger)
            throw error
        }
    }

    /// The version recorded in the database, 0 when none.
    public func currentVersion(_ pool: DatabasePool) async throws -> Int {
        // A statement naming a missing table fails while it is parsed: ask whether it exists first.
        var exists = false
        for row in try await pool.read(
            "SELECT to_regclass(\(schema + ".migrations")) IS NOT NULL", logger: logger)
        {
            exists = try row.decode(Bool.self)
        }
        guard exists else { return 0 }
        let rows = try await pool.read(
            "SELECT coalesce(max(version), 0) FROM \(unescaped: schema).migrations", logger: logger)
        for row in rows {
            let version = try row.decode(Int.self)
            return version
        }
        return 0
    }

    /// Runs `sql`, a file of many statements, in the transaction open on `connection`, with Baton's
    /// schema first on the search path. One extended-protocol query cannot hold many statements;
    /// PL/pgSQL's EXECUTE can, and the file travels as a parameter, unquoted. A file of comments
    /// only runs nothing (EXECUTE refuses an empty string).
    package func execute(_ sql: String, on connection: PostgresConnection) async throws {
        try await connection.execute("SET LOCAL search_path TO \(unescaped: schema)", logger: logger)
        let hasStatements = sql.split(separator: "\n").contains { line in
            let text = line.trimmingCharacters(in: .whitespaces)
            return !text.isEmpty && !text.hasPrefix("--")
        }
        guard hasStatements else { return }
        try await connection.execute(
            """
            CREATE OR REPLACE FUNCTION pg_temp.baton_execute(sql text) RETURNS void
            LANGUAGE plpgsql AS $$ BEGIN EXECUTE sql; END $$
            """, logger: logger)
        try await connection.execute("SELECT pg_temp.baton_execute(\(sql))", logger: logger)
    }

    /// The missing files, their records and every function, in one transaction of a few round
    /// trips: a schema is at one version or the next, never between, and a fresh one is made in
    /// one statement (a file at a time took a hundred round trips, which on a loaded machine, or
    /// far from the database, is what a migration cost).
    private func applyMissing(on connection: PostgresConnection) async throws -> [String] {
        try await connection.execute("CREATE SCHEMA IF NOT EXISTS \(unescaped: schema)", logger: logger)
        try await connection.execute(
            """
            CREATE TABLE IF NOT EXISTS \(unescaped: schema).migrations (
                version int PRIMARY KEY, file text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
            """, logger: logger)
        var done = Set<Int>()
        for row in try await connection.execute("SELECT version FROM \(unescaped: schema).migrations", logger: logger) {
            done.insert(try row.decode(Int.self))
        }
        // A schema a development build left below the first release's (its steps are folded into
        // the first file now): applying that file over it would fail half-way.
        if let baseline = Self.migrations.map(\.version).min(), let reached = done.max(), reached < baseline {
            throw ConfigurationError(
                "schema \(schema) was made by a development build of Baton and reached version \(reached); "
                    + "this binary starts at version \(baseline) (migrations/\(String(format: "%04d", baseline))_schema.sql): "
                    + "migrate it with the build that made it first, or drop the schema and run `baton migrate` again")
        }
        let missing = Self.migrations.sorted(by: { $0.version < $1.version }).filter { !done.contains($0.version) }
        try await connection.transaction(logger: logger) { connection in
            // A `;` between files ends a last statement written without one.
            try await execute(
                (missing.map(\.sql) + Self.functions.map(\.sql)).joined(separator: "\n;\n"), on: connection)
            if !missing.isEmpty {
                try await connection.execute(
                    """
                    INSERT INTO migrations (version, file)
                    SELECT * FROM unnest(\(missing.map(\.version))::int[], \(missing.map(\.file))::text[])
                    """, logger: logger)
            }
        }
        for migration in missing {
            logger.info("migrated", metadata: ["file": "\(migration.file)", "schema": "\(schema)"])
        }
        logger.debug("functions replaced", metadata: ["count": "\(Self.functions.count)", "schema": "\(schema)"])
        return missing.map(\.file)
    }
}
