import AsyncHTTPClient
import Baton
import BatonHTTPClient
import BatonHTTPTask
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// `http`: one HTTP request described by the stage's args (`HTTPRequestArgs`), filled from the
/// stage's input, earlier stages' outputs, the job and the worker's secrets. Its output is
/// `{"status", "headers", "body"}`, the body parsed when it is JSON, else text, else base64.
///
/// Templates read `input` (the previous stage's output), `stages.<name>.output` (and `.runs`),
/// `job.id`, `job.input` (the job's own, in any stage), `job.metadata`, `job.queue`, `job.stage`,
/// `job.attempt`, `secrets.<NAME>` and `signals.<NAME>.token` (the one-time token of a signal a
/// later stage awaits). Every request carries `Idempotency-Key: <job id>-<step>` (the stage's index
/// unless `goto` or `repeat` changed the path; unless a header sets one), a `User-Agent` naming
/// Baton and asks for gzip; redirects are followed up to 5 times, each hop checked against the
/// outbound policy.
public struct HTTPTask: Sendable {
    public static let name = HTTPRequestArgs.taskName
    static let maxRedirects = 5
    /// The longest an OAuth2 token request may take.
    static let tokenTimeoutSeconds: Int64 = 30
    public var configuration: HTTPTaskConfiguration

    public init(configuration: HTTPTaskConfiguration = HTTPTaskConfiguration()) {
        self.configuration = configuration
    }

    /// The task as the process's environment configures it; a malformed `BATON_HTTP_ALLOW` or
    /// `BATON_HTTP_DENY` fails its stages with the reason (`baton worker` refuses to start with one).
    static let environment = Result { () throws(OutboundPolicyError) in
        HTTPTask(configuration: try .fromEnvironment())
    }

    @Sendable func run(args: JSONValue, input: String, context: StageContext) async throws -> String {
        let request: HTTPRequestArgs
        do {
            request = try HTTPRequestArgs(args)
        } catch {
            throw TaskFailure.permanent("\(error)")
        }
        var secrets: [String: JSONValue] = [:]
        // Every path a template of the request names (the URL, headers, body, form parts, auth).
        let paths = request.templates.flatMap(\.tags)
        for path in paths where path.count > 1 && path[0] == "secrets" {
            guard let value = configuration.secrets[path[1]] else {
                // The worker's configuration, not the job, is at fault: another worker may have it.
                throw HTTPTaskError("no secret \(path[1]) on this worker: set BATON_SECRET_\(path[1])")
            }
            secrets[path[1]] = .string(value)
        }
        // `{{signals.NAME.token}}`: the one-time token of a signal a later stage awaits, for a
        // callback URL (`…/v1/jobs/{{job.id}}/signals/NAME?token={{signals.NAME.token}}`).
        var signals: [String: JSONValue] = [:]
        for path in paths
        where path.count == 3 && path[0] == "signals" && path[2] == "token" {
            signals[path[1]] = ["token": .string(try await context.signalToken(for: path[1]))]
        }
        let redact = Redactor(secrets.values.compactMap { if case .string(let text) = $0 { text } else { nil } })
        // `{{stages.NAME.output}}`: the stage's latest run; `{{stages.NAME.runs}}`: every run's
        // output, in order (the pages a repeated stage fetched).
        var runs: [String: [JSONValue]] = [:]
        for run in context.earlier { if let name = run.name { runs[name, default: []].append(run.output) } }
        let stages = runs.mapValues { outputs -> JSONValue in ["output": outputs.last!, "runs": .array(outputs)] }
        var job: [String: JSONValue] = [
            "id": .number(context.jobID), "metadata": context.metadata, "queue": .string(context.queue),
            "stage": .number(context.stageIndex), "attempt": .number(context.attempt),
        ]
        // `{{job.input}}`: read (for a later stage, from the database) only when a template names it.
        if paths.contains(where: { $0.count > 1 && $0[0] == "job" && $0[1] == "input" }) {
            job["input"] = try await context.jobInput()
        }
        var scope: [String: JSONValue] = [
            "input": try JSONValue(parsing: input), "stages": .object(stages), "job": .object(job),
            "secrets": .object(secrets), "signals": .object(signals),
        ]
        // `{{item}}` and `{{item_index}}`: a map run's element and its index (any member's input
        // and place), read only when a template names them.
        if paths.contains(where: { $0.first == "item" || $0.first == "item_index" }),
            let index = try await context.memberIndex()
        {
            scope["item"] = try await context.jobInput()
            scope["item_index"] = .number(JSONNumber(index))
        }
        do {
            return redact(try await perform(request, scope: .object(scope), context: context, redact: redact)).jsonText
        } catch let failure as TaskFailure {
            throw TaskFailure(
                redact(failure.message), code: failure.code, details: failure.details.map { redact($0) },
                retry: failure.retry)
        } catch let error as HTTPTaskError {
            throw HTTPTaskError(redact(error.description))
        } catch {
            throw HTTPTaskError(redact("\(error)"))
        }
    }

