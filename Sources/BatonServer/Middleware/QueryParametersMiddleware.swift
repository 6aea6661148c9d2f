import Baton
import BatonAPI
import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Refuses a query parameter the operation does not declare, one given without a value, or one
/// whose value is not of its declared type, each as a 400 naming it (as a body's unknown fields are
/// refused): a misspelt `?wiat=30s` is not a silent default, and `?limit=ten` says which parameter
/// is wrong (the generated code's own error would not).
///
/// A parameter of `key=value` items marked `x-baton-dotted` is also taken as `<name>.<key>=<value>`
/// (`?metadata.tenant=42`), the form people write, which OpenAPI 3.0 has no way to declare: such
/// an item is rewritten to the declared form (`?metadata=tenant%3D42`) before the generated code
/// reads the query.
struct QueryParametersMiddleware: ServerMiddleware {
    let document: APIDocument

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, metadata: ServerRequestMetadata, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let declared = document.operations[operationID]?.queryParameters ?? [:]
        let dotted = document.operations[operationID]?.dottedParameters ?? []
        var request = request
        if let path = request.path, let query = path.split(separator: "?", maxSplits: 1).dropFirst().first {
            var items: [String] = []
            for item in query.split(separator: "&", omittingEmptySubsequences: true) {
                var parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                var name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
                if declared[name] == nil, let dot = name.firstIndex(of: "."), dotted.contains(String(name[..<dot])) {
                    let key = parts[0][parts[0].index(after: parts[0].firstIndex(of: ".")!)...]
                    guard !key.isEmpty else { throw Problem.invalid(name, "\(name) names no key") }
                    guard parts.count == 2, !parts[1].isEmpty else {
                        throw Problem.invalid(name, "\(name) is given without a value")
                    }
                    name = String(name[..<dot])
                    parts = [Substring(name), Substring(key + "%3D" + parts[1])]
                }
                items.append(parts.joined(separator: "="))
                guard let type = declared[name] else {
                    throw Problem.invalid(
                        name,
                        declared.isEmpty
                            ? "this operation takes no query parameters"
                            : "unknown query parameter \"\(name)\"; this operation takes "
                                + declared.keys.sorted().joined(separator: ", "))
                }
                guard parts.count == 2, !parts[1].isEmpty else {
                    throw Problem.invalid(name, "\(name) is given without a value")
                }
                let value = String(parts[1]).removingPercentEncoding ?? String(parts[1])
                switch type {
                case "integer" where Int64(value) == nil:
                    throw Problem.invalid(name, "\(name) must be an integer")
                case "boolean" where value != "true" && value != "false":
                    throw Problem.invalid(name, "\(name) must be true or false")
                case "date-time" where RFC3339.parse(value) == nil:
                    // What the generated decoder would refuse with a DecodingError and no name.
                    throw Problem.invalid(
                        name,
                        "\(name) must be a time with its offset (RFC 3339), such as 2026-12-06T09:30:00Z or "
                            + "2026-12-06T10:30:00+01:00; a `+` in a query is written %2B")
                default: break
                }
            }
            request.path = path.prefix { $0 != "?" } + "?" + items.joined(separator: "&")
        }
        return try await next(request, body, metadata)
    }
}
