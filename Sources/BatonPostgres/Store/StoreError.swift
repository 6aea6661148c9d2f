import PostgresNIO

/// What went wrong with one of Baton's statements, as everything above the store sees it: what
/// PostgreSQL said and its SQLSTATE, or that the connection went. PostgresNIO's `PSQLError` stays
/// inside `BatonPostgres`: it describes itself with one fixed text, and reflecting it shows the
/// statement and its values (jobs' payloads), which must not reach a log.
///
/// Made where a statement is sent (``PostgresConnection/execute(_:logger:)``, `read`, `call`):
/// a statement of Baton's throws this, never a `PSQLError`, transactions' BEGIN and COMMIT
/// included (``PostgresConnection/transaction(logger:_:)``). The
/// questions the layers above ask of any error (``Swift/Error/isDatabaseUnavailable``,
/// ``Swift/Error/isRefusalByDatabase``, ``Swift/Error/logDescription``) are answered from it.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// The SQLSTATE, when the server refused the statement.
    public let sqlState: String?
    /// What the server said, when it refused the statement.
    public let message: String?
    /// The DETAIL of a refusal (`enqueue`'s `BT409` puts the index of the job at fault there).
    public let detail: String?
    /// The HINT of a refusal (`enqueue`'s `BT422` puts the path it looked at there).
    public let hint: String?
    /// The constraint a refusal names.
    public let constraint: String?
    /// The innermost place of a refusal raised in a function (`PL/pgSQL function claim_for(…) line 3`).
    public let place: String?
    /// Whether the connection went (or was not there) rather than the statement being refused:
    /// class 08 (connection exception) and 57 (operator intervention: shutdown, terminated), but
    /// not 57014 (a statement cancelled); or no answer from the server at all.
    public let isConnectionLoss: Bool
    /// One line: what the server said and its SQLSTATE, or what happened to the connection.
    public let description: String
    /// What happened when the server said nothing (PostgresNIO's code: `serverClosedConnection`).
    let code: String

    init(_ error: PSQLError) {
        let server = error.serverInfo
        sqlState = server?[.sqlState]
        message = server?[.message]
        detail = server?[.detail]
        hint = server?[.hint]
        constraint = server?[.constraintName]
        place = server?[.locationContext]?.split(separator: "\n").last.map(String.init)
        code = "\(error.code)"
        description = DatabaseConfiguration.describe(error)
        if error.code == .server {
            let state = sqlState ?? ""
            isConnectionLoss = state.hasPrefix("08") || (state.hasPrefix("57") && state != "57014")
        } else {
            isConnectionLoss = error.code != .queryCancelled
        }
    }

    /// `error` as a statement's failure: a `PSQLError` made a ``StoreError``, anything else as it is.
    static func from(_ error: any Error) -> any Error {
        (error as? PSQLError).map(StoreError.init) ?? error
    }
}
