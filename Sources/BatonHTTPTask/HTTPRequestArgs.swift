import Baton
import Foundation

/// The args of a stage running the built-in `http` task, checked:
///
/// ```json
/// {"method": "POST", "url": "https://api.example.com/uploads/{{input.id}}",
///  "headers": {"Authorization": "Bearer {{secrets.API_TOKEN}}"}, "query": {"v": "2"},
///  "json": {"name": "{{input.name}}", "size": "{{input.size}}"},
///  "timeout": "30s", "expect": {"404": "success", "409": "fail"}, "max_response_bytes": 1048576}
/// ```
///
/// `url`, header and query values and the string leaves of `json` (or `body`, a text body) are
/// `Template`s. Checked when a chain is enqueued, so a malformed `http` stage is refused with the
/// path of the field at fault rather than failing when it runs.
public struct HTTPRequestArgs: Sendable, Hashable {
    public enum Body: Sendable, Hashable {
        case none
        /// JSON whose string leaves are templates; a leaf that is one tag keeps the value's type.
        case json(JSONValue)
        case text(Template)
    }

    public struct Field: Sendable, Hashable {
        public var name: String
        public var value: Template
    }

    /// The name the task is registered under.
    public static let taskName = "http"

    /// The check ``ChainDefinition/validate(checkingArgs:)`` makes of an `http` stage's args;
    /// other tasks' args pass.
    public static let check: ChainDefinition.ArgsCheck = { task, args, path throws(BatonError) in
        if task == taskName { _ = try HTTPRequestArgs(args, path: path) }
    }
    public static let methods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    public static let defaultTimeout = Duration.seconds(30)
    public static let maxTimeout = Duration.seconds(3600)
    public static let defaultMaxResponseBytes = 10 << 20
    public static let maxResponseBytesLimit = 100 << 20
    static let fields: Set<String> = [
        "method", "url", "headers", "query", "json", "body", "timeout", "expect", "max_response_bytes",
    ]

    public var method: String
    public var url: Template
    public var headers: [Field]
    public var query: [Field]
    public var body: Body
    public var timeout: Duration
    public var expect: HTTPExpectations
    public var maxResponseBytes: Int

