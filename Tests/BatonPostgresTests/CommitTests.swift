import Baton
import BatonPostgres
import BatonTestSupport
import PostgresNIO
import Synchronization
import Testing

/// A statement's rows are an answer only once its transaction has committed. PostgreSQL sends the
/// rows and CommandComplete before it commits (at Sync); a backend that dies in between rolls the
/// change back after the caller had its rows. Here a deferred constraint trigger, which runs at
/// commit, makes the commit fail in the two ways it does in production: the backend terminated
/// (as by `pg_terminate_backend` or a fast shutdown), and an error raised at commit.
@Suite(.timeLimit(.minutes(2)))
struct CommitTests {
    static func withFailingCommit(
        _ failure: String, _ body: @Sendable (TestDatabase, String) async throws -> Void
    ) async throws {
        try await TestDatabase.with { db async throws in
            let table = "\(db.configuration.schema).commit_probe"
            try await db.pool.execute("CREATE TABLE \(unescaped: table) (x int)")
            try await db.pool.execute(
                """
                CREATE FUNCTION \(unescaped: db.configuration.schema).fail_commit() RETURNS trigger
                LANGUAGE plpgsql AS $$ BEGIN \(unescaped: failure); RETURN NULL; END $$
                """)
            try await db.pool.execute(
                """
                CREATE CONSTRAINT TRIGGER fail_commit AFTER INSERT ON \(unescaped: table)
                DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
                EXECUTE FUNCTION \(unescaped: db.configuration.schema).fail_commit()
                """)
            try await body(db, table)
        }
    }

    /// The rows in `table`. The failed commit closed its connection, and the pool may hand that
    /// connection out once more before it learns of the close: a statement on it fails unsent
    /// (or, when the close comes while it is being sent, as the server's closed connection).
    static func count(_ table: String, in db: TestDatabase) async throws -> Int {
        while true {
            do {
                return try await db.values("SELECT count(*)::int FROM \(unescaped: table)", as: Int.self)[0]
            } catch  where error.isConnectionLoss {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    @Test(arguments: [
        "PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5)",
        "RAISE EXCEPTION 'refused at commit'",
    ])
    func rowsOfAStatementWhoseCommitFailedAreNotReturned(failure: String) async throws {
        try await Self.withFailingCommit(failure) { db, table async throws in
            await #expect(throws: (any Error).self) {
                try await db.pool.execute("INSERT INTO \(unescaped: table) VALUES (1) RETURNING x", logger: db.logger)
            }
            #expect(try await Self.count(table, in: db) == 0)
        }
    }

    @Test func rowsOfACommittedStatementAreReturned() async throws {
        try await Self.withFailingCommit("NULL") { db, table async throws in
            let rows = try await db.pool.execute(
                "INSERT INTO \(unescaped: table) VALUES (1), (2) RETURNING x", logger: db.logger)
            #expect(try rows.map { try $0.decode(Int.self) } == [1, 2])
            let stored = try await db.values("SELECT count(*)::int FROM \(unescaped: table)", as: Int.self)
            #expect(stored == [2])
        }
    }
}

extension CommitTests {
    /// Enqueues, claims and outcomes answer from procedures that COMMIT before they answer, with no
    /// check after them: a commit that fails (the backend terminated at commit, an error raised at
    /// commit) is an error to the caller, never an answer, and nothing is stored.
    @Test(arguments: [
        "PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5)",
        "RAISE EXCEPTION 'refused at commit'",
    ])
    func anEnqueueWhoseCommitFailsIsNotAnswered(failure: String) async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            try await db.pool.execute(
                """
                CREATE FUNCTION \(unescaped: schema).fail_commit() RETURNS trigger
                LANGUAGE plpgsql AS $$ BEGIN \(unescaped: failure); RETURN NULL; END $$
                """)
            try await db.pool.execute(
                """
                CREATE CONSTRAINT TRIGGER fail_commit AFTER INSERT ON \(unescaped: schema).jobs
                DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
                EXECUTE FUNCTION \(unescaped: schema).fail_commit()
                """)
            let job = NewJob(chain: ChainDefinition(input: 1, stages: [.task("noop")]))
            await #expect(throws: (any Error).self) { try await db.store.enqueue([job]) }
            #expect(try await Self.count("\(schema).jobs", in: db) == 0)
        }
    }

    /// A claim whose commit fails (an error raised at commit by a trigger on the claimed row) is
    /// not answered either, and the job stays available.
    @Test func aClaimWhoseCommitFailsIsNotAnswered() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            let id = try await db.store.enqueue([NewJob(chain: ChainDefinition(input: 1, stages: [.task("noop")]))])[0]
                .id
            try await db.pool.execute(
                """
                CREATE FUNCTION \(unescaped: schema).fail_commit() RETURNS trigger
                LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused at commit'; RETURN NULL; END $$
                """)
            try await db.pool.execute(
                """
                CREATE CONSTRAINT TRIGGER fail_commit AFTER UPDATE ON \(unescaped: schema).jobs
                DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
                EXECUTE FUNCTION \(unescaped: schema).fail_commit()
                """)
            await #expect(throws: (any Error).self) {
                try await db.store.claim(queue: "default", limit: 10, worker: "w")
            }
            #expect(try await db.store.job(id)?.state == .available)
        }
    }
}

extension CommitTests {
    /// A transaction whose connection closes under it (a fast shutdown terminates the session, a
    /// failover, a firewall) fails at once, with the statement's own error, and gives its
    /// connection back. The body here waits until the client has seen the close before it throws,
    /// so that the ROLLBACK meets a connection already closed: PostgresNIO's `withTransaction`
    /// sent it with `query`, which never answers there, and held its lease for good (a worker's
    /// scheduler stopped, and the pool looked busy after the database came back).
    @Test func aTransactionWhoseConnectionClosesFailsAndGivesItBack() async throws {
        try await TestDatabase.with { db async throws in
            let outcome = Mutex<(any Error)??>(nil)
            Task {
                do {
                    try await db.pool.withTransaction { connection in
                        do {
                            try await connection.execute(
                                "SELECT pg_terminate_backend(pg_backend_pid())", logger: db.logger)
                        } catch {
                            try await eventually("the client to see the close") { connection.isClosed }
                            throw error
                        }
                    }
                    outcome.withLock { $0 = .some(nil) }
                } catch {
                    outcome.withLock { $0 = .some(error) }
                }
            }
            let answer = try await eventually(timeout: .seconds(10), "the transaction to answer") {
                outcome.withLock { $0 }
            }
            let error = try #require(answer, "a transaction on a terminated session cannot commit")
            #expect(error.isConnectionLoss, "\(error.logDescription)")
            #expect(error.isDatabaseUnavailable)
            // Its connection went back: the pool serves on.
            #expect(try await db.values("SELECT 1", as: Int.self) == [1])
        }
    }
}
