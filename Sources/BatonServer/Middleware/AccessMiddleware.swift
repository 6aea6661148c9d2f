import BatonAPI
import HTTPTypes
import OpenAPIRuntime

/// Lets a request through to its operation only with a token of a role the operation admits (its
/// `x-baton-roles` in the OpenAPI document), among the operations the token is limited to, if any:
/// 401 without a known token, 403 otherwise. An operation on what belongs to the whole cluster
/// (`x-baton-cluster`: workers, lanes, lane and rate settings, metrics) also needs a token that no
/// queue list limits. The caller is then ``Caller/current`` for the handler, which holds a token
/// limited to queues to those queues.
struct AccessMiddleware: ServerMiddleware {
    let access: Access
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
            let caller = try await access.token(secret: header.dropFirst(7).drop(while: { $0 == " " }))?.caller
        else { throw Problem.unauthorized(tokenSent: request.headerFields[.authorization] != nil) }
        try Self.check(caller, operationID, operation)
        RequestScope.tokenName?.value = caller.name
        return try await Caller.$current.withValue(caller) { try await next(request, body, metadata) }
    }

    /// 403 unless `caller` may call the operation at all (its queues are checked by the handler).
    static func check(_ caller: Caller, _ operationID: String, _ operation: APIDocument.Operation?) throws {
        guard operation?.roles.contains(caller.role) ?? true else { throw Problem.forbidden(caller.role) }
        if let operations = caller.operations, !operations.contains(operationID) {
            throw Problem.outOfScope("token \"\(caller.name)\" is limited to other operations than \(operationID)")
        }
        if operation?.clusterWide == true, caller.queues != nil {
            throw Problem.outOfScope(
                "token \"\(caller.name)\" is limited to queues; \(operationID) concerns the whole cluster")
        }
    }
}

extension Caller {
    /// Who made the request being handled (nil on open routes).
    @TaskLocal static var current: Caller?
}
