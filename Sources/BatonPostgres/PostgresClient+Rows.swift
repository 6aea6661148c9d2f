import Logging
import Metrics
import NIOCore
import PostgresNIO
import Synchronization

/// A statement not sent: the connection it was to go on had already closed, or none could be had
/// in time (the database is away).
package struct DatabaseUnavailable: Error, CustomStringConvertible {
    package var description: String

    static let closed = DatabaseUnavailable(
        description: "the database connection had closed; the statement was not sent")
}

/// Set once, read from other tasks.
private final class Flag: Sendable {
    private let value = Atomic(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}

extension PostgresClient {
    /// Runs `query` on a pooled connection and returns all its rows (the connection goes back to
    /// the pool at once). Every statement of Baton's goes through here or `PostgresConnection.rows`.
    ///
    /// Why not `query(_:logger:)`: PostgresNIO 1.33 writes a statement to its channel without
    /// watching the write, so on a connection that has just closed (the pool can hand one out
    /// before it learns of the close, as when the server terminates connections) the statement is
    /// dropped and its caller waits for ever. The reliability suite's connection-killing scenario
    /// left whole workers waiting so.
    ///
    /// A statement waits for a connection at most `leaseTimeout`: while the database cannot be
    /// reached, PostgresNIO's pool keeps requests waiting for ever; here they fail as unavailable
    /// (a 503 from the control plane, a retry in the worker's loops).
    package func rows(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        let leased = Flag()
        let asked = ContinuousClock.now
        return try await withThrowingTaskGroup(of: [PostgresRow]?.self) { group in
            group.addTask {
                do {
                    return try await self.lease(query, logger: logger, leased: leased, asked: asked)
                } catch let error where !leased.isSet && !(error is PSQLError || error is CancellationError) {
                    // PostgresNIO's pool fails requests with its own `ConnectionPoolError` once it has
                    // failed to connect for a minute (its circuit breaker): the database is away.
                    throw DatabaseUnavailable(description: "no connection to the database: \(error)")
                }
            }
            group.addTask {
                try await Task.sleep(for: Self.leaseTimeout)
                return nil
            }
            while let result = try await group.next() {
                if let rows = result {
                    group.cancelAll()
                    return rows
                }
                // The deadline is for getting a connection; a statement under way is waited for.
                if !leased.isSet {
                    group.cancelAll()
                    throw DatabaseUnavailable(
                        description: "no connection to the database within \(Self.leaseTimeout); it may be away")
                }
            }
            throw CancellationError()
        }
    }

    private func lease(_ query: PostgresQuery, logger: Logger, leased: Flag, asked: ContinuousClock.Instant)
        async throws -> [PostgresRow]
    {
        try await self.withConnection { connection in
            leased.set()
            // Pool use: `baton_db_connection_wait_seconds` (time to get a connection) and
            // `baton_db_connections_in_use` (statements on a leased connection now).
            Timer(label: "baton_db_connection_wait_seconds").record(duration: ContinuousClock.now - asked)
            let inUse = Meter(label: "baton_db_connections_in_use")
            inUse.increment()
            defer { inUse.decrement() }
            return try await connection.rows(query, logger: logger)
        }
    }

    /// How long a statement waits for a pooled connection.
    package static let leaseTimeout = Duration.seconds(10)

    /// Runs a statement whose rows do not matter.
    package func perform(_ query: PostgresQuery, logger: Logger? = nil) async throws {
        _ = try await rows(query, logger: logger ?? Logger(label: "baton.postgres"))
    }
}

extension PostgresConnection {
    /// Runs `query` and returns all its rows once its transaction has committed; fails at once if
    /// the connection has closed.
    ///
    /// The check and the write happen in one turn of the connection's event loop: a connection
    /// open then has the statement in its state machine, which fails it if the connection closes.
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
    package func rows(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await eventLoop.flatSubmit { () -> EventLoopFuture<[PostgresRow]> in
            guard !self.isClosed else { return self.eventLoop.makeFailedFuture(DatabaseUnavailable.closed) }
            let result = self.query(query, logger: logger)
            let committed = self.query("SELECT 1", logger: logger)
            return result.and(committed).map { result, _ in result.rows }
        }.get()
    }

    /// Runs a statement whose rows do not matter.
    package func perform(_ query: PostgresQuery, logger: Logger) async throws {
        _ = try await rows(query, logger: logger)
    }
}
