/// Why an admin command failed: what to tell the operator, and the exit status scripts switch on.
struct AdminFailure: Error, CustomStringConvertible {
    /// Exit statuses of the admin commands (also in `baton --help` and the README).
    enum Status: Int32 {
        /// The operation failed: refused by the server, or (for `wait`) the job did not complete.
        case failed = 1
        /// The command line or its input is wrong.
        case usage = 2
        /// No answer from the server.
        case unreachable = 3
        /// The server refused the token (401) or its role (403).
        case unauthorized = 4
        /// No such job (404).
        case notFound = 5
    }

    var status: Status
    var message: String

    init(_ status: Status, _ message: String) {
        self.status = status
        self.message = message
    }

    var description: String { message }
}
