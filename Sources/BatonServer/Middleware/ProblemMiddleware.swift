import Baton
import HTTPTypes
import Hummingbird
import Logging
import PostgresNIO

/// Turns every error into `application/problem+json`: Baton's own problems as they are, unknown
/// jobs as 404, PostgreSQL's data exceptions (a value it cannot store) as 400, Hummingbird's HTTP
/// errors (no such route) with their status, and anything else, which is a bug or an outage rather
/// than bad input, as a logged 500 that does not leak internals.
struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
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
        } catch let error as any HTTPResponseError {
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
