import BatonPostgres
import BatonTestSupport
import Testing

@Suite(.timeLimit(.minutes(3)))
struct MigrationTests {
    @Test func migratingAgainAppliesNothingAndRecordsTheVersion() async throws {
        try await TestDatabase.with { db async throws in
            let migrator = Migrator(schema: db.configuration.schema, logger: db.logger)
            #expect(try await migrator.migrate(db.client).isEmpty)
            #expect(try await migrator.currentVersion(db.client) == Migrator.latestVersion)
        }
    }

    @Test func concurrentMigrationsOfAFreshSchemaWaitForEachOther() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema + "_fresh"
            let migrator = Migrator(schema: schema, logger: db.logger)
            let applied = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<4 { group.addTask { try await migrator.migrate(db.client) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(applied.filter { !$0.isEmpty }.count == 1)
            #expect(try await migrator.currentVersion(db.client) == Migrator.latestVersion)
            try await db.client.perform("DROP SCHEMA \(unescaped: schema) CASCADE")
        }
    }

    @Test func theBinaryCarriesEveryFileOfMigrations() {
        #expect(Migrator.migrations.map(\.version) == Array(1...Migrator.latestVersion))
        #expect(Migrator.migrations.allSatisfy { $0.sql.contains("CREATE") })
    }
}

@Suite(.timeLimit(.minutes(3)))
struct MigrationVersionTests {
    @Test func aSchemaNeverMigratedIsAtVersionZero() async throws {
        try await TestDatabase.with { db async throws in
            let fresh = Migrator(schema: db.configuration.schema + "_never", logger: db.logger)
            #expect(try await fresh.currentVersion(db.client) == 0)
        }
    }
}
