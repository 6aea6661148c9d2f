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
    /// The error for a log line: a lost connection or an absent database in one plain line (what
    /// PostgreSQL said, or "connection refused"), anything else in full, its statement included.
    package var logDescription: String {
        if self is DatabaseUnavailable { return "\(self)" }
        if self is PSQLError, !isRefusalByDatabase { return DatabaseConfiguration.describe(self) }
        return String(reflecting: self)
    }
}
