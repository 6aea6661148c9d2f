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
/// `Template`s. Instead of `json` or `body`, a stage may send bytes (`body_base64`, a template that
/// fills in to base64, such as an earlier binary response's body) or a `multipart/form-data` form:
///
/// ```json
/// "multipart": [{"name": "purpose", "text": "invoice"},
///               {"name": "file", "filename": "{{input.name}}", "content_type": "application/pdf",
///                "base64": "{{stages.render.output.body}}"},
///               {"name": "meta", "filename": "meta.json", "json": {"id": "{{job.id}}"}}]
/// ```
///
/// `auth` signs each request (`{"hmac": {"secret": "{{secrets.KEY}}"}}`) or sends an OAuth2 token
/// got by the client-credentials grant (`{"oauth2": {"token_url", "client_id", "secret", "scope"}}`);
/// see ``Auth``.
///
/// Checked when a chain is enqueued, so a malformed `http` stage is refused with the path of the
/// field at fault rather than failing when it runs.
public struct HTTPRequestArgs: Sendable, Hashable {
    public enum Body: Sendable, Hashable {
        case none
        /// JSON whose string leaves are templates; a leaf that is one tag keeps the value's type.
        case json(JSONValue)
        case text(Template)
        /// Bytes: the template fills in to their base64.
        case base64(Template)
        case multipart([Part])
    }

    /// One part of a `multipart/form-data` body: a field, or a file when it has a file name.
    public struct Part: Sendable, Hashable {
        public enum Content: Sendable, Hashable {
            case text(Template)
            case base64(Template)
            case json(JSONValue)
        }

        public var name: String
        public var filename: Template?
        public var contentType: String?
        public var content: Content
    }

    public struct Field: Sendable, Hashable {
        public var name: String
        public var value: Template
    }

    /// How a request proves who sends it.
    public enum Auth: Sendable, Hashable {
        /// `header: hex(HMAC(secret, METHOD + "\n" + path?query + "\n" + body))`, computed for every
        /// request sent (each redirect hop too).
        case hmac(secret: Template, header: String, algorithm: HMACAlgorithm)
        /// `Authorization: Bearer <token>`, the token got from `tokenURL` by the client-credentials
        /// grant (RFC 6749 §4.4), the client authenticated by HTTP Basic or in the form. Kept by
        /// the worker until it expires, fetched anew once when the service answers 401.
        case oauth2(OAuth2)
    }

    public enum HMACAlgorithm: String, Sendable, Hashable, CaseIterable {
        case sha256, sha512
    }

    public struct OAuth2: Sendable, Hashable {
        public var tokenURL: Template
        public var clientID: Template
        public var secret: Template
        public var scope: Template?
        public var clientAuthentication: ClientAuthentication

        /// How the client proves itself to the token endpoint (`client_auth`).
        public enum ClientAuthentication: String, Sendable, Hashable, CaseIterable {
            /// HTTP Basic, the default (RFC 6749 §2.3.1).
            case basic
            /// `client_id` and `client_secret` in the form.
            case body
        }
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
        "method", "url", "headers", "query", "json", "body", "body_base64", "multipart", "auth", "timeout", "expect",
        "max_response_bytes",
    ]
    static let partFields: Set<String> = ["name", "filename", "content_type", "text", "base64", "json"]
    /// The most parts a form may have.
    public static let maxParts = 100

