import PostgresNIO

extension Error {
    /// Whether PostgreSQL refused the statement for what it said (bad data, a broken constraint, a
    /// function raising), as opposed to failing to run it: no connection, the server shutting down
    /// or terminating the connection, too many connections, a lock or serialization conflict. A
    /// refusal will be refused again; anything else is worth retrying once the database is back.
    package var isRefusalByDatabase: Bool {
        guard let error = self as? PSQLError, let state = error.serverInfo?[.sqlState] else { return false }
        // 08 connection exception, 40 transaction rollback (serialization, deadlock), 53 insufficient
        // resources, 55 object not in prerequisite state (lock not available), 57 operator
        // intervention (admin or crash shutdown, cannot connect now, cancel), 58 system error.
        return !["08", "40", "53", "55", "57", "58"].contains(String(state.prefix(2)))
    }
}

extension Error {
    /// Whether a connection was lost (or never had) rather than a statement refused: a reason to
    /// look whether the database is still there (``DatabasePool``).
    package var isConnectionLoss: Bool {
        if self is DatabaseUnavailable { return true }
        guard let error = self as? PSQLError else { return false }
        guard error.code == .server else { return error.code != .queryCancelled }
        // Class 08: connection exception; 57: operator intervention (shutdown, terminated), but
        // 57014, a statement cancelled.
        let state = error.serverInfo?[.sqlState] ?? ""
        return state.hasPrefix("08") || (state.hasPrefix("57") && state != "57014")
    }

    /// The error for a log line: a lost connection or an absent database in one plain line (what
    /// PostgreSQL said, or "connection refused"), anything else in full, its statement included.
    package var logDescription: String {
        if self is DatabaseUnavailable { return "\(self)" }
        if self is PSQLError, !isRefusalByDatabase { return DatabaseConfiguration.describe(self) }
        return String(reflecting: self)
    }
}
