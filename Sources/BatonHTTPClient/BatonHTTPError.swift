import AsyncHTTPClient
import Baton
import BatonAPI
import Foundation
import OpenAPIRuntime

/// Why a call to the control plane failed: switch on it.
public enum BatonHTTPError: Error, Sendable, CustomStringConvertible {
    /// The server refused the request; the problem says why (RFC 9457).
    case refused(BatonProblem)
    /// The server could not be reached (refused, timed out, TLS failed).
    case unreachable(url: String, reason: String)
    /// The answer is not what this client expects: not a Baton server, or another version.
    case unexpectedAnswer(status: Int, String)
    /// The URL given is not an `http://` or `https://` address.
    case invalidURL(String)
    /// The task waiting was cancelled.
    case cancelled

    init(_ error: any Error, url: URL) {
        var error = error
        if let client = error as? ClientError { error = client.underlyingError }
        switch error {
        case let baton as BatonHTTPError: self = baton
        case is CancellationError: self = .cancelled
        case is DecodingError: self = .unexpectedAnswer(status: 200, "\(error)")
        case let http as HTTPClientError where http == .cancelled: self = .cancelled
        default:
            let address = url.host.map { "\($0):\(url.port ?? (url.scheme == "https" ? 443 : 80))" }
            self = .unreachable(url: url.absoluteString, reason: NetworkFailure.sentence(error, at: address))
        }
    }

    public var description: String {
        switch self {
        case .refused(let problem): "\(problem)"
        case .unreachable(let url, let reason): "cannot reach \(url): \(reason)"
        case .unexpectedAnswer(let status, let text): "unexpected answer (HTTP \(status)): \(text)"
        case .invalidURL(let url): "not an http:// or https:// address: \(url)"
        case .cancelled: "cancelled"
        }
    }
}

/// A refusal from the control plane, as its `application/problem+json` says.
public struct BatonProblem: Error, Sendable, Hashable, CustomStringConvertible {
    /// Baton's name for the problem (the `urn:baton:problem:<name>` type).
    public enum Kind: String, Sendable, Hashable {
        case invalidRequest = "invalid-request"
        case unauthorized, forbidden
        case notFound = "not-found"
        case methodNotAllowed = "method-not-allowed"
        case conflict
        case idempotencyKeyTaken = "idempotency-key-taken"
        case bodyTooLarge = "body-too-large"
        case unknownTask = "unknown-task"
        case unknownQueue = "unknown-queue"
        case databaseUnavailable = "database-unavailable"
        case notReady = "not-ready"
        case `internal`
        /// A problem type this client does not know (a newer server's).
        case other
    }

    public var kind: Kind
    /// The problem's `type` as the server sent it (`urn:baton:problem:not-found`).
    public var type: String
    public var status: Int
    public var title: String
    public var detail: String?
    /// The JSON path of the field at fault, or the query parameter's or header's name.
    public var path: String?
    /// For ``Kind/unknownTask``: the tasks no live worker serves.
    public var tasks: [String]
    /// For ``Kind/databaseUnavailable``: when to try again.
    public var retryAfter: Duration?

    public init(status: Int, problem: Components.Schemas.Problem, retryAfter: Duration? = nil) {
        let prefix = "urn:baton:problem:"
        kind =
            problem._type.hasPrefix(prefix)
            ? Kind(rawValue: String(problem._type.dropFirst(prefix.count))) ?? .other : .other
        type = problem._type
        self.status = status
        title = problem.title
        detail = problem.detail
        path = problem.path
        tasks = problem.tasks ?? []
        self.retryAfter = retryAfter
    }

    public var description: String {
        var text = "\(title) (HTTP \(status))"
        if let detail { text += ": \(detail)" }
        if let path, !path.isEmpty { text += " at \(path)" }
        return text
    }
}
