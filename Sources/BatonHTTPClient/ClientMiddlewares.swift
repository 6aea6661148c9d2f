import Baton
import BatonAPI
import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Sends the bearer token and says who is calling.
struct HeadersMiddleware: ClientMiddleware {
    let token: String?

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        if let token { request.headerFields[.authorization] = "Bearer \(token)" }
        request.headerFields[.userAgent] = "baton-http-client/\(BatonVersion.current)"
        return try await next(request, body, baseURL)
    }
}

/// Throws every refusal as ``BatonHTTPError/refused(_:)`` before the generated code decodes the
/// answer, so that each call handles only its successes.
struct RefusalMiddleware: ClientMiddleware {
    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let (response, responseBody) = try await next(request, body, baseURL)
        guard response.status.code >= 400 else { return (response, responseBody) }
        var bytes: [UInt8] = []
        if let responseBody { bytes = try await [UInt8](collecting: responseBody, upTo: 1 << 20) }
        guard response.headerFields[.contentType]?.hasPrefix("application/problem+json") == true,
            let json = try? JSONValue(parsing: bytes),
            let problem = try? json.decode(as: Components.Schemas.Problem.self)
        else {
            let text = String(decoding: bytes.prefix(200), as: UTF8.self)
            throw BatonHTTPError.unexpectedAnswer(status: Int(response.status.code), text)
        }
        let retryAfter = response.headerFields[.retryAfter].flatMap(Int64.init).map(Duration.seconds)
        throw BatonHTTPError.refused(
            BatonProblem(status: Int(response.status.code), problem: problem, retryAfter: retryAfter))
    }
}