    private func perform(
        _ args: HTTPRequestArgs, scope: JSONValue, context: StageContext, redact: Redactor
    ) async throws -> JSONValue {
        var url = try filled(args.url, scope, "url")
        if !args.query.isEmpty {
            var pairs: [String] = []
            for field in args.query {
                let value = try filled(field.value, scope, "query.\(field.name)")
                pairs.append(Self.queryEncoded(field.name) + "=" + Self.queryEncoded(value))
            }
            // After what the URL's own query holds, before any fragment.
            let fragment = url.firstIndex(of: "#")
            let base = fragment.map { String(url[..<$0]) } ?? url
            url =
                base + (base.contains("?") ? "&" : "?") + pairs.joined(separator: "&")
                + (fragment.map { String(url[$0...]) } ?? "")
        }
        var headers = HTTPHeaders()
        var secretHeaders = Set<String>()
        for header in args.headers {
            let value = try filled(header.value, scope, "headers.\(header.name)")
            guard !value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
                throw TaskFailure.permanent("headers.\(header.name) holds a line break or NUL once filled in")
            }
            headers.add(name: header.name, value: value)
            if header.value.tags.contains(where: { $0.first == "secrets" }) {
                secretHeaders.insert(header.name.lowercased())
            }
        }
        if !headers.contains(name: "Idempotency-Key") {
            headers.add(name: "Idempotency-Key", value: context.idempotencyKey)
        }
        if !headers.contains(name: "User-Agent") {
            headers.add(name: "User-Agent", value: "Baton/\(BatonVersion.current)")
        }
        if !headers.contains(name: "Accept-Encoding") { headers.add(name: "Accept-Encoding", value: "gzip, deflate") }
        var body: [UInt8]?
        switch args.body {
        case .none: break
        case .json(let json):
            do {
                body = Array(try HTTPRequestArgs.render(json: json, in: scope).jsonText.utf8)
            } catch {
                throw TaskFailure.permanent("json: \(error)")
            }
            if !headers.contains(name: "Content-Type") { headers.add(name: "Content-Type", value: "application/json") }
        case .text(let text):
            body = Array(try filled(text, scope, "body").utf8)
            if !headers.contains(name: "Content-Type") {
                headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
            }
        case .base64(let text):
            body = try decoded(text, scope, "body_base64")
            if !headers.contains(name: "Content-Type") {
                headers.add(name: "Content-Type", value: "application/octet-stream")
            }
        case .multipart(let parts):
            let form = MultipartForm(try filled(parts, scope))
            body = form.bytes
            headers.add(name: "Content-Type", value: form.contentType)
        }

