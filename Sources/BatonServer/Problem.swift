import Baton
import BatonAPI
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// An error answered as `application/problem+json` (RFC 9457).
///
/// `type` is a `urn:baton:problem:…` name, which clients can switch on. `path` is the JSON path of
/// the field at fault in the request body (or the name of the query parameter or header).
struct Problem: Error, HTTPResponseError {
    var status: HTTPResponse.Status
    var type: String
    var title: String
    var detail: String?
    var path: String?
    /// For `unknown-task`: the tasks no live worker serves.
    var tasks: [String]?
    var headers: HTTPFields = [:]

    init(
        _ status: HTTPResponse.Status, type: String? = nil, title: String? = nil, detail: String? = nil,
        path: String? = nil
    ) {
        self.status = status
        self.type =
            Self.typePrefix + (type ?? status.reasonPhrase.lowercased().replacingOccurrences(of: " ", with: "-"))
        self.title = title ?? status.reasonPhrase
        self.detail = detail
        self.path = path
    }

    static let typePrefix = "urn:baton:problem:"

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = Components.Schemas.Problem(
            _type: type, title: title, status: Int(status.code), detail: detail, path: path, tasks: tasks)
        var bytes: [UInt8] = []
        // A problem holds strings and an integer: it always encodes.
        try! JSONValue(encoding: body).write(into: &bytes)
        var headers = headers
        headers[.contentType] = "application/problem+json"
        headers[.contentLength] = String(bytes.count)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    // MARK: the problems Baton answers with

    static func invalid(_ path: String, _ detail: String) -> Problem {
        Problem(.badRequest, type: "invalid-request", title: "The request is not valid", detail: detail, path: path)
    }

    /// Baton's own refusal of a chain or a name, its path under `prefix` (`jobs[3].` in a batch).
    static func invalid(_ error: BatonError, prefix: String = "") -> Problem {
        guard case .invalidChain(let path, let reason) = error else { return invalid(prefix, "\(error)") }
        return invalid(prefix + path, reason)
    }

    /// Baton's own error as a problem: an unknown job is a 404, any other refusal a 400 naming the
    /// field at fault. The API's and the dashboard's answer alike.
    static func from(_ error: BatonError) -> Problem {
        if case .jobNotFound(let id) = error { return .notFound("no job has id \(id)") }
        return .invalid(error)
    }

    /// A schedule, lane setting or rate limit that a settings file defines: the file owns it.
    static func ownedBySettings(_ what: String) -> Problem {
        conflict("\(what) is defined in the settings file: change it there")
    }

    static func idempotencyKeyTaken(path: String) -> Problem {
        Problem(
            .conflict, type: "idempotency-key-taken", title: "The idempotency key names another caller's job",
            path: path)
    }

    static func notFound(_ detail: String) -> Problem { Problem(.notFound, type: "not-found", detail: detail) }

    static func methodNotAllowed(_ method: HTTPRequest.Method, path: String, allow: [HTTPRequest.Method]) -> Problem {
        let allowed = allow.map(\.rawValue).joined(separator: ", ")
        var problem = Problem(
            .methodNotAllowed, type: "method-not-allowed", detail: "\(method) is not allowed on \(path); use \(allowed)"
        )
        problem.headers[.allow] = allowed
        return problem
    }

    static func tooLarge(limit: Int) -> Problem {
        Problem(
            .contentTooLarge, type: "body-too-large", title: "The request body is too large",
            detail: "the limit is \(limit) bytes")
    }

    static func conflict(_ detail: String) -> Problem {
        Problem(.conflict, type: "conflict", title: "The job is not in a state that allows this", detail: detail)
    }

    /// No token, or one this server does not know (`tokenSent`).
    static func unauthorized(tokenSent: Bool) -> Problem {
        var problem = Problem(
            .unauthorized, type: "unauthorized", title: "A valid bearer token is required",
            detail: tokenSent
                ? "the bearer token sent is not one this server accepts"
                : "send Authorization: Bearer <token>")
        problem.headers[.wwwAuthenticate] = "Bearer"
        return problem
    }

    static func forbidden(_ role: Role) -> Problem {
        Problem(
            .forbidden, type: "forbidden", title: "The token's role does not allow this",
            detail: "a token with role \(role.rawValue) may not do this")
    }

    /// 403 for a token whose scope (queues or operations) does not reach this.
    static func outOfScope(_ detail: String, path: String? = nil) -> Problem {
        Problem(
            .forbidden, type: "forbidden", title: "The token's scope does not allow this", detail: detail, path: path)
    }
}