    public var method: String
    public var url: Template
    public var headers: [Field]
    public var query: [Field]
    public var body: Body
    public var auth: Auth?
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
        let bodies = ["json", "body", "body_base64", "multipart"].filter { args[$0] != nil }
        if bodies.count > 1 { throw invalid(bodies[1], "give one of json, body, body_base64 and multipart") }
        switch bodies.first {
        case "json":
            try Self.checkTemplates(in: args["json"]!, path: "\(path).json")
            body = .json(args["json"]!)
        case "body": body = .text(try template(args["body"]!, at: "body"))
        case "body_base64": body = .base64(try template(args["body_base64"]!, at: "body_base64"))
        case "multipart":
            guard case .array(let items) = args["multipart"]!, (1...Self.maxParts).contains(items.count) else {
                throw invalid("multipart", "must be an array of 1 to \(Self.maxParts) parts")
            }
            var parts: [Part] = []
            for (index, item) in items.enumerated() {
                let at = "multipart[\(index)]"
                guard case .object(let fields) = item else { throw invalid(at, "must be an object") }
                if let unknown = fields.keys.filter({ !Self.partFields.contains($0) }).min() {
                    throw invalid(
                        "\(at).\(unknown)",
                        "unknown field; expected one of \(Self.partFields.sorted().joined(separator: ", "))")
                }
                guard case .string(let name)? = fields["name"], !name.isEmpty, Self.isPlainText(name) else {
                    throw invalid("\(at).name", "must be a non-empty string without line breaks")
                }
                var contentType: String?
                if let value = fields["content_type"] {
                    guard case .string(let text) = value, Self.isPlainText(text), text.contains("/") else {
                        throw invalid("\(at).content_type", "must be a media type such as \"application/pdf\"")
                    }
                    contentType = text
                }
                let sources = ["text", "base64", "json"].filter { fields[$0] != nil }
                let content: Part.Content
                switch (sources.count, sources.first) {
                case (1, "text"): content = .text(try template(fields["text"]!, at: "\(at).text"))
                case (1, "base64"): content = .base64(try template(fields["base64"]!, at: "\(at).base64"))
                case (1, _):
                    try Self.checkTemplates(in: fields["json"]!, path: "\(path).\(at).json")
                    content = .json(fields["json"]!)
                default: throw invalid(at, "give one of text, base64 and json")
                }
                var filename: Template?
                if let value = fields["filename"] { filename = try template(value, at: "\(at).filename") }
                parts.append(Part(name: name, filename: filename, contentType: contentType, content: content))
            }
            if headers.contains(where: { $0.name.lowercased() == "content-type" }) {
                throw invalid("headers.Content-Type", "a multipart body sets its own Content-Type (with its boundary)")
            }
            body = .multipart(parts)
        default: body = .none
        }
        if let field = bodies.first, self.method == "GET" || self.method == "HEAD" {
            throw invalid(field, "\(self.method) requests carry no body")
        }
        if let value = args["auth"] {
            auth = try Self.auth(value, headers: headers, invalid: invalid, template: template)
        } else {
            auth = nil
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

    private static func auth(
        _ value: JSONValue, headers: [Field], invalid: (String, String) -> BatonError,
        template: (JSONValue, String) throws(BatonError) -> Template
    ) throws(BatonError) -> Auth {
        func fields(_ value: JSONValue, at path: String, known: [String]) throws(BatonError) -> [String: JSONValue] {
            guard case .object(let fields) = value else { throw invalid(path, "must be an object") }
            if let unknown = fields.keys.filter({ !known.contains($0) }).min() {
                throw invalid("\(path).\(unknown)", "unknown field; expected one of \(known.joined(separator: ", "))")
            }
            return fields
        }
        let kinds = try fields(value, at: "auth", known: ["hmac", "oauth2"])
        guard kinds.count == 1, let (kind, settings) = kinds.first else {
            throw invalid("auth", "give one of hmac and oauth2")
        }
        if kind == "hmac" {
            let hmac = try fields(settings, at: "auth.hmac", known: ["secret", "header", "algorithm"])
            guard let secret = hmac["secret"] else { throw invalid("auth.hmac.secret", "is required") }
            var header = "X-Signature"
            if let value = hmac["header"] {
                guard case .string(let name) = value, isToken(name) else {
                    throw invalid("auth.hmac.header", "must be a header name")
                }
                header = name
            }
            var algorithm = HMACAlgorithm.sha256
            if let value = hmac["algorithm"] {
                guard case .string(let name) = value, let known = HMACAlgorithm(rawValue: name) else {
                    throw invalid("auth.hmac.algorithm", "must be sha256 or sha512")
                }
                algorithm = known
            }
            return .hmac(
                secret: try secretTemplate(secret, "auth.hmac.secret", invalid: invalid, template: template),
                header: header,
                algorithm: algorithm)
        }
        let oauth = try fields(
            settings, at: "auth.oauth2", known: ["token_url", "client_id", "secret", "scope", "client_auth"])
        for required in ["token_url", "client_id", "secret"] where oauth[required] == nil {
            throw invalid("auth.oauth2.\(required)", "is required")
        }
        let tokenURL = try template(oauth["token_url"]!, "auth.oauth2.token_url")
        if case .text(let literal) = tokenURL.parts.first,
            !["http://", "https://"].contains(where: { literal.lowercased().hasPrefix($0) })
        {
            throw invalid("auth.oauth2.token_url", "must be an http:// or https:// URL")
        }
        var clientAuthentication = OAuth2.ClientAuthentication.basic
        if let value = oauth["client_auth"] {
            guard case .string(let name) = value, let known = OAuth2.ClientAuthentication(rawValue: name) else {
                throw invalid("auth.oauth2.client_auth", "must be basic or body")
            }
            clientAuthentication = known
        }
        if headers.contains(where: { $0.name.lowercased() == "authorization" }) {
            throw invalid("headers.Authorization", "oauth2 sends its own Authorization header")
        }
        var scope: Template?
        if let value = oauth["scope"] { scope = try template(value, "auth.oauth2.scope") }
        return .oauth2(
            OAuth2(
                tokenURL: tokenURL, clientID: try template(oauth["client_id"]!, "auth.oauth2.client_id"),
                secret: try secretTemplate(
                    oauth["secret"]!, "auth.oauth2.secret", invalid: invalid, template: template),
                scope: scope,
                clientAuthentication: clientAuthentication))
    }

    /// A secret an auth helper uses: it must name a worker's secret (`{{secrets.NAME}}`), so that
    /// the job, its views and its logs hold only the name, never the secret itself.
    private static func secretTemplate(
        _ value: JSONValue, _ field: String, invalid: (String, String) -> BatonError,
        template: (JSONValue, String) throws(BatonError) -> Template
    ) throws(BatonError) -> Template {
        let parsed = try template(value, field)
        guard parsed.tags.contains(where: { $0.count == 2 && $0[0] == "secrets" }) else {
            throw invalid(field, "must name a worker's secret, such as \"{{secrets.API_KEY}}\", not hold the secret")
        }
        return parsed
    }

    /// Every template of the request, the body's string leaves included.
    public var templates: [Template] {
        var templates = [url] + headers.map(\.value) + query.map(\.value)
        switch body {
        case .none: break
        case .text(let text), .base64(let text): templates.append(text)
        case .json(let json): templates += Self.templates(in: json)
        case .multipart(let parts):
            for part in parts {
                if let filename = part.filename { templates.append(filename) }
                switch part.content {
                case .text(let text), .base64(let text): templates.append(text)
                case .json(let json): templates += Self.templates(in: json)
                }
            }
        }
        switch auth {
        case .hmac(let secret, _, _): templates.append(secret)
        case .oauth2(let oauth):
            templates += [oauth.tokenURL, oauth.clientID, oauth.secret] + (oauth.scope.map { [$0] } ?? [])
        case nil: break
        }
        return templates
    }

    private static func templates(in json: JSONValue) -> [Template] {
        var templates: [Template] = []
        forEachString(in: json) { text in
            if let template = try? Template(parsing: text) { templates.append(template) }
        }
        return templates
    }

    /// No line break or NUL: safe in a header line.
    static func isPlainText(_ text: String) -> Bool {
        !text.unicodeScalars.contains { $0 == "\r" || $0 == "\n" || $0 == "\0" }
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