        var method = args.method
        let deadline = NIODeadline.now() + .milliseconds(args.timeout.milliseconds)
        // AsyncHTTPClient logs requests and responses, headers and all, at trace level: where a
        // secret may be. It logs nothing the operator needs above debug.
        var clientLogger = context.logger
        clientLogger.logLevel = max(clientLogger.logLevel, .info)
        let started = ContinuousClock.now
        let origin = URL(string: url).map(Self.origin)
        var signing: (secret: String, header: String, algorithm: HTTPRequestArgs.HMACAlgorithm)?
        var oauth:
            (key: OAuth2Tokens.Key, token: OAuth2Tokens.Token, fetch: @Sendable () async throws -> OAuth2Tokens.Token)?
        switch args.auth {
        case .hmac(let secret, let header, let algorithm):
            signing = (try filled(secret, scope, "auth.hmac.secret"), header, algorithm)
        case .oauth2(let settings):
            let grant = OAuth2Grant(
                tokenURL: try filled(settings.tokenURL, scope, "auth.oauth2.token_url"),
                clientID: try filled(settings.clientID, scope, "auth.oauth2.client_id"),
                secret: try filled(settings.secret, scope, "auth.oauth2.secret"),
                scope: try settings.scope.map { try filled($0, scope, "auth.oauth2.scope") },
                basic: settings.clientAuthentication == .basic)
            let key = OAuth2Tokens.Key(
                tokenURL: grant.tokenURL, clientID: grant.clientID, secret: grant.secret, scope: grant.scope)
            // The fetch is shared by every stage that asks meanwhile, so it has its own deadline rather
            // than the first asker's (a stage cancelled or timed out meanwhile waits for it at most that).
            let fetch: @Sendable () async throws -> OAuth2Tokens.Token = { [self, clientLogger] in
                try await accessToken(
                    grant, deadline: .now() + .seconds(Self.tokenTimeoutSeconds), logger: clientLogger)
            }
            let token = try await OAuth2Tokens.shared.token(for: key, fetch: fetch)
            headers.replaceOrAdd(name: "Authorization", value: "Bearer \(token.value)")
            oauth = (key, token, fetch)
        case nil: break
        }
        var refreshed = false
        for hop in 0...Self.maxRedirects {
            let (target, route, proxy) = try destination(url)
            let host = target.host ?? ""
            let sameOrigin = Self.origin(target) == origin
            if let signing {
                // A signature is for the service it was written for.
                if sameOrigin {
                    headers.replaceOrAdd(
                        name: signing.header,
                        value: RequestSignature.hex(
                            signing.algorithm, secret: signing.secret, method: method, url: target, body: body))
                } else {
                    headers.remove(name: signing.header)
                }
            }
            var request = HTTPClientRequest(url: url)
            request.method = HTTPMethod(rawValue: method)
            request.headers = headers
            if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
            let client = OutboundClients.client(
                configuration.policy, route, proxy: proxy, tls: configuration.tls.rule(for: host))
            func send() async throws -> HTTPClientResponse {
                do {
                    return try await client.execute(request, deadline: deadline, logger: clientLogger)
                } catch let denied as OutboundDenied {
                    throw TaskFailure.permanent("\(method) \(url): \(denied)")
                } catch {
                    throw HTTPTaskError(
                        "\(method) \(url) failed: \(NetworkFailure.sentence(error, at: Self.address(target)))")
                }
            }
            var response = try await send()
            if response.status == .unauthorized, let current = oauth, sameOrigin, !refreshed {
                // The token was revoked or rotated before it expired: one new token, one more try.
                _ = await Self.excerpt(response)
                refreshed = true
                OAuth2Tokens.shared.refused(current.token, for: current.key)
                let token = try await OAuth2Tokens.shared.token(for: current.key, fetch: current.fetch)
                oauth?.token = token
                headers.replaceOrAdd(name: "Authorization", value: "Bearer \(token.value)")
                request.headers = headers
                response = try await send()
            }
            let status = Int(response.status.code)
            context.logger.debug(
                "http request",
                metadata: [
                    "method": "\(method)", "url": "\(redact(url))", "status": "\(status)",
                    "version": "\(response.version)",
                    "elapsed": "\(ContinuousClock.now - started)",
                ])
            if args.expect.follows(status), let location = response.headers.first(name: "Location") {
                guard hop < Self.maxRedirects else {
                    throw TaskFailure.permanent("more than \(Self.maxRedirects) redirects, the last to \(location)")
                }
                guard let next = URL(string: location, relativeTo: target)?.absoluteURL else {
                    throw TaskFailure.permanent("a redirect to \(location), which is not a URL")
                }
                if Self.origin(next) != Self.origin(target) {
                    // Credentials are for the origin they were written for.
                    for name in ["Authorization", "Cookie", "Proxy-Authorization"] + secretHeaders {
                        headers.remove(name: name)
                    }
                }
                if status == 303 || ((status == 301 || status == 302) && method == "POST") {
                    method = method == "HEAD" ? "HEAD" : "GET"
                    body = nil
                    headers.remove(name: "Content-Type")
                }
                _ = await Self.excerpt(response)  // read, so that the connection can be used again
                url = next.absoluteString
                continue
            }
            switch args.expect.outcome(for: status) {
            case .success:
                return [
                    "status": .number(status), "headers": Self.object(response.headers),
                    "body": Self.body(
                        try await Self.read(response, limit: args.maxResponseBytes),
                        contentType: response.headers.first(name: "Content-Type")),
                ]
            case .retry:
                // A 429 or 503 that says how long to stay away pauses the stage's rate limit key
                // for that long, not only this stage: the other stages of the key would be
                // refused too.
                let wait = response.headers.first(name: "Retry-After").flatMap { HTTPExpectations.retryAfter($0) }
                let pause = status == 429 || status == 503
                throw await Self.statusFailure(
                    status, method: method, url: url, response: response,
                    retry: wait.map { .after($0, pausingRateLimit: pause) } ?? .byPolicy)
            case .fail:
                throw await Self.statusFailure(status, method: method, url: url, response: response, retry: .never)
            }
        }
        throw TaskFailure.permanent("more than \(Self.maxRedirects) redirects")
    }

    /// Where a request to `url` may go: the URL, how the outbound policy lets its host through, and
    /// the proxy it goes through, if any. A refusal fails the stage for good, its message prefixed
    /// with `field`.
    ///
    /// A host let through only by the address it connects to (it matches no allowed name, and
    /// `http.allow` has networks) cannot go through a proxy: the connection is the proxy's, so its
    /// address says nothing about the host's.
    private func destination(_ url: String, field: String = "") throws -> (
        target: URL, route: OutboundPolicy.Route, proxy: OutboundProxies.Proxy?
    ) {
        guard let target = URL(string: url), let scheme = target.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = target.host, !host.isEmpty
        else { throw TaskFailure.permanent("\(field)not an http:// or https:// URL: \(url)") }
        guard let route = configuration.policy.route(host: host) else {
            throw TaskFailure.permanent(
                "\(field)\(host) is not allowed (BATON_HTTP_ALLOW / BATON_HTTP_DENY; link-local and cloud metadata "
                    + "addresses are always denied)")
        }
        let proxy = configuration.proxies.proxy(scheme: scheme, host: host)
        if proxy != nil, route == .allowedAddress {
            throw TaskFailure.permanent(
                "\(field)\(host) is not allowed: it matches no host name in BATON_HTTP_ALLOW, and through a proxy its "
                    + "address cannot be checked against the allowed networks (name it in BATON_HTTP_ALLOW, or in NO_PROXY)"
            )
        }
        return (target, route, proxy)
    }

    /// Scheme, host and port: where credentials may go.
    /// `host:port`, where a connection to `url` goes.
    static func address(_ url: URL) -> String {
        "\(url.host ?? ""):\(url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80))"
    }

    static func origin(_ url: URL) -> String {
        "\(url.scheme?.lowercased() ?? "")://\(url.host?.lowercased() ?? ""):\(url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80))"
    }

    struct OAuth2Grant: Sendable {
        var tokenURL: String
        var clientID: String
        var secret: String
        var scope: String?
        var basic: Bool
    }

    /// An access token by the client-credentials grant (RFC 6749 §4.4), asked of the token endpoint
    /// under the same outbound policy as every request. A refusal (4xx) fails the stage for good; a
    /// network error, 408, 429 or 5xx is retried by the stage's policy.
    private func accessToken(_ grant: OAuth2Grant, deadline: NIODeadline, logger: Logger) async throws
        -> OAuth2Tokens.Token
    {
        let (target, route, proxy) = try destination(grant.tokenURL, field: "auth.oauth2.token_url: ")
        let host = target.host ?? ""
        var form = ["grant_type=client_credentials"]
        if let scope = grant.scope { form.append("scope=" + Self.queryEncoded(scope)) }
        var request = HTTPClientRequest(url: grant.tokenURL)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "Baton/\(BatonVersion.current)")
        if grant.basic {
            let credentials = Self.queryEncoded(grant.clientID) + ":" + Self.queryEncoded(grant.secret)
            request.headers.add(name: "Authorization", value: "Basic " + Data(credentials.utf8).base64EncodedString())
        } else {
            form += [
                "client_id=" + Self.queryEncoded(grant.clientID), "client_secret=" + Self.queryEncoded(grant.secret),
            ]
        }
        request.body = .bytes(ByteBuffer(string: form.joined(separator: "&")))
        let response: HTTPClientResponse
        do {
            response = try await OutboundClients.client(
                configuration.policy, route, proxy: proxy, tls: configuration.tls.rule(for: host)
            ).execute(request, deadline: deadline, logger: logger)
        } catch let denied as OutboundDenied {
            throw TaskFailure.permanent("auth.oauth2.token_url \(grant.tokenURL): \(denied)")
        } catch {
            throw HTTPTaskError(
                "the OAuth2 token request to \(grant.tokenURL) failed: "
                    + NetworkFailure.sentence(error, at: URL(string: grant.tokenURL).map(Self.address)))
        }
        let status = Int(response.status.code)
        guard (200..<300).contains(status) else {
            let message =
                "the OAuth2 token endpoint \(grant.tokenURL) answered \(status)" + (await Self.excerpt(response))
            if HTTPExpectations().outcome(for: status) == .retry { throw HTTPTaskError(message) }
            throw TaskFailure.permanent(message)
        }
        let bytes = try await Self.read(response, limit: 64 << 10)
        guard let answer = try? JSONValue(parsing: bytes), case .string(let value)? = answer["access_token"],
            !value.isEmpty
        else { throw TaskFailure.permanent("the OAuth2 token endpoint \(grant.tokenURL) gave no access_token") }
        // Refreshed 30 seconds (or a tenth of its life, if shorter) before it expires.
        let expires = answer["expires_in"]?.numberValue?.integer(as: Int.self).map { seconds in
            ContinuousClock.now + .seconds(seconds) - .seconds(min(30, Double(seconds) / 10))
        }
        return OAuth2Tokens.Token(value: value, expires: expires)
    }

    /// A query name or value, everything but RFC 3986's unreserved characters percent-encoded.
    static func queryEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    private func filled(_ template: Template, _ scope: JSONValue, _ field: String) throws -> String {
        do {
            return try template.render(in: scope)
        } catch {
            throw TaskFailure.permanent("\(field): \(error)")
        }
    }

    /// The bytes whose base64 `template` fills in to.
    private func decoded(_ template: Template, _ scope: JSONValue, _ field: String) throws -> [UInt8] {
        guard let bytes = MultipartForm.bytes(base64: try filled(template, scope, field)) else {
            throw TaskFailure.permanent("\(field) is not base64 once filled in")
        }
        return bytes
    }

    /// A form's parts filled in. A file's content type is the stage's, else `application/json`
    /// for JSON, `text/plain; charset=utf-8` for text, `application/octet-stream` for bytes; a
    /// field has none unless the stage gives one.
    private func filled(_ parts: [HTTPRequestArgs.Part], _ scope: JSONValue) throws -> [MultipartForm.Part] {
        try parts.enumerated().map { index, part in
            let field = "multipart[\(index)]"
            let bytes: [UInt8]
            let type: String
            switch part.content {
            case .text(let text):
                bytes = Array(try filled(text, scope, "\(field).text").utf8)
                type = "text/plain; charset=utf-8"
            case .base64(let text):
                bytes = try decoded(text, scope, "\(field).base64")
                type = "application/octet-stream"
            case .json(let json):
                do {
                    bytes = Array(try HTTPRequestArgs.render(json: json, in: scope).jsonText.utf8)
                } catch {
                    throw TaskFailure.permanent("\(field).json: \(error)")
                }
                type = "application/json"
            }
            let filename = try part.filename.map { try filled($0, scope, "\(field).filename") }
            return MultipartForm.Part(
                name: part.name, filename: filename, contentType: part.contentType ?? (filename != nil ? type : nil),
                bytes: bytes)
        }
    }

    /// The body, at most `limit` bytes (decompressed); more fails the stage for good.
    private static func read(_ response: HTTPClientResponse, limit: Int) async throws -> [UInt8] {
        let tooLarge = TaskFailure.permanent("the response body is larger than max_response_bytes (\(limit))")
        if let length = response.headers.first(name: "Content-Length").flatMap(Int.init), length > limit {
            throw tooLarge
        }
        do {
            return Array(buffer: try await response.body.collect(upTo: limit))
        } catch is NIOTooManyBytesError {
            throw tooLarge
        }
    }

    /// A status the stage's `expect` does not take as success, as a typed failure: code
    /// `http_status`, details `{"status", "body"}` (the start of the body, parsed when it is JSON).
    private static func statusFailure(
        _ status: Int, method: String, url: String, response: HTTPClientResponse, retry: StageOutcome.RetryRequest
    ) async -> TaskFailure {
        let excerpt = await Self.excerpt(response)
        let text = excerpt.isEmpty ? "" : String(excerpt.dropFirst(2))
        let body = (try? JSONValue(parsing: text)) ?? .string(text)
        return TaskFailure(
            "HTTP \(status) from \(method) \(url)" + excerpt, code: "http_status",
            details: ["status": .number(JSONNumber(status)), "body": text.isEmpty ? .null : body], retry: retry)
    }

    /// The start of an error response's body, for the error message.
    private static func excerpt(_ response: HTTPClientResponse) async -> String {
        var bytes: [UInt8] = []
        do {
            for try await chunk in response.body {
                bytes += chunk.readableBytesView
                if bytes.count >= 512 { break }
            }
        } catch {}
        let text = String(decoding: bytes.prefix(512), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? "" : ": " + text
    }

    private static func object(_ headers: HTTPHeaders) -> JSONValue {
        var fields: [String: JSONValue] = [:]
        for (name, value) in headers {
            let key = name.lowercased()
            if case .string(let earlier)? = fields[key] {
                fields[key] = .string(earlier + ", " + value)
            } else {
                fields[key] = .string(value)
            }
        }
        return .object(fields)
    }

    /// JSON when the response says so and parses; else text when it is UTF-8; else base64. Text
    /// with a NUL character counts as binary: PostgreSQL's `jsonb` cannot hold one.
    static func body(_ bytes: [UInt8], contentType: String?) -> JSONValue {
        guard !bytes.isEmpty else { return .null }
        let type = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        if type == "application/json" || type.hasSuffix("+json"), !bytes.contains(0),
            let json = try? JSONValue(parsing: bytes), !json.jsonText.contains("\\u0000")
        {
            return json
        }
        if !bytes.contains(0), let text = String(validating: bytes, as: UTF8.self) { return .string(text) }
        return .string(Data(bytes).base64EncodedString())
    }
}

/// A failed request that is retried by the stage's policy (a network error, a retryable status).
struct HTTPTaskError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
