import BatonAPI
import HTTPTypes
import OpenAPIRuntime

/// Lets a request through to its operation only with a token of a role the operation admits (its
/// `x-baton-roles` in the OpenAPI document): 401 without a known token, 403 for a role not
/// admitted. The caller is then ``Caller/current`` for the handler.
struct AccessMiddleware: ServerMiddleware {
    let tokens: APITokens
    let document: APIDocument
    /// `/metrics` without a token, for a scraper that cannot send one.
    let metricsOpen: Bool

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, metadata: ServerRequestMetadata, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let operation = document.operations[operationID]
        let roles = operation?.roles ?? Set(Role.allCases)
        guard !roles.isEmpty, !(metricsOpen && operationID == "metrics") else {
            return try await next(request, body, metadata)
        }
        // A signal's one-time token instead of a bearer token: the request is judged by it alone,
        // in the handler, and has no caller.
        if operation?.signalToken == true,
            request.path?.split(separator: "?", maxSplits: 1).dropFirst().first?.split(separator: "&")
                .contains(where: { $0.hasPrefix("token=") }) == true
        {
            return try await next(request, body, metadata)
        }
        guard let header = request.headerFields[.authorization], header.count > 7,
            header.prefix(7).lowercased() == "bearer ",
            let caller = tokens.caller(token: header.dropFirst(7).drop(while: { $0 == " " }))
        else { throw Problem.unauthorized(tokenSent: request.headerFields[.authorization] != nil) }
        guard roles.contains(caller.role) else { throw Problem.forbidden(caller.role) }
        return try await Caller.$current.withValue(caller) { try await next(request, body, metadata) }
    }
}

extension Caller {
    /// Who made the request being handled (nil on open routes).
    @TaskLocal static var current: Caller?
}
