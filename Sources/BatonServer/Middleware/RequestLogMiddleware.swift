import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// One log line per request, after the response, with its request id; the id is also returned
/// as `X-Request-Id`. A caller's own `X-Request-Id` (up to 128 visible ASCII characters) is used
/// instead of a new one, so that logs can be followed across services.
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let level: Logger.Level

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var context = context
        let id: String
        if let given = request.headers[.requestID], (1...128).contains(given.utf8.count),
            given.utf8.allSatisfy({ (0x21...0x7e).contains($0) })
        {
            id = given
        } else {
            id = context.id
        }
        context.logger[metadataKey: "request_id"] = .string(id)
        let start = ContinuousClock.now
        let tokenName = RequestScope.TokenName()
        var response = try await RequestScope.$logger.withValue(context.logger) {
            try await RequestScope.$requestID.withValue(id) {
                try await RequestScope.$tokenName.withValue(tokenName) { try await next(request, context) }
            }
        }
        if let name = tokenName.value { context.logger[metadataKey: "token"] = .string(name) }
        response.headers[.requestID] = id
        let elapsed = ContinuousClock.now - start
        context.logger.log(
            level: response.status.code >= 500 ? .error : level, "request",
            metadata: [
                "method": .string(request.method.rawValue), "path": .string(request.uri.path),
                "status": .stringConvertible(response.status.code),
                "ms": .string(
                    String(
                        format: "%.2f",
                        Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)),
            ])
        return response
    }
}

extension HTTPField.Name {
    static let requestID = HTTPField.Name("X-Request-Id")!
}