    /// Reads `args`; a problem is reported at its JSON path under `path` (`stages[1].args.url`).
    public init(_ args: JSONValue, path: String = "args") throws(BatonError) {
        func invalid(_ field: String, _ reason: String) -> BatonError {
            .invalidChain(path: field.isEmpty ? path : "\(path).\(field)", reason: reason)
        }
        func template(_ value: JSONValue, at field: String) throws(BatonError) -> Template {
            let text: String
            switch value {
            case .string(let string): text = string
            case .number, .bool: text = value.jsonText
            default: throw invalid(field, "must be a string")
            }
            do {
                return try Template(parsing: text)
            } catch {
                throw invalid(field, "\(error)")
            }
        }
        func fieldList(_ name: String) throws(BatonError) -> [Field] {
            guard let value = args[name] else { return [] }
            guard case .object(let object) = value else { throw invalid(name, "must be an object of strings") }
            var fields: [Field] = []
            for (key, value) in object.sorted(by: { $0.key < $1.key }) {
                fields.append(Field(name: key, value: try template(value, at: "\(name).\(key)")))
            }
            return fields
        }

        guard case .object(let object) = args else { throw invalid("", "the http task's args must be an object") }
        if let unknown = object.keys.filter({ !Self.fields.contains($0) }).min() {
            throw invalid(unknown, "unknown field; expected one of \(Self.fields.sorted().joined(separator: ", "))")
        }
        guard case .string(let method)? = args["method"], Self.methods.contains(method.uppercased()) else {
            throw invalid("method", "must be one of \(Self.methods.sorted().joined(separator: ", "))")
        }
        self.method = method.uppercased()
        guard let url = args["url"] else { throw invalid("url", "is required") }
        self.url = try template(url, at: "url")
        // A URL that starts with text must start with its scheme; one that starts with a tag is
        // checked once filled in.
        if case .text(let literal) = self.url.parts.first,
            !["http://", "https://"].contains(where: { literal.lowercased().hasPrefix($0) })
        {
            throw invalid("url", "must be an http:// or https:// URL")
        }
        headers = try fieldList("headers")
        for header in headers where !Self.isToken(header.name) {
            throw invalid("headers.\(header.name)", "is not a valid header name")
        }
        query = try fieldList("query")
        switch (args["json"], args["body"]) {
        case (.some, .some): throw invalid("body", "give json or body, not both")
        case (let json?, nil):
            try Self.checkTemplates(in: json, path: "\(path).json")
            body = .json(json)
        case (nil, let text?): body = .text(try template(text, at: "body"))
        case (nil, nil): body = .none
        }
        if case .none = body {
        } else if self.method == "GET" || self.method == "HEAD" {
            throw invalid("body", "\(self.method) requests carry no body")
        }
        if let timeout = args["timeout"] {
            guard case .string(let text) = timeout, let duration = DurationFormat.parse(text), duration > .zero,
                duration <= Self.maxTimeout
            else { throw invalid("timeout", "must be a duration from 1ms to 1h, such as \"30s\"") }
            self.timeout = duration
        } else {
            timeout = Self.defaultTimeout
        }
        expect = try HTTPExpectations(args["expect"] ?? .object([:]), path: "\(path).expect")
        if let limit = args["max_response_bytes"] {
            guard let bytes = limit.numberValue?.integer(as: Int.self), (1...Self.maxResponseBytesLimit).contains(bytes)
            else { throw invalid("max_response_bytes", "must be an integer from 1 to \(Self.maxResponseBytesLimit)") }
            maxResponseBytes = bytes
        } else {
            maxResponseBytes = Self.defaultMaxResponseBytes
        }
    }

    /// Every template of the request, the body's string leaves included.
    public var templates: [Template] {
        var templates = [url] + headers.map(\.value) + query.map(\.value)
        switch body {
        case .none: break
        case .text(let text): templates.append(text)
        case .json(let json):
            Self.forEachString(in: json) { text in
                if let template = try? Template(parsing: text) { templates.append(template) }
            }
        }
        return templates
    }

    /// `json` with every string leaf filled from `scope`.
    public static func render(json: JSONValue, in scope: JSONValue) throws(TemplateError) -> JSONValue {
        switch json {
        case .string(let text):
            let template = try Template(parsing: text)
            if let path = template.soleTag { return try Template.value(at: path, in: scope) }
            return .string(try template.render(in: scope))
        case .array(let items):
            var rendered: [JSONValue] = []
            for item in items { rendered.append(try render(json: item, in: scope)) }
            return .array(rendered)
        case .object(let fields):
            var rendered: [String: JSONValue] = [:]
            for (key, value) in fields { rendered[key] = try render(json: value, in: scope) }
            return .object(rendered)
        default:
            return json
        }
    }

    private static func checkTemplates(in json: JSONValue, path: String) throws(BatonError) {
        switch json {
        case .string(let text):
            do {
                _ = try Template(parsing: text)
            } catch {
                throw .invalidChain(path: path, reason: "\(error)")
            }
        case .array(let items):
            for (index, item) in items.enumerated() { try checkTemplates(in: item, path: "\(path)[\(index)]") }
        case .object(let fields):
            for (key, value) in fields { try checkTemplates(in: value, path: "\(path).\(key)") }
        default: break
        }
    }

    private static func forEachString(in json: JSONValue, _ body: (String) -> Void) {
        switch json {
        case .string(let text): body(text)
        case .array(let items): items.forEach { forEachString(in: $0, body) }
        case .object(let fields): fields.values.forEach { forEachString(in: $0, body) }
        default: break
        }
    }

    /// RFC 9110's token: the characters a header name may have.
    static func isToken(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
    }
}
