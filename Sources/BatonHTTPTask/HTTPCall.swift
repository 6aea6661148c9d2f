import Baton

/// The built-in `http` task as a stage of a typed Swift chain: what ``HTTPRequestArgs`` reads, as
/// values. Its templates (`{{input.id}}`, `{{stages.allocate.output.body.id}}`,
/// `{{secrets.TOKEN}}`) are filled by the worker that runs it, as for a chain enqueued over HTTP;
/// the stage's output is an ``HTTPReply``.
///
/// ```swift
/// Chain(input: order)
///     .then(HTTPCall(.post, "https://api.example/orders/{{input.id}}/invoice",
///                       json: ["amount": "{{input.amount}}"],
///                       auth: .oauth2(tokenURL: "https://auth.example/token", clientID: "baton",
///                                     secret: "{{secrets.CLIENT_SECRET}}")))
///     .then(RecordInvoice())   // a BatonTask whose Input is HTTPReply
/// ```
///
/// It is not a ``BatonTask``: a task's `Input` must be the previous stage's `Output`, and a request
/// takes any input (it reads it through templates). `Chain.then(_:name:lane:retry:timeout:)`
/// takes it after a stage of any output type instead. (Not named `HTTPRequest`/`HTTPResponse`:
/// swift-http-types has those, and every Hummingbird service imports them.)
public struct HTTPCall: Sendable, Hashable {
    public enum Method: String, Sendable, Hashable {
        case get = "GET", head = "HEAD", post = "POST", put = "PUT", patch = "PATCH", delete = "DELETE"
        case options = "OPTIONS"
    }

    public enum Body: Sendable, Hashable {
        /// JSON whose string leaves are templates (a leaf that is one tag keeps the value's type).
        case json(JSONValue)
        case text(String)
        /// Bytes: a template that fills in to their base64.
        case base64(String)
        case multipart([Part])
    }

    /// A form field, or a file when it has a file name.
    public struct Part: Sendable, Hashable {
        public enum Content: Sendable, Hashable {
            case text(String)
            case base64(String)
            case json(JSONValue)
        }

        public var name: String
        public var filename: String?
        public var contentType: String?
        public var content: Content

        public init(name: String, filename: String? = nil, contentType: String? = nil, _ content: Content) {
            self.name = name
            self.filename = filename
            self.contentType = contentType
            self.content = content
        }
    }

    public enum Auth: Sendable, Hashable {
        case hmac(secret: String, header: String = "X-Signature", algorithm: HTTPRequestArgs.HMACAlgorithm = .sha256)
        case oauth2(tokenURL: String, clientID: String, secret: String, scope: String? = nil)
    }

    public var method: Method
    public var url: String
    public var headers: [String: String]
    public var query: [String: String]
    public var body: Body?
    public var auth: Auth?
    /// The request's own limit (the stage's timeout bounds it too); nil: 30 s.
    public var timeout: Duration?
    /// What a status means, by status or class: `["404": "success", "5xx": "fail"]`.
    public var expect: [String: String]
    public var maxResponseBytes: Int?

    public init(
        _ method: Method, _ url: String, headers: [String: String] = [:], query: [String: String] = [:],
        body: Body? = nil, auth: Auth? = nil, timeout: Duration? = nil, expect: [String: String] = [:],
        maxResponseBytes: Int? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.query = query
        self.body = body
        self.auth = auth
        self.timeout = timeout
        self.expect = expect
        self.maxResponseBytes = maxResponseBytes
    }

    /// A request with a JSON body.
    public init(
        _ method: Method, _ url: String, json: JSONValue, headers: [String: String] = [:], auth: Auth? = nil
    ) {
        self.init(method, url, headers: headers, body: .json(json), auth: auth)
    }

    /// The `http` task's args.
    public var args: JSONValue {
        var args: [String: JSONValue] = ["method": .string(method.rawValue), "url": .string(url)]
        if !headers.isEmpty { args["headers"] = .object(headers.mapValues(JSONValue.string)) }
        if !query.isEmpty { args["query"] = .object(query.mapValues(JSONValue.string)) }
        switch body {
        case .json(let json): args["json"] = json
        case .text(let text): args["body"] = .string(text)
        case .base64(let text): args["body_base64"] = .string(text)
        case .multipart(let parts):
            args["multipart"] = .array(
                parts.map { part in
                    var fields: [String: JSONValue] = ["name": .string(part.name)]
                    if let filename = part.filename { fields["filename"] = .string(filename) }
                    if let type = part.contentType { fields["content_type"] = .string(type) }
                    switch part.content {
                    case .text(let text): fields["text"] = .string(text)
                    case .base64(let text): fields["base64"] = .string(text)
                    case .json(let json): fields["json"] = json
                    }
                    return .object(fields)
                })
        case nil: break
        }
        switch auth {
        case .hmac(let secret, let header, let algorithm):
            args["auth"] = [
                "hmac": [
                    "secret": .string(secret), "header": .string(header), "algorithm": .string(algorithm.rawValue),
                ]
            ]
        case .oauth2(let tokenURL, let clientID, let secret, let scope):
            var oauth: [String: JSONValue] = [
                "token_url": .string(tokenURL), "client_id": .string(clientID), "secret": .string(secret),
            ]
            if let scope { oauth["scope"] = .string(scope) }
            args["auth"] = ["oauth2": .object(oauth)]
        case nil: break
        }
        if let timeout { args["timeout"] = .string(DurationFormat.format(timeout)) }
        if !expect.isEmpty { args["expect"] = .object(expect.mapValues(JSONValue.string)) }
        if let maxResponseBytes { args["max_response_bytes"] = .number(JSONNumber(maxResponseBytes)) }
        return .object(args)
    }
}

/// What an `http` stage returns: the status, the headers (names in lower case, repeated ones
/// joined with `, `), and the body (parsed JSON when the response says JSON, else text, else
/// base64; `null` when empty).
public struct HTTPReply: Codable, Sendable, Hashable {
    public var status: Int
    public var headers: [String: String]
    public var body: JSONValue

    public init(status: Int, headers: [String: String] = [:], body: JSONValue = .null) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The body decoded as `T`, numbers exact.
    public func body<T: Decodable>(as type: T.Type) throws -> T { try body.decode(as: T.self) }
}

extension Chain {
    /// Sends `request` next, with the built-in `http` task; its templates read this chain's output
    /// as `input`. A malformed request is refused when the chain is enqueued, naming the field
    /// (`stages[1].args.url`), as for a chain sent over HTTP.
    public func then(
        _ request: HTTPCall, name: String? = nil, lane: String? = nil, retry: RetryPolicy = .default,
        timeout: Duration = TaskStage.defaultTimeout
    ) -> Chain<HTTPReply> {
        appending(
            .task(HTTPRequestArgs.taskName, args: request.args, name: name, lane: lane, retry: retry, timeout: timeout))
    }
}
