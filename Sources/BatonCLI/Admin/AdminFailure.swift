import Baton
import BatonHTTPClient

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
        /// `jobs wait --timeout` ran out while the job was still unfinished (as `timeout(1)` says
        /// a command timed out).
        case stillRunning = 124

        /// The problem type of a failure the server did not describe.
        var problemName: String {
            switch self {
            case .failed: "failed"
            case .usage: "usage"
            case .unreachable: "unreachable"
            case .unauthorized: "unauthorized"
            case .notFound: "not-found"
            case .stillRunning: "still-running"
            }
        }
    }

    var status: Status
    var message: String
    /// The server's refusal, when it was one.
    var problem: BatonProblem?
    /// The command printed its answer already (`wait --json` prints the job it gave up on or saw
    /// fail): `--json` adds no problem document after it.
    var answered = false

    init(_ status: Status, _ message: String, problem: BatonProblem? = nil) {
        self.status = status
        self.message = message
        self.problem = problem
    }

    var description: String { message }

    /// What `--json` prints on standard output when a command fails: the server's problem
    /// document (RFC 9457) when it refused, else one in the same shape; `exit_status` is the
    /// command's.
    var problemDocument: JSONValue {
        var document: [String: JSONValue] = [
            "type": .string(problem?.type ?? "urn:baton:problem:\(status.problemName)"),
            "title": .string(problem?.title ?? message.prefix { $0 != ":" && $0 != "\n" }.description),
            "detail": .string(message),
            "exit_status": .number(JSONNumber(Int(status.rawValue))),
        ]
        if let problem {
            document["status"] = .number(JSONNumber(problem.status))
            if let path = problem.path { document["path"] = .string(path) }
        }
        return .object(document)
    }
}
