import Baton
import BatonPostgres
import HTTPTypes
import Hummingbird
import Logging
import PostgresNIO

/// Turns every error into `application/problem+json`: Baton's own problems as they are, unknown
/// jobs as 404, PostgreSQL's data exceptions (a value it cannot store) as 400, Hummingbird's HTTP
/// errors (no such route) with their status, and anything else, which is a bug or an outage rather
/// than bad input, as a logged 500 that does not leak internals.
struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The methods each path takes: any other method on a known path is a 405, not a 404.
    let allowed: AllowedMethods

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let problem as Problem {
            return try problem.response(from: request, context: context)
        } catch BatonError.jobNotFound(let id) {
            return try Problem.notFound("no job has id \(id)").response(from: request, context: context)
        } catch let error as PSQLError where error.serverInfo?[.sqlState]?.hasPrefix("22") == true {
            // A value the checks let through but PostgreSQL cannot store: still the caller's input.
            return try Problem.invalid(
                "", "a value cannot be stored: \(error.serverInfo?[.message] ?? "data exception")"
            )
            .response(from: request, context: context)
        } catch  where (error is PSQLError || error is DatabaseUnavailable) && !error.isRefusalByDatabase {
            // The database is away (restarting, connections failing): an outage, not a bug, and
            // the caller can try again; an enqueue with an idempotency key safely so.
            context.logger.warning("database unavailable", metadata: ["error": "\(String(reflecting: error))"])
            var problem = Problem(
                .serviceUnavailable, type: "database-unavailable", title: "The database cannot be reached",
                detail: "nothing was done; try again shortly")
            problem.headers[.retryAfter] = "1"
            return try problem.response(from: request, context: context)
        } catch let error as any HTTPResponseError {
            if error.status == .notFound, let allow = allowed.methods(for: request.uri.path) {
                return try Problem.methodNotAllowed(request.method, path: request.uri.path, allow: allow)
                    .response(from: request, context: context)
            }
            let detail = error.status == .notFound ? "no route \(request.method) \(request.uri.path)" : nil
            return try Problem(error.status, detail: detail).response(from: request, context: context)
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(String(reflecting: error))"])
            return try Problem(
                .internalServerError, type: "internal", title: "The server could not complete the request",
                detail: "see the server log for request \(context.logger[metadataKey: "request_id"] ?? "\(context.id)")"
            ).response(from: request, context: context)
        }
    }
}

/// The methods of each route path (`/v1/jobs/{id}`), for the `Allow` of a 405.
struct AllowedMethods: Sendable {
    private let paths: [(segments: [Substring], allow: [HTTPRequest.Method])]

    init(_ routes: [API.Route]) {
        var methods: [String: [HTTPRequest.Method]] = [:]
        for route in routes { methods[route.path, default: []].append(route.method) }
        // Literal paths first: `/v1/jobs/batch` before `/v1/jobs/{id}`.
        paths = methods.map { path, methods in (path.split(separator: "/"), methods) }
            .sorted { $0.segments.filter { $0.hasPrefix("{") }.count < $1.segments.filter { $0.hasPrefix("{") }.count }
    }

    /// The methods a request path takes, nil if no route has that path.
    func methods(for path: String) -> [HTTPRequest.Method]? {
        let segments = path.split(separator: "/")
        return paths.first { route in
            route.segments.count == segments.count
                && zip(route.segments, segments).allSatisfy { template, segment in
                    template.hasPrefix("{") || template == segment
                }
        }?.allow
    }
}
