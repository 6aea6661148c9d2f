import Foundation

/// An error as the control plane answers it: `application/problem+json` (RFC 9457).
public struct ProblemDetails: Codable, Sendable, Hashable, Error {
    /// `urn:baton:problem:<name>` for Baton's own problems (see `name`), `about:blank` for plain
    /// HTTP errors.
    public var type: String
    public var title: String
    public var status: Int
    public var detail: String?
    /// The JSON path of the field at fault in the request body, or the query parameter's name.
    public var path: String?
    /// For `unknown-task`: the tasks no live worker serves.
    public var tasks: [String]?

    public static let typePrefix = "urn:baton:problem:"

    public init(
        type: String = "about:blank", title: String, status: Int, detail: String? = nil, path: String? = nil,
        tasks: [String]? = nil
    ) {
        self.type = type
        self.title = title
        self.status = status
        self.detail = detail
        self.path = path
        self.tasks = tasks
    }

    /// Baton's name for the problem (`invalid-request`, `unknown-task`, …); nil for plain HTTP errors.
    public var name: String? {
        type.hasPrefix(Self.typePrefix) ? String(type.dropFirst(Self.typePrefix.count)) : nil
    }
}
