import HTTPTypes
import Hummingbird
import Synchronization

/// Answers at once with a 503 (`overloaded`, `Retry-After: 1`) when `limit` requests are already
/// being answered, rather than queueing without bound.
///
/// A server that takes every request keeps working for clients that have given up: a client that
/// times out and retries on a new connection leaves its first request running, and past a slow
/// spell every retry adds work that slows every other request, until nothing is answered in time
/// (docs/reliability.md, "Debug builds under a retry storm"). With a bound, the excess is refused
/// in microseconds and the requests taken are answered at the speed the database allows. The
/// health checks are never refused: an orchestrator must still see the process alive.
struct InFlightMiddleware<Context: RequestContext>: RouterMiddleware {
    let limit: Int
    private let inFlight = Counter()

    init(limit: Int) {
        self.limit = limit
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let path = request.uri.path
        if path == "/healthz" || path == "/readyz" { return try await next(request, context) }
        guard inFlight.enter(limit: limit) else {
            var problem = Problem(
                .serviceUnavailable, type: "overloaded", title: "The server is answering all it can",
                detail: "\(limit) requests are being answered; nothing was done; try again shortly")
            problem.headers[.retryAfter] = "1"
            return try problem.response(from: request, context: context)
        }
        defer { inFlight.leave() }
        return try await next(request, context)
    }

    private final class Counter: Sendable {
        private let count = Atomic(0)

        func enter(limit: Int) -> Bool {
            if count.wrappingAdd(1, ordering: .relaxed).newValue <= limit { return true }
            count.wrappingSubtract(1, ordering: .relaxed)
            return false
        }

        func leave() { count.wrappingSubtract(1, ordering: .relaxed) }
    }
}
