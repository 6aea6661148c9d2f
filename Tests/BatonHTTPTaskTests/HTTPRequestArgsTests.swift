import Baton
import BatonHTTPTask
import Foundation
import Testing

struct HTTPRequestArgsTests {
    @Test func aFullRequestIsRead() throws {
        let args = try HTTPRequestArgs([
            "method": "post", "url": "https://api.example/u/{{input.id}}", "headers": ["X-Key": "{{secrets.KEY}}"],
            "query": ["page": 2, "q": "{{input.q}}"], "json": ["a": "{{input.a}}"], "timeout": "5s",
            "expect": ["404": "success", "5xx": "fail"], "max_response_bytes": 1024,
        ])
        #expect(args.method == "POST")
        #expect(args.query.map(\.name) == ["page", "q"])
        #expect(args.timeout == .seconds(5))
        #expect(args.maxResponseBytes == 1024)
        #expect(args.templates.flatMap(\.tags).contains(["secrets", "KEY"]))
        #expect(args.expect.outcome(for: 404) == .success)
        #expect(args.expect.outcome(for: 503) == .fail)
    }

    @Test func eachMistakeIsRefusedAtItsPath() {
        let cases: [(JSONValue, String)] = [
            (["url": "https://x"], "args.method"),
            (["method": "FETCH", "url": "https://x"], "args.method"),
            (["method": "GET"], "args.url"),
            (["method": "GET", "url": "ftp://x"], "args.url"),
            (["method": "GET", "url": "https://x/{{input"], "args.url"),
            (["method": "GET", "url": "https://x", "headers": ["Bad Name": "v"]], "args.headers.Bad Name"),
            (["method": "GET", "url": "https://x", "headers": ["X": ["nested"]]], "args.headers.X"),
            (["method": "POST", "url": "https://x", "json": [:], "body": "t"], "args.body"),
            (["method": "GET", "url": "https://x", "body": "t"], "args.body"),
            (["method": "POST", "url": "https://x", "json": ["a": ["{{#b}}"]]], "args.json.a[0]"),
            (["method": "GET", "url": "https://x", "timeout": "2h"], "args.timeout"),
            (["method": "GET", "url": "https://x", "expect": ["4xx": "ok"]], "args.expect.4xx"),
            (["method": "GET", "url": "https://x", "expect": ["99": "fail"]], "args.expect.99"),
            (["method": "GET", "url": "https://x", "max_response_bytes": 0], "args.max_response_bytes"),
            (["method": "GET", "url": "https://x", "retries": 3], "args.retries"),
            (["method": "GET", "url": "https://x", "auth": "hmac"], "args.auth"),
            (["method": "GET", "url": "https://x", "auth": [:]], "args.auth"),
            (["method": "GET", "url": "https://x", "auth": ["basic": [:]]], "args.auth.basic"),
            (["method": "GET", "url": "https://x", "auth": ["hmac": [:], "oauth2": [:]]], "args.auth"),
            (["method": "GET", "url": "https://x", "auth": ["hmac": [:]]], "args.auth.hmac.secret"),
            (
                ["method": "GET", "url": "https://x", "auth": ["hmac": ["secret": "s", "algorithm": "md5"]]],
                "args.auth.hmac.algorithm"
            ),
            (
                ["method": "GET", "url": "https://x", "auth": ["hmac": ["secret": "s", "header": "X Sig"]]],
                "args.auth.hmac.header"
            ),
            (
                ["method": "GET", "url": "https://x", "auth": ["hmac": ["secret": "{{secrets"]]],
                "args.auth.hmac.secret"
            ),
            (
                ["method": "GET", "url": "https://x", "auth": ["hmac": ["secret": "whsec-literal"]]],
                "args.auth.hmac.secret"
            ),
            (
                [
                    "method": "GET", "url": "https://x",
                    "auth": ["oauth2": ["token_url": "https://t", "client_id": "c", "secret": "s3cret"]],
                ], "args.auth.oauth2.secret"
            ),
            (
                ["method": "GET", "url": "https://x", "auth": ["oauth2": ["client_id": "c", "secret": "s"]]],
                "args.auth.oauth2.token_url"
            ),
            (
                [
                    "method": "GET", "url": "https://x",
                    "auth": ["oauth2": ["token_url": "ftp://t", "client_id": "c", "secret": "s"]],
                ], "args.auth.oauth2.token_url"
            ),
            (
                [
                    "method": "GET", "url": "https://x",
                    "auth": [
                        "oauth2": ["token_url": "https://t", "client_id": "c", "secret": "s", "client_auth": "jwt"]
                    ],
                ], "args.auth.oauth2.client_auth"
            ),
            (
                [
                    "method": "GET", "url": "https://x",
                    "auth": ["oauth2": ["token_url": "https://t", "client_id": "c", "secret": "s", "audience": "a"]],
                ], "args.auth.oauth2.audience"
            ),
            (
                [
                    "method": "GET", "url": "https://x", "headers": ["Authorization": "Bearer x"],
                    "auth": ["oauth2": ["token_url": "https://t", "client_id": "c", "secret": "s"]],
                ], "args.headers.Authorization"
            ),
            (["method": "POST", "url": "https://x", "body": "t", "body_base64": "dA=="], "args.body_base64"),
            (["method": "GET", "url": "https://x", "body_base64": "dA=="], "args.body_base64"),
            (["method": "POST", "url": "https://x", "body_base64": ["x"]], "args.body_base64"),
            (["method": "POST", "url": "https://x", "multipart": [:]], "args.multipart"),
            (["method": "POST", "url": "https://x", "multipart": []], "args.multipart"),
            (["method": "POST", "url": "https://x", "multipart": ["x"]], "args.multipart[0]"),
            (["method": "POST", "url": "https://x", "multipart": [["text": "t"]]], "args.multipart[0].name"),
            (
                ["method": "POST", "url": "https://x", "multipart": [["name": "a\r\nX: y", "text": "t"]]],
                "args.multipart[0].name"
            ),
            (["method": "POST", "url": "https://x", "multipart": [["name": "a"]]], "args.multipart[0]"),
            (
                ["method": "POST", "url": "https://x", "multipart": [["name": "a", "text": "t", "base64": "dA=="]]],
                "args.multipart[0]"
            ),
            (
                ["method": "POST", "url": "https://x", "multipart": [["name": "a", "text": "t", "size": 1]]],
                "args.multipart[0].size"
            ),
            (
                ["method": "POST", "url": "https://x", "multipart": [["name": "a", "text": "{{input"]]],
                "args.multipart[0].text"
            ),
            (
                ["method": "POST", "url": "https://x", "multipart": [["name": "a", "json": ["k": "{{#s}}"]]]],
                "args.multipart[0].json.k"
            ),
            (
                ["method": "POST", "url": "https://x", "multipart": [["name": "a", "text": "t", "filename": ["x"]]]],
                "args.multipart[0].filename"
            ),
            (
                [
                    "method": "POST", "url": "https://x",
                    "multipart": [["name": "a", "text": "t", "content_type": "pdf"]],
                ], "args.multipart[0].content_type"
            ),
            (
                [
                    "method": "POST", "url": "https://x", "headers": ["Content-Type": "text/plain"],
                    "multipart": [["name": "a", "text": "t"]],
                ], "args.headers.Content-Type"
            ),
            ("GET https://x", "args"),
        ]
        for (args, path) in cases {
            #expect {
                try HTTPRequestArgs(args)
            } throws: { error in
                guard case BatonError.invalidChain(let at, _) = error else { return false }
                return at == path
            }
        }
    }

    @Test func aChainWithAMalformedHTTPStageIsRefusedWhenEnqueued() {
        let chain = ChainDefinition(stages: [
            .task("noop"), .task("http", args: ["method": "GET", "url": "https://x/{{input"]),
        ])
        #expect(throws: Never.self, "the core model knows no task's args") { try chain.validate() }
        #expect {
            try chain.validate(checkingArgs: HTTPRequestArgs.check)
        } throws: { error in
            guard case BatonError.invalidChain(let path, _) = error else { return false }
            return path == "stages[1].args.url"
        }
    }

    @Test func statusesHaveTheDocumentedDefaultsAndOverrides() throws {
        let plain = HTTPExpectations()
        for status in [200, 201, 204, 299] { #expect(plain.outcome(for: status) == .success) }
        for status in [408, 425, 429, 500, 502, 503, 599] { #expect(plain.outcome(for: status) == .retry) }
        for status in [100, 304, 400, 401, 404, 409, 422] { #expect(plain.outcome(for: status) == .fail) }
        #expect(plain.follows(302) && plain.follows(308) && !plain.follows(304))

        let custom = HTTPExpectations(exact: [404: .success, 503: .fail], classes: [5: .retry, 3: .success])
        #expect(custom.outcome(for: 404) == .success)
        #expect(custom.outcome(for: 503) == .fail, "the exact status wins over its class")
        #expect(custom.outcome(for: 500) == .retry)
        #expect(custom.outcome(for: 302) == .success)
        #expect(!custom.follows(302), "a redirect that expect names is the answer, not followed")
    }

    @Test func retryAfterIsReadAsSecondsOrAnHTTPDate() throws {
        let now = try #require(HTTPExpectations.httpDate("Sun, 06 Nov 1994 08:49:37 GMT"))
        #expect(HTTPExpectations.retryAfter("120", now: now) == .seconds(120))
        #expect(HTTPExpectations.retryAfter(" 1 ", now: now) == .seconds(1))
        #expect(HTTPExpectations.retryAfter("Sun, 06 Nov 1994 08:50:07 GMT", now: now) == .seconds(30))
        #expect(HTTPExpectations.retryAfter("Sun, 06 Nov 1994 08:00:00 GMT", now: now) == .zero, "a past date: now")
        #expect(HTTPExpectations.retryAfter("-5", now: now) == nil)
        #expect(HTTPExpectations.retryAfter("soon", now: now) == nil)
    }
}

/// `HTTPCall` is the `http` task's args as values: every field reaches the args the task reads.
struct HTTPCallTests {
    @Test func everyFieldBecomesTheArgsTheTaskReads() throws {
        let call = HTTPCall(
            .put, "https://api.example/files/{{input.id}}", headers: ["X-Trace": "{{job.id}}"], query: ["v": "2"],
            body: .multipart([
                .init(name: "meta", .json(["id": "{{input.id}}"])),
                .init(name: "file", filename: "a.bin", contentType: "application/pdf", .base64("{{input.data}}")),
                .init(name: "note", .text("hi")),
            ]),
            auth: .oauth2(tokenURL: "https://auth.example/token", clientID: "c", secret: "{{secrets.S}}", scope: "w"),
            timeout: .seconds(90), expect: ["409": "success"], maxResponseBytes: 2048)
        let args = try HTTPRequestArgs(call.args)
        #expect(args.method == "PUT")
        #expect(args.headers.map(\.name) == ["X-Trace"])
        #expect(args.query.map(\.name) == ["v"])
        guard case .multipart(let parts) = args.body else {
            Issue.record("not a form: \(args.body)")
            return
        }
        #expect(parts.map(\.name) == ["meta", "file", "note"])
        #expect(parts[1].contentType == "application/pdf")
        guard case .oauth2(let oauth) = args.auth else {
            Issue.record("no oauth2")
            return
        }
        #expect(oauth.clientAuthentication == .basic)
        #expect(args.timeout == .seconds(90))
        #expect(args.expect.outcome(for: 409) == .success)
        #expect(args.maxResponseBytes == 2048)

        let signed = try HTTPRequestArgs(
            HTTPCall(.post, "https://x", json: ["n": 1], auth: .hmac(secret: "{{secrets.K}}", algorithm: .sha512)).args)
        #expect(
            signed.auth
                == .hmac(secret: try Template(parsing: "{{secrets.K}}"), header: "X-Signature", algorithm: .sha512))
        for body in [HTTPCall.Body.text("t"), .base64("dA==")] {
            _ = try HTTPRequestArgs(HTTPCall(.post, "https://x", body: body).args)
        }
    }
}
