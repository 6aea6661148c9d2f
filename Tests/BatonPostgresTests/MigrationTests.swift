import BatonPostgres
import BatonTestSupport
import Foundation
import Testing

@Suite(.timeLimit(.minutes(3)))
struct MigrationTests {
    @Test func migratingAgainAppliesNothingAndRecordsTheVersion() async throws {
        try await TestDatabase.with { db async throws in
            let migrator = Migrator(schema: db.configuration.schema, logger: db.logger)
            #expect(try await migrator.migrate(db.pool).isEmpty)
            #expect(try await migrator.currentVersion(db.pool) == Migrator.latestVersion)
        }
    }

    @Test func concurrentMigrationsOfAFreshSchemaWaitForEachOther() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema + "_fresh"
            let migrator = Migrator(schema: schema, logger: db.logger)
            let applied = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<4 { group.addTask { try await migrator.migrate(db.pool) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(applied.filter { !$0.isEmpty }.count == 1)
            #expect(try await migrator.currentVersion(db.pool) == Migrator.latestVersion)
            try await db.pool.execute("DROP SCHEMA \(unescaped: schema) CASCADE")
        }
    }

    /// Every file of `migrations/` and `migrations/functions/`, as it is on disk (a build that
    /// missed a new file fails here); each function file replaces one function.
    @Test func theBinaryCarriesEveryFileOfMigrationsAsWritten() throws {
        var directory = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { directory.deleteLastPathComponent() }
        directory.append(path: "migrations")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".sql") }
        #expect(Migrator.migrations.map(\.file) == files.sorted())
        // The first release's schema is version 19; every later file the next number.
        #expect(Migrator.migrations.map(\.version) == Array(19...Migrator.latestVersion))
        for migration in Migrator.migrations {
            let text = try String(contentsOf: directory.appending(path: migration.file), encoding: .utf8)
            #expect(migration.sql == text, "\(migration.file) differs from the embedded copy")
        }
        let functions = directory.appending(path: "functions")
        let functionFiles = try FileManager.default.contentsOfDirectory(atPath: functions.path)
            .filter { $0.hasSuffix(".sql") }
        #expect(Migrator.functions.map(\.file) == functionFiles.sorted())
        for (file, sql) in Migrator.functions {
            #expect(sql == (try String(contentsOf: functions.appending(path: file), encoding: .utf8)))
            let name = String(file.dropLast(4))
            // A procedure that commits is created with its schema written in (it may not carry
            // `SET search_path`).
            let definitions =
                sql.components(separatedBy: "CREATE OR REPLACE FUNCTION \(name)(").count
                + sql.components(separatedBy: "CREATE OR REPLACE PROCEDURE %1$I.\(name)(").count
            #expect(definitions == 3, "\(file)")
            #expect(!sql.contains("CREATE FUNCTION"), "\(file) must replace, not create")
        }
    }
}

@Suite(.timeLimit(.minutes(3)))
struct MigrationVersionTests {
    @Test func aSchemaNeverMigratedIsAtVersionZero() async throws {
        try await TestDatabase.with { db async throws in
            let fresh = Migrator(schema: db.configuration.schema + "_never", logger: db.logger)
            #expect(try await fresh.currentVersion(db.pool) == 0)
        }
    }
}
