import Baton
import BatonAPI
import BatonPostgres
import HTTPTypes
import Hummingbird
import Logging
import OpenAPIRuntime

/// Turns every error into `application/problem+json`: Baton's own problems as they are, unknown
/// jobs as 404, PostgreSQL's data exceptions (a value it cannot store) as 400, a body too large or
/// not JSON as 413 or 400, the generated code's refusals (a path parameter that is not a job id,
/// an unsupported media type) with their status, Hummingbird's (no such route) as 404 or 405, and
/// anything else, which is a bug or an outage rather than bad input, as a logged 500 or 503 that
/// does not leak internals.
struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The methods each path takes: any other method on a known path is a 405, not a 404.
    let allowed: AllowedMethods

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch  where error.isClientGone {
            // Not the server's failure: nobody is left to read the answer, and the log says so once.
            context.logger.info(
                "the client left before its request was complete", metadata: ["error": "\(error.serverLogDescription)"])
            return try Problem(
                .badRequest, type: "incomplete-request", title: "The request ended before its body did"
            ).response(from: request, context: context)
        } catch {
            let problem = problem(for: error, request, context)
            if problem.status == .internalServerError {
                context.logger.error("request failed", metadata: ["error": "\(error.serverLogDescription)"])
            }
            return try problem.response(from: request, context: context)
        }
    }

    private func problem(for error: any Error, _ request: Request, _ context: Context) -> Problem {
        switch error {
        case let problem as Problem:
            return problem
        case let error as ServerError:
            // The generated server wraps every error of a handler or a middleware.
            if error.operationInput == nil, APIDocument.shared.takesJobID(error.operationID),
                case .some(let id) = error.requestMetadata.pathParameters["id"], Int64(id) == nil
            {
                // A path that names no job id (`/v1/jobs/abc`): a job that does not exist.
                return .notFound("no job has id \(id)")
            }
            if error.underlyingError is ServerError || !(400..<500).contains(error.httpStatus.code) {
                return problem(for: error.underlyingError, request, context)
            }
            let known = problem(for: error.underlyingError, request, context)
            guard known.status == .internalServerError else { return known }
            // The generated code's own refusal (an unsupported media type, a missing body).
            return Problem(error.httpStatus, type: "invalid-request", detail: error.causeDescription)
        case let error as RequestBodyError:
            switch error {
            case .tooLarge(let limit): return .tooLarge(limit: limit)
            case .notJSON(let reason): return .invalid("", "the body is not valid JSON: \(reason)")
            }
        case let error as BatonError:
            return .from(error)
        case let error where error.isDataException:
            // A value the checks let through but PostgreSQL cannot store: still the caller's input.
            return .invalid("", "a value cannot be stored: \(error.databaseMessage ?? "data exception")")
        case let error where error.isDatabaseUnavailable:
            // The database is away (restarting, connections failing): an outage, not a bug, and the
            // caller can try again; an enqueue with an idempotency key safely so.
            context.logger.warning("database unavailable", metadata: ["error": "\(error.serverLogDescription)"])
            var problem = Problem(
                .serviceUnavailable, type: "database-unavailable", title: "The database cannot be reached",
                detail: "nothing was done; try again shortly")
            problem.headers[.retryAfter] = "1"
            return problem
        case let error as any HTTPResponseError:
            if error.status == .notFound, let allow = allowed.methods(for: request.uri.path) {
                return .methodNotAllowed(request.method, path: request.uri.path, allow: allow)
            }
            if error.status == .notFound {
                return .notFound("no route \(request.method) \(request.uri.path)")
            }
            return Problem(error.status)
        default:
            // Logged by `handle` if it is the answer (a wrapped error may yet be the caller's).
            return Problem(
                .internalServerError, type: "internal", title: "The server could not complete the request",
                detail: "see the server log for request \(context.logger[metadataKey: "request_id"] ?? "\(context.id)")"
            )
        }
    }
}
