import PostgresNIO

extension Error {
    /// Whether PostgreSQL refused the statement for what it said (bad data, a broken constraint, a
    /// function raising), as opposed to failing to run it: no connection, the server shutting down
    /// or terminating the connection, too many connections, a lock or serialization conflict, a
    /// server that only reads now. A refusal will be refused again; anything else is worth retrying
    /// once the database (or its writable server) is back.
    package var isRefusalByDatabase: Bool {
        guard let state = sqlState else { return false }
        // 08 connection exception, 40 transaction rollback (serialization, deadlock), 53 insufficient
        // resources, 55 object not in prerequisite state (lock not available), 57 operator
        // intervention (admin or crash shutdown, cannot connect now, cancel), 58 system error.
        if isReadOnlyServer { return false }
        return !["08", "40", "53", "55", "57", "58"].contains(String(state.prefix(2)))
    }

    /// Whether the server refused to write because it only reads (SQLSTATE 25006): a hot standby,
    /// or a primary a failover manager demoted or fenced. Another server may be the writable one.
    package var isReadOnlyServer: Bool {
        self is ReadOnlyServer || sqlState == "25006"
    }

    /// The statement's failure as ``StoreError`` says it, if this is one (or a `PSQLError` that a
    /// connection's own handshake or PostgresNIO's transaction threw).
    private var storeError: StoreError? {
        self as? StoreError ?? (self as? PSQLError).map(StoreError.init)
    }
}

extension Error {
    /// The SQLSTATE PostgreSQL answered with, if this is its refusal: what the layers above the
    /// store switch on, without knowing PostgresNIO's error type.
    package var sqlState: String? { storeError?.sqlState }

    /// What PostgreSQL said, if this is its refusal.
    package var databaseMessage: String? { storeError?.message }

    /// Whether the database could not store a value it was given (SQLSTATE class 22, a data
    /// exception): the caller's input, where the checks before let it through.
    package var isDataException: Bool { sqlState?.hasPrefix("22") == true }

    /// Whether the database did not run the statement for want of a connection or a server that
    /// takes it (away, restarting, a standby): worth trying again shortly, unlike a refusal.
    package var isDatabaseUnavailable: Bool { isDatabaseFailure && !isRefusalByDatabase }

    /// A task's error for the job's errors: what the server said and its SQLSTATE, or the kind of
    /// failure when the server said nothing (a task's own statements fail as PostgresNIO's
    /// `PSQLError`, which describes itself with one fixed text).
    package var stageErrorDescription: String {
        guard let error = storeError else { return String(describing: self) }
        guard let message = error.message else { return "PostgreSQL: \(error.code)" }
        return "PostgreSQL: \(message) (SQLSTATE \(error.sqlState ?? "?"))"
    }

    /// Whether this came from the database or the way to it (to be told with ``logDescription``).
    package var isDatabaseFailure: Bool {
        self is StoreError || self is PSQLError || self is DatabaseUnavailable || self is DatabaseConnector.NoServer
    }

    /// Whether a connection was lost (or never had) rather than a statement refused: a reason to
    /// look whether the database is still there (``DatabasePool``).
    package var isConnectionLoss: Bool {
        if self is DatabaseUnavailable { return true }
        return storeError?.isConnectionLoss ?? false
    }

    /// The error for a log line, with nothing a caller sent in it: what PostgreSQL said and its
    /// SQLSTATE, never the statement or its values (`String(reflecting:)` of a `PSQLError` shows
    /// both, and the values are jobs' payloads); a decoding error's path, not the data.
    /// Every log line of Baton's that holds an error holds this (`SecretsTests` scans for leaks).
    package var logDescription: String {
        switch self {
        case is DatabaseUnavailable: return "\(self)"
        case is StoreError, is PSQLError:
            guard let error = storeError else { return "\(self)" }
            var text = error.description
            if let constraint = error.constraint { text += " (constraint \(constraint))" }
            if let place = error.place { text += " at \(place)" }
            return text
        case let error as DecodingError:
            let context: DecodingError.Context? =
                switch error {
                case .dataCorrupted(let context), .keyNotFound(_, let context), .typeMismatch(_, let context),
                    .valueNotFound(_, let context):
                    context
                @unknown default: nil
                }
            let path = context?.codingPath.map(\.stringValue).joined(separator: "/") ?? ""
            return "cannot decode the value at /\(path)"
        default:
            return "\(self)"
        }
    }
}
