import Logging
import PostgresNIO

extension PostgresClient {
    /// Runs a statement whose rows do not matter and reads its result to the end, so that its
    /// connection goes back to the pool at once (an unread result keeps the connection leased).
    package func perform(_ query: PostgresQuery, logger: Logger? = nil) async throws {
        for try await _ in try await self.query(query, logger: logger) {}
    }
}

extension PostgresConnection {
    /// Runs a statement whose rows do not matter and reads its result to the end.
    package func perform(_ query: PostgresQuery, logger: Logger) async throws {
        for try await _ in try await self.query(query, logger: logger) {}
    }
}
