import AsyncHTTPClient
import Baton
import BatonAPI
import BatonHTTPClient
import Foundation

// The control plane's types as the admin commands show them.
typealias JobView = Components.Schemas.Job
typealias StageView = Components.Schemas.Stage
typealias StageProgressView = Components.Schemas.StageProgress
typealias AttemptErrorView = Components.Schemas.AttemptError
typealias JobSummaryView = Components.Schemas.JobSummary
typealias LaneView = Components.Schemas.Lane

extension Components.Schemas.JobState {
    /// Completed, discarded or cancelled: nothing more will happen to the job.
    var isFinished: Bool { self == .completed || self == .discarded || self == .cancelled }
}

extension AdminOptions {
    /// One HTTP client for the process. A refused connection is reported at once rather than
    /// retried until the request's deadline (AsyncHTTPClient's default, right for servers, not for a
    /// CLI).
    static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout.connect = .seconds(5)
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    /// The control plane at `--url`, `$BATON_URL`, the address `baton dev` left in `.baton/dev.json`
    /// in this directory, or `http://127.0.0.1:8080`; with the token from the same places. The
    /// dev session's token goes only to the dev session's address, never to another server.
    func client() throws -> AdminClient {
        let environment = ProcessInfo.processInfo.environment
        func nonEmpty(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let dev = DevSession.read()
        let base = url ?? nonEmpty("BATON_URL") ?? dev?.url ?? "http://127.0.0.1:8080"
        let trimmed = base.hasSuffix("/") ? String(base.dropLast()) : base
        let token =
            token ?? nonEmpty("BATON_TOKEN") ?? nonEmpty("BATON_API_TOKEN") ?? (trimmed == dev?.url ? dev?.token : nil)
        guard let address = URL(string: trimmed), address.scheme == "http" || address.scheme == "https",
            address.host != nil
        else {
            throw AdminFailure(.usage, "--url must be an http:// or https:// address, such as http://127.0.0.1:8080")
        }
        guard address.path.isEmpty else {
            throw AdminFailure(
                .usage,
                "--url is the server's address without a path: \(address.scheme!)://\(address.host!)"
                    + (address.port.map { ":\($0)" } ?? "") + " (not \(trimmed))")
        }
        return AdminClient(
            http: try BatonHTTPClient(url: address, token: token, httpClient: Self.http), base: trimmed,
            hasToken: token != nil)
    }
}

/// The control plane, each failure an `AdminFailure` whose message says what to do next.
struct AdminClient: Sendable {
    let http: BatonHTTPClient
    let base: String
    let hasToken: Bool

    func call<T>(_ call: (BatonHTTPClient) async throws -> T) async throws -> T {
        do {
            return try await call(http)
        } catch let error as BatonHTTPError {
            throw failure(error)
        }
    }

    func failure(_ error: BatonHTTPError) -> AdminFailure {
        switch error {
        case .refused(let problem):
            var failure = refusal(problem)
            failure.problem = problem
            return failure
        case .unreachable(_, let reason):
            return AdminFailure(
                .unreachable,
                "cannot reach the Baton API at \(base): \(reason)\n"
                    + "is `baton serve` running at \(base)? set --url or BATON_URL (from the directory it runs in, "
                    + "`baton dev` is found by itself)")
        case .unexpectedAnswer(let status, let text):
            return AdminFailure(
                .failed,
                "\(base) answered HTTP \(status), not as a Baton API of version \(BatonVersion.current) does "
                    + "(\(Text.truncate(Text.printable(text), to: 120))); is --url a Baton API of this version?")
        case .invalidURL(let url):
            return AdminFailure(.usage, "--url must be an http:// or https:// address, not \(url)")
        case .cancelled:
            return AdminFailure(.failed, "cancelled")
        }
    }

    /// What to tell the operator of the server's refusal.
    private func refusal(_ problem: BatonProblem) -> AdminFailure {
        let detail = Text.printable(problem.detail ?? problem.title)
        switch problem.kind {
        case .unauthorized:
            return AdminFailure(
                .unauthorized,
                hasToken
                    ? "\(base) refused the token: set --token or BATON_TOKEN to one it accepts "
                        + "(`baton dev` prints its token; `baton serve` takes them from BATON_API_TOKENS)"
                    : "no token: set --token or BATON_TOKEN (`baton dev` prints one)")
        case .forbidden:
            return AdminFailure(.unauthorized, "the token's role may not do this: \(detail); use an admin token")
        case .notFound:
            return AdminFailure(.notFound, detail)
        case .unknownQueue:
            return AdminFailure(
                .notFound, "\(detail); `baton queues` lists the queues, --unchecked pauses it for jobs yet to come")
        default:
            var message = "\(Text.printable(problem.title)): \(detail)"
            if let path = problem.path, !path.isEmpty { message += " (at \(Text.printable(path)))" }
            if problem.kind == .unknownTask {
                message += "; `baton workers` lists the tasks each worker serves, --unchecked enqueues anyway"
            }
            return AdminFailure(.failed, message)
        }
    }
}
