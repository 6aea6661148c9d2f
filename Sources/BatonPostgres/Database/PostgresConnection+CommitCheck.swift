import Logging
import NIOCore
import PostgresNIO

/// A statement not sent: the connection it was to go on had already closed, or none could be had
/// in time (the database is away).
public struct DatabaseUnavailable: Error, CustomStringConvertible {
    public var description: String
    /// The statement was not sent: its connection had closed (``closed``). Nothing of it happened.
    var unsent = false

    static let closed = DatabaseUnavailable(
        description: "the database connection had closed; the statement was not sent", unsent: true)
}

/// Baton's three verbs for a statement, on a connection and on ``DatabasePool`` alike, each saying
/// what the statement does and so what its answer proves:
/// - ``PostgresConnection/execute(_:logger:)``: it may change data; its rows come once its
///   transaction has committed.
/// - ``PostgresConnection/read(_:logger:)``: it changes nothing; its rows are a snapshot.
/// - ``PostgresConnection/call(_:logger:)``: a procedure that commits before it answers (the
///   `*_committed` ones of the hot path); its row is the proof.
///
/// (PostgresNIO's own `query` is the word the others would take; on a connection that has just
/// closed it never answers, which is why every statement of Baton's goes through these.) Each
/// fails as ``StoreError``, never as PostgresNIO's `PSQLError`.
extension PostgresConnection {
    /// Runs `query` and returns all its rows once its transaction has committed; fails at once if
    /// the connection has closed.
    ///
    /// The check and the write happen in one turn of the connection's event loop: a connection
    /// open then has the statement in its state machine, which fails it if the connection closes.
    /// Written to a connection that has already closed, PostgresNIO 1.33's statement never
    /// completes: the write fails in the channel, whose handlers are gone, and nothing fails the
    /// statement's promise. (A statement sent just after connecting meets that often: the
    /// connector's check of a new server, under ReconnectTests' connection killer, hung a probe
    /// and every statement waiting for it.) Every statement of Baton's goes through here.
    ///
    /// Why the `SELECT 1` after it: PostgresNIO hands over a statement's rows when CommandComplete
    /// arrives, but the statement's implicit transaction commits later, at Sync, before
    /// ReadyForQuery. A backend terminated in between (`pg_terminate_backend`, a fast or immediate
    /// shutdown) sends the rows, then FATAL, and rolls back: the caller had an answer for a change
    /// that never happened (an enqueue answered with an id and lost, a claim or a hop acted on
    /// while the job stayed where it was). PostgresNIO sends the next statement on a connection
    /// only after ReadyForQuery of the one before, and closes the connection on any error after
    /// CommandComplete: so the second statement succeeds only if the first committed. It costs a
    /// round trip, not a parse of ours: queued in the same turn, it is written the moment
    /// ReadyForQuery arrives. (Found by the reliability suite's connection-killing scenario.)
    ///
    /// The worker's hot path does without it: claims and outcomes are procedures
    /// (`claim_committed`, `apply_outcomes_committed`) that COMMIT before they answer, so their
    /// one row comes only after the commit: ``call(_:logger:)``.
    @discardableResult
    package func execute(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        do {
            return try await eventLoop.flatSubmit { () -> EventLoopFuture<[PostgresRow]> in
                guard !self.isClosed else { return self.eventLoop.makeFailedFuture(DatabaseUnavailable.closed) }
                let result = self.query(query, logger: logger)
                let committed = self.query("SELECT 1", logger: logger)
                return result.and(committed).map { result, _ in result.rows }
            }.get()
        } catch {
            throw StoreError.from(error)
        }
    }

    /// Runs `query`, which changes nothing, and returns all its rows: without the commit check of
    /// ``execute(_:logger:)``, since rows read are a snapshot of committed data whether or not the
    /// implicit transaction's end reaches this side. Listings, look-ups, metrics, readiness.
    package func read(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        do {
            return try await eventLoop.flatSubmit { () -> EventLoopFuture<[PostgresRow]> in
                guard !self.isClosed else { return self.eventLoop.makeFailedFuture(DatabaseUnavailable.closed) }
                return self.query(query, logger: logger).map(\.rows)
            }.get()
        } catch {
            throw StoreError.from(error)
        }
    }

    /// Runs `body` in a transaction: committed if it returns, rolled back if it throws, and then
    /// its error is what this throws. BEGIN, COMMIT and ROLLBACK go as ``read(_:logger:)``: a COMMIT
    /// answers only once the transaction has committed, and neither is written to a closed
    /// connection.
    ///
    /// Instead of PostgresNIO's `withTransaction`, which sends its ROLLBACK with `query`: after a
    /// statement of the body lost the connection (a fast shutdown terminates the session), that
    /// ROLLBACK met a closed connection and never answered, and its lease was never given back. A
    /// worker's scheduler stopped for good, and the pool, which looked busy, was kept after the
    /// database came back, failing until PostgresNIO's own backoff found it (OutageTests, and
    /// `CommitTests.aTransactionWhoseConnectionClosesFailsAndGivesItBack`).
    package func transaction<Result>(
        logger: Logger, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        _ = try await read("BEGIN", logger: logger)
        let result: Result
        do {
            result = try await body(self)
        } catch {
            do {
                _ = try await read("ROLLBACK", logger: logger)
            } catch {
                // Never back to the pool inside a transaction; closed, it is not handed out again.
                try? await close()
            }
            throw error
        }
        _ = try await read("COMMIT", logger: logger)
        return result
    }

    /// Calls a procedure that commits before it answers (`CALL enqueue_committed(…)`) and returns
    /// its rows: they come only after its commit, so no check follows (one round trip).
    package func call(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await read(query, logger: logger)
    }
}
