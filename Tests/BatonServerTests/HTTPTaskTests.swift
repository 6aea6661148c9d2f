import Baton
import BatonHTTPTask
import BatonServerTestSupport
import BatonTestSupport
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization
import Testing

@testable import BatonWorker

/// The built-in `http` task, end to end: chains enqueued over the control plane, run by a worker,
/// calling a real HTTP server on loopback.
@Suite(.timeLimit(.minutes(3)))
struct HTTPTaskTests {
    /// Tasks with the `http` task configured as given.
    static func tasks(_ configuration: HTTPTaskConfiguration) -> TaskRegistry {
        var tasks = serverTestTasks
        tasks.register(HTTPTask(configuration: configuration))
        return tasks
    }

    /// Waits until the job has finished; returns it.
    static func finished(_ server: TestServer, _ id: Int64) async throws -> JSONValue {
        try await server.job(id) { ["completed", "discarded", "cancelled"].contains($0["state"]?.stringValue) }
    }

    static func lastError(_ job: JSONValue) -> String {
        job["stages"]?.items.flatMap { $0["errors"]?.items ?? [] }.last?["error"]?.stringValue ?? ""
    }

    // MARK: chains

    /// Numbers go into a request (URL, JSON body) and come out of a response with their value: a
    /// template fills in the text a number was stored as, never a rounded `Double`.
    @Test func numbersInTemplatesAndResponsesAreExact() async throws {
        let big = "12345678901234567890123"
        try await withTargetServer({ request in
            TargetServer.text(
                #"{"balance": 98765432109876543210.25, "rate": 1e-7}"#, headers: [.contentType: "application/json"])
        }) { target async throws in
            try await withServer { server async throws in
                let created = try await server.call(
                    .POST, "/v1/jobs",
                    raw: """
                        {"input": {"account": \(big), "ratio": 0.30000000000000004441},
                         "stages": [{"task": "http", "args": {"method": "POST",
                            "url": "\(target.base)/accounts/{{input.account}}?ratio={{input.ratio}}",
                            "json": {"account": "{{input.account}}", "text": "n={{input.account}}"}}}]}
                        """)
                let id = try #require(created["id"]?.int64, "\(created.text)")
                let job = try await Self.finished(server, id)
                #expect(job["state"] == "completed", "\(job)")
                let received = try #require(target.received.first)
                #expect(received.path == "/accounts/\(big)")
                #expect(received.query == "ratio=0.30000000000000004441")
                #expect(received.body == #"{"account":\#(big),"text":"n=\#(big)"}"#)
                #expect(job["output"]?["body"]?["balance"]?.numberValue == JSONNumber("98765432109876543210.25"))
                #expect(job["output"]?["body"]?["rate"]?.numberValue == JSONNumber("1e-7"))
            }
        }
    }

    /// A status the stage does not expect fails it with a typed error: code `http_status`, the
    /// status and the start of the body (parsed when it is JSON) as details; shown by the API, the
    /// CLI and the dashboard.
    @Test func aFailedRequestCarriesItsStatusAndBody() async throws {
        try await withTargetServer({ _ in
            TargetServer.text(
                #"{"error": "out_of_stock", "sku": 9007199254740993}"#, status: .unprocessableContent,
                headers: [.contentType: "application/json"])
        }) { target async throws in
            try await withServer(worker: Self.tasks(HTTPTaskConfiguration())) { server async throws in
                let id = try await server.enqueue([
                    "stages": [["task": "http", "args": ["method": "POST", "url": .string(target.base + "/orders")]]]
                ])
                let job = try await Self.finished(server, id)
                #expect(job["state"] == "discarded", "\(job)")
                let error = try #require(job["stages"]?.items.first?["errors"]?.items.last)
                #expect(error["code"] == "http_status")
                #expect(error["details"]?["status"] == 422)
                #expect(
                    error["details"]?["body"] == [
                        "error": "out_of_stock", "sku": .number(JSONNumber("9007199254740993")!),
                    ])
                let shown = try await server.baton(["jobs", "show", "\(id)"])
                #expect(shown.out.contains("[http_status]"), "\(shown.out)")
                #expect(shown.out.contains("details {"), "\(shown.out)")
                var visitor = DashboardTests.Visitor(base: server.base)
                try await visitor.signIn(Token.read)
                let page = try await visitor.get("/ui/jobs/\(id)").html
                #expect(page.contains(#"<span class="badge s-discarded">http_status</span>"#))
                #expect(page.contains("out_of_stock"))
            }
        }
    }

    /// A later stage reads the job's own input (`{{job.input}}`), exact, not only the stage before's
    /// output.
    @Test func aLaterStageReadsTheJobsInput() async throws {
        let big = "12345678901234567890123"
        try await withTargetServer({ _ in TargetServer.text("ok") }) { target async throws in
            try await withServer(worker: Self.tasks(HTTPTaskConfiguration())) { server async throws in
                let created = try await server.call(
                    .POST, "/v1/jobs",
                    raw: """
                        {"input": {"order": \(big), "customer": "c-7"},
                         "stages": [{"task": "echo"},
                                    {"task": "http", "args": {"method": "POST",
                                      "url": "\(target.base)/orders/{{job.input.order}}",
                                      "json": {"customer": "{{job.input.customer}}", "order": "{{job.input.order}}"}}}]}
                        """)
                let id = try #require(created["id"]?.int64, "\(created.text)")
                let job = try await Self.finished(server, id)
                #expect(job["state"] == "completed", "\(job)")
                let received = try #require(target.received.first)
                #expect(received.path == "/orders/\(big)")
                #expect(received.body == #"{"customer":"c-7","order":\#(big)}"#)
            }
        }
    }

    /// A map's runs name their element and its index (`{{item}}`, `{{item_index}}`) in any stage
    /// of the run, the element exact.
    @Test func aMapRunNamesItsItemAndIndex() async throws {
        try await withTargetServer({ _ in TargetServer.text("ok") }) { target async throws in
            try await withServer(worker: Self.tasks(HTTPTaskConfiguration())) { server async throws in
                let created = try await server.call(
                    .POST, "/v1/jobs",
                    raw: """
                        {"input": [{"sku": "a", "qty": 12345678901234567890}, {"sku": "b", "qty": 2}],
                         "stages": [{"map": "{{output}}", "stages": [
                            {"task": "echo"},
                            {"task": "http", "args": {"method": "POST", "url": "\(target.base)/items/{{item_index}}",
                              "json": {"sku": "{{item.sku}}", "qty": "{{item.qty}}"}}}]}]}
                        """)
                let id = try #require(created["id"]?.int64, "\(created.text)")
                let job = try await Self.finished(server, id)
                #expect(job["state"] == "completed", "\(job)")
                let received = target.received.map { "\($0.path) \($0.body)" }.sorted()
                #expect(
                    received == [
                        #"/items/0 {"qty":12345678901234567890,"sku":"a"}"#, #"/items/1 {"qty":2,"sku":"b"}"#,
                    ], "\(received)")
            }
        }
    }

    /// Allocate an upload at an API, upload to the URL it answered with (its `&` intact) with the
    /// form field it gave, confirm with the id from the first answer.
    @Test func aThreeStepUploadChainPassesEachAnswerOn() async throws {
        try await withTargetServer({ request in
            switch (request.method, request.path) {
            case ("POST", "/uploads"):
                let base = "http://\(request.authority)"
                return TargetServer.json(
                    [
                        "upload_url": .string("\(base)/storage/bucket/obj-1?sig=a%2Fb&expires=99"),
                        "form": ["key": "k-123"], "id": "up-1",
                    ], status: .created)
            case ("PUT", "/storage/bucket/obj-1"):
                return TargetServer.text("stored", headers: [.eTag: "\"e-1\""])
            case ("POST", "/uploads/up-1/confirm"):
                return TargetServer.json(["confirmed": true])
            default:
                return TargetServer.text("no", status: .notFound)
            }
        }) { target async throws in
            try await withServer { server async throws in
                let id = try await server.enqueue([
                    "input": ["name": "report.pdf"], "metadata": ["content": "hello baton"],
                    "stages": [
                        [
                            "name": "allocate", "task": "http",
                            "args": [
                                "method": "POST", "url": .string("\(target.base)/uploads"),
                                "json": ["name": "{{input.name}}", "size": 11, "job": "{{job.id}}"],
                            ],
                        ],
                        [
                            "name": "upload", "task": "http",
                            "args": [
                                "method": "PUT", "url": "{{input.body.upload_url}}",
                                "headers": ["X-Upload-Key": "{{input.body.form.key}}", "Content-Type": "text/plain"],
                                "body": "{{job.metadata.content}}",
                            ],
                        ],
                        [
                            "name": "confirm", "task": "http",
                            "args": [
                                "method": "POST",
                                "url": .string("\(target.base)/uploads/{{stages.allocate.output.body.id}}/confirm"),
                                "json": ["id": "{{stages.allocate.output.body.id}}", "etag": "{{input.headers.etag}}"],
                                "headers": ["Idempotency-Key": "confirm-{{stages.allocate.output.body.id}}"],
                            ],
                        ],
                    ],
                ])
                let job = try await Self.finished(server, id)
                #expect(job["state"] == "completed", "\(job)")
                #expect(job["output"]?["status"] == 200)
                #expect(job["output"]?["body"] == ["confirmed": true])

                let allocate = try #require(target.received(path: "/uploads").first)
                #expect(allocate.json == ["name": "report.pdf", "size": 11, "job": .number(id)])
                #expect(allocate["Content-Type"] == "application/json")
                let upload = try #require(target.received(path: "/storage/bucket/obj-1").first)
                #expect(upload.method == "PUT")
                #expect(upload.query == "sig=a%2Fb&expires=99")
                #expect(upload["X-Upload-Key"] == "k-123")
                #expect(upload.body == "hello baton")
                let confirm = try #require(target.received(path: "/uploads/up-1/confirm").first)
                #expect(confirm.json == ["id": "up-1", "etag": "\"e-1\""])
                // A request the machine was too slow to answer in time is sent again, with the same
                // key (which is what the key is for): each key in order, however often.
                var keys: [String?] = []
                for key in target.received.map({ $0["Idempotency-Key"] }) where keys.last != key { keys.append(key) }
                #expect(keys == ["\(id)-0", "\(id)-1", "confirm-up-1"])
                #expect(target.received.allSatisfy { $0["User-Agent"] == "Baton/\(BatonVersion.current)" })
                #expect(target.received.allSatisfy { $0["Accept-Encoding"]?.contains("gzip") == true })
            }
        }
    }

    /// The seed's upload: allocate, fetch a rendered file (binary, so its body comes back as
    /// base64), send a multipart form (a field, a file from the job's input, the rendered file, a
    /// JSON file), put the rendered file again as a raw body, confirm. The server checks every
    /// part byte for byte.
    @Test func anUploadSendsMultipartFormsAndRawBytes() async throws {
        let rendered: [UInt8] = (0...255).map(UInt8.init).reversed() + [0, 13, 10, 45, 45]
        let chunk: [UInt8] = Array("first part, with \u{0} and é".utf8)
        try await withTargetServer({ request in
            let base = "http://\(request.authority)"
            switch (request.method, request.path) {
            case ("POST", "/uploads"):
                return TargetServer.json(
                    ["id": "up-1", "parts": .string("\(base)/uploads/up-1/parts")], status: .created)
            case ("GET", "/render"):
                return Response(
                    status: .ok, headers: [.contentType: "application/pdf"],
                    body: .init(byteBuffer: ByteBuffer(bytes: rendered)))
            case ("POST", "/uploads/up-1/parts"):
                return TargetServer.json(["etag": .string("e-\(request.bytes.count)")])
            case ("PUT", "/storage/up-1"):
                return TargetServer.text("", headers: [.eTag: "raw-\(request.bytes.count)"])
            case ("POST", "/uploads/up-1/complete"):
                return TargetServer.json(["done": true])
            default:
                return TargetServer.text("no", status: .notFound)
            }
        }) { target async throws in
            try await withServer { server async throws in
                let id = try await server.enqueue([
                    "input": ["name": "report", "chunk": .string(Data(chunk).base64EncodedString())],
                    "stages": [
                        [
                            "name": "allocate", "task": "http",
                            "args": [
                                "method": "POST", "url": .string("\(target.base)/uploads"),
                                "json": ["name": "{{input.name}}"],
                            ],
                        ],
                        [
                            "name": "render", "task": "http",
                            "args": ["method": "GET", "url": .string("\(target.base)/render")],
                        ],
                        [
                            "name": "parts", "task": "http",
                            "args": [
                                "method": "POST", "url": "{{stages.allocate.output.body.parts}}",
                                "multipart": [
                                    ["name": "upload", "text": "{{stages.allocate.output.body.id}}"],
                                    [
                                        "name": "chunk", "filename": "{{job.input.name}}.part1",
                                        "base64": "{{job.input.chunk}}",
                                    ],
                                    [
                                        "name": "rendered", "filename": "{{job.input.name}}.pdf",
                                        "content_type": "application/pdf",
                                        "base64": "{{stages.render.output.body}}",
                                    ],
                                    [
                                        "name": "meta", "filename": "meta.json",
                                        "json": ["job": "{{job.id}}", "size": 261],
                                    ],
                                ],
                            ],
                        ],
                        [
                            "name": "raw", "task": "http",
                            "args": [
                                "method": "PUT", "url": .string("\(target.base)/storage/up-1"),
                                "body_base64": "{{stages.render.output.body}}",
                            ],
                        ],
                        [
                            "task": "http",
                            "args": [
                                "method": "POST", "url": .string("\(target.base)/uploads/up-1/complete"),
                                "json": [
                                    "parts": "{{stages.parts.output.body.etag}}", "raw": "{{input.headers.etag}}",
                                ],
                            ],
                        ],
                    ],
                ])
                let job = try await Self.finished(server, id)
                #expect(job["state"] == "completed", "\(job)")

                let form = try #require(target.received(path: "/uploads/up-1/parts").first)
                let type = try #require(form["Content-Type"])
                #expect(type.hasPrefix("multipart/form-data; boundary=baton-"))
                let boundary = String(type.dropFirst("multipart/form-data; boundary=".count))
                let parts = try #require(MultipartParts.parts(of: form.bytes, boundary: boundary), "\(form.body)")
                #expect(
                    parts.map(\.disposition) == [
                        #"form-data; name="upload""#, #"form-data; name="chunk"; filename="report.part1""#,
                        #"form-data; name="rendered"; filename="report.pdf""#,
                        #"form-data; name="meta"; filename="meta.json""#,
                    ])
                #expect(
                    parts.map(\.contentType) == [
                        nil, "application/octet-stream", "application/pdf", "application/json",
                    ])
                #expect(parts[0].bytes == Array("up-1".utf8))
                #expect(parts[1].bytes == chunk)
                #expect(parts[2].bytes == rendered)
                #expect(try JSONValue(parsing: parts[3].bytes) == ["job": .number(id), "size": 261])

                let raw = try #require(target.received(path: "/storage/up-1").first)
                #expect(raw.bytes == rendered)
                #expect(raw["Content-Type"] == "application/octet-stream")
                let complete = try #require(target.received(path: "/uploads/up-1/complete").first)
                #expect(complete.json == ["parts": .string("e-\(form.bytes.count)"), "raw": "raw-261"])
            }
        }
    }

    /// A `body_base64` that fills in to something else fails the stage for good, saying which.
    @Test func aBodyThatIsNotBase64FailsTheStage() async throws {
        try await withTargetServer({ _ in TargetServer.text("ok") }) { target async throws in
            try await withServer { server async throws in
                let id = try await server.enqueue([
                    "input": ["data": "not base64!"],
                    "stages": [
                        [
                            "task": "http", "max_attempts": 3,
                            "args": [
                                "method": "PUT", "url": .string("\(target.base)/x"), "body_base64": "{{input.data}}",
                            ],
                        ]
                    ],
                ])
                let job = try await Self.finished(server, id)
                #expect(job["state"] == "discarded")
                #expect(
                    Self.lastError(job).contains("body_base64 is not base64 once filled in"), "\(Self.lastError(job))")
                #expect(target.received.isEmpty)
            }
        }
    }

    /// `auth.hmac`: the server recomputes the signature of method, path and body with the shared
    /// secret and accepts only a match; the secret itself is never sent.
    @Test func anHMACSignatureIsOneTheServerChecks() async throws {
        let secret = "whsec-\(UInt64.random(in: 0...UInt64.max))"
        try await withTargetServer({ request in
            let target = request.path + (request.query.isEmpty ? "" : "?" + request.query)
            let message = Array("\(request.method)\n\(target)\n".utf8) + request.bytes
            let expected = HMAC<SHA512>.authenticationCode(for: message, using: SymmetricKey(data: Array(secret.utf8)))
                .map { String(format: "%02x", $0) }.joined()
            return request["X-Baton-Signature"] == expected
                ? TargetServer.json(["ok": true]) : TargetServer.text("bad signature", status: .unauthorized)
        }) { target async throws in
            let tasks = Self.tasks(HTTPTaskConfiguration(secrets: ["SIGNING": secret]))
            try await withServer(worker: tasks) { server async throws in
                let id = try await server.enqueue([
                    "input": ["n": .number(JSONNumber("12345678901234567890")!)],
                    "stages": [
                        [
                            "task": "http",
                            "args": [
                                "method": "POST", "url": .string("\(target.base)/hooks/a%2Fb?x=1&y=%C3%A9"),
                                "json": ["n": "{{input.n}}"],
                                "auth": [
                                    "hmac": [
                                        "secret": "{{secrets.SIGNING}}", "header": "X-Baton-Signature",
                                        "algorithm": "sha512",
                                    ]
                                ],
                            ],
                        ]
                    ],
                ])
                let job = try await Self.finished(server, id)
                #expect(job["state"] == "completed", "\(Self.lastError(job))")
                #expect(job["output"]?["body"] == ["ok": true])
                let received = try #require(target.received.first)
                #expect(received.body == #"{"n":12345678901234567890}"#)
                #expect(!received.headers.contains { $0.value.contains(secret) })
            }
        }
    }

    /// `auth.oauth2`: ten stages share one token from the token endpoint; when the service stops
    /// taking it (rotated), the next stage gets a new one and tries once more.
    @Test func anOAuth2TokenIsFetchedOnceAndAgainAfterA401() async throws {
        struct Issuer {
            var issued: [String] = []
            var valid: Set<String> = []
            var forms: [String] = []
            var basic: [String?] = []
        }
        let issuer = Mutex(Issuer())
        try await withTargetServer({ request in
            switch request.path {
            case "/oauth/token":
                let token = issuer.withLock { issuer in
                    let token = "tok-\(issuer.issued.count + 1)"
                    issuer.issued.append(token)
                    issuer.valid.insert(token)
                    issuer.forms.append(request.body)
                    issuer.basic.append(request["Authorization"])
                    return token
                }
                return TargetServer.json(["access_token": .string(token), "token_type": "Bearer", "expires_in": 3600])
            default:
                let presented = request["Authorization"] ?? ""
                let ok = issuer.withLock { $0.valid.contains(presented.replacingOccurrences(of: "Bearer ", with: "")) }
                return ok ? TargetServer.json(["ok": true]) : TargetServer.text("expired", status: .unauthorized)
            }
        }) { target async throws in
            let tasks = Self.tasks(HTTPTaskConfiguration(secrets: ["CLIENT_SECRET": "s3cret:&"]))
            try await withServer(worker: tasks) { server async throws in
                let clientID = "client-\(UInt64.random(in: 0...UInt64.max))"
                func job() -> JSONValue {
                    [
                        "stages": [
                            [
                                "task": "http",
                                "args": [
                                    "method": "GET", "url": .string("\(target.base)/api/orders"),
                                    "auth": [
                                        "oauth2": [
                                            "token_url": .string("\(target.base)/oauth/token"),
                                            "client_id": .string(clientID),
                                            "secret": "{{secrets.CLIENT_SECRET}}", "scope": "orders:read",
                                        ]
                                    ],
                                ],
                            ]
                        ]
                    ]
                }
                var ids: [Int64] = []
                for _ in 0..<10 { ids.append(try await server.enqueue(job())) }
                for id in ids {
                    let done = try await Self.finished(server, id)
                    #expect(done["state"] == "completed", "\(Self.lastError(done))")
                }
                #expect(issuer.withLock { $0.issued } == ["tok-1"])
                let form = try #require(issuer.withLock { $0.forms.first })
                #expect(form == "grant_type=client_credentials&scope=orders%3Aread")
                let basic = "\(clientID):s3cret%3A%26"
                #expect(issuer.withLock { $0.basic.first } == "Basic " + Data(basic.utf8).base64EncodedString())

                issuer.withLock { _ = $0.valid.remove("tok-1") }  // rotated on the service's side
                let again = try await Self.finished(server, try await server.enqueue(job()))
                #expect(again["state"] == "completed", "\(Self.lastError(again))")
                #expect(again["stages"]?.items.first?["attempts"] == 1)
                #expect(issuer.withLock { $0.issued } == ["tok-1", "tok-2"])
                let calls = target.received(path: "/api/orders").map { $0["Authorization"] }
                #expect(calls.suffix(2) == ["Bearer tok-1", "Bearer tok-2"])
            }
        }
    }

    /// `HTTP_PROXY` and `NO_PROXY`: a request goes through a real forward proxy (a `CONNECT`
    /// tunnel, with the proxy's credentials) unless `NO_PROXY` names its host, which is reached
    /// directly.
    @Test func requestsGoThroughTheProxyUnlessNoProxyNamesTheHost() async throws {
        try await withTargetServer({ request in TargetServer.json(["path": .string(request.path)]) }) {
            service async throws in
            try await withConnectProxy { proxy async throws in
                let servicePort = try #require(URL(string: service.base)?.port)
                let proxies = try OutboundProxies(environment: [
                    "HTTP_PROXY": "http://baton:p%40ss@127.0.0.1:\(proxy.port)",
                    "NO_PROXY": "localhost,.internal.example",
                ])
                try await withServer(worker: Self.tasks(HTTPTaskConfiguration(proxies: proxies))) {
                    server async throws in
                    func get(_ url: String) async throws -> JSONValue {
                        try await Self.finished(
                            server,
                            try await server.enqueue([
                                "stages": [["task": "http", "args": ["method": "GET", "url": .string(url)]]]
                            ]))
                    }
                    let proxied = try await get("\(service.base)/through")
                    #expect(proxied["state"] == "completed", "\(Self.lastError(proxied))")
                    #expect(
                        proxy.tunnels == [
                            .init(
                                target: "127.0.0.1:\(servicePort)",
                                proxyAuthorization: "Basic " + Data("baton:p@ss".utf8).base64EncodedString())
                        ])
                    let direct = try await get("http://localhost:\(servicePort)/direct")
                    #expect(direct["state"] == "completed", "\(Self.lastError(direct))")
                    #expect(proxy.tunnels.count == 1, "NO_PROXY names localhost")
                    #expect(service.received.map(\.path) == ["/through", "/direct"])
                }
                // An allow list of networks only: a name cannot be judged by an address through a
                // proxy (the connection is the proxy's), so it is refused rather than let through.
                let networksOnly = HTTPTaskConfiguration(
                    policy: try OutboundPolicy(allow: "127.0.0.0/8", deny: nil),
                    proxies: try OutboundProxies(environment: ["HTTP_PROXY": "127.0.0.1:\(proxy.port)"]))
                try await withServer(worker: Self.tasks(networksOnly)) { server async throws in
                    let refused = try await Self.finished(
                        server,
                        try await server.enqueue([
                            "stages": [
                                [
                                    "task": "http", "max_attempts": 1,
                                    "args": ["method": "GET", "url": .string("http://localhost:\(servicePort)/named")],
                                ]
                            ]
                        ]))
                    #expect(refused["state"] == "discarded")
                    #expect(
                        Self.lastError(refused).contains("through a proxy its address"), "\(Self.lastError(refused))")
                    #expect(proxy.tunnels.count == 1)
                }
            }
        }
    }

    /// `http.tls`: a service with a private CA that takes only clients with a certificate it
    /// signed. A worker with the CA and a client certificate gets through, over HTTP/2; one with
    /// the CA alone is refused by the server; one with neither refuses the server's certificate.
    @Test func aPrivateCAAndAClientCertificateReachAMutualTLSService() async throws {
        let certificates = try await TestCertificates.forMutualTLS()
        defer { try? FileManager.default.removeItem(at: certificates.directory) }
        try await withMutualTLSServer(certificates) { base async throws in
            func run(_ tls: OutboundTLS, logs: LogCapture = LogCapture()) async throws -> JSONValue {
                try await withServer(worker: Self.tasks(HTTPTaskConfiguration(tls: tls)), workerLogger: logs.logger()) {
                    server async throws in
                    try await Self.finished(
                        server,
                        try await server.enqueue([
                            "stages": [
                                [
                                    "task": "http", "max_attempts": 1,
                                    "args": ["method": "GET", "url": .string("\(base)/secure")],
                                ]
                            ]
                        ]))
                }
            }
            let ca = certificates.path("ca.crt")
            let logs = LogCapture()
            let trusted = try await run(
                try OutboundTLS([
                    "*.other.example ca=\(certificates.path("server.crt"))",
                    "localhost ca=\(ca) cert=\(certificates.path("client.crt")) key=\(certificates.path("client.key"))",
                ]), logs: logs)
            #expect(trusted["state"] == "completed", "\(Self.lastError(trusted))")
            #expect(trusted["output"]?["body"] == ["ok": true])
            #expect(logs.text.contains("http request"), "\(logs.text)")
            #expect(logs.text.contains("HTTP/2"), "\(logs.text)")

            let withoutCertificate = try await run(try OutboundTLS(["localhost ca=\(ca)"]))
            #expect(withoutCertificate["state"] == "discarded")
            let untrusted = try await run(OutboundTLS())
            #expect(untrusted["state"] == "discarded")
            #expect(Self.lastError(untrusted).lowercased().contains("certificate"), "\(Self.lastError(untrusted))")
        }
    }

    /// A Swift chain mixes its own tasks with typed requests and still type-checks: an order goes
    /// out as JSON (exact numbers), the `HTTPReply` feeds a task that takes one, a malformed
    /// request is refused at enqueue with its path.
    @Test func aTypedSwiftChainMixesItsTasksWithRequests() async throws {
        struct Order: Codable, Sendable {
            var id: Int
            var amount: JSONNumber
        }
        struct Receipt: Codable, Sendable, Hashable {
            var receipt: String
            var charged: JSONNumber
        }
        struct ReadReceipt: BatonTask {
            func run(_ response: HTTPReply, context: StageContext) async throws -> Receipt {
                guard response.status == 201 else { throw TaskFailure.permanent("status \(response.status)") }
                return try response.body(as: Receipt.self)
            }
        }
        try await withTargetServer({ request in
            TargetServer.json(
                [
                    "receipt": .string("r\(request.path.split(separator: "/").last ?? "")"),
                    "charged": request.json?["amount"] ?? .null,
                ],
                status: .created)
        }) { target async throws in
            var tasks = Self.tasks(HTTPTaskConfiguration())
            tasks.register(ReadReceipt.self)
            try await withServer(worker: tasks) { server async throws in
                let chain = Chain(input: Order(id: 7, amount: JSONNumber("12345678901234567890.05")!))
                    .then(
                        HTTPCall(.post, "\(target.base)/orders/{{input.id}}", json: ["amount": "{{input.amount}}"]),
                        name: "charge"
                    )
                    .then(ReadReceipt())
                let handle = try await server.client.enqueue(chain)
                let receipt = try await handle.result()
                #expect(receipt == Receipt(receipt: "r7", charged: JSONNumber("12345678901234567890.05")!))
                #expect(target.received.first?.body == #"{"amount":12345678901234567890.05}"#)

                let malformed = Chain(input: Order(id: 1, amount: 1)).then(HTTPCall(.get, "ftp://x")).then(
                    ReadReceipt())
                await #expect(
                    throws: BatonError.invalidChain(
                        path: "stages[0].args.url", reason: "must be an http:// or https:// URL")
                ) {
                    _ = try await server.client.enqueue(malformed)
                }
            }
        }
    }

    /// 50 jobs for 5 customers, each `[render → delivery in lane customer-N]`; the server is slow at
    /// random and fails some deliveries with 503. Per customer it sees the deliveries in lane order,
    /// each once as a success, never two at a time.
    @Test func orderedWebhooksArriveInOrderOnceAndOneAtATime() async throws {
        struct Book {
            var inFlight: [String: Int] = [:]
            var overlaps = 0
            var successes: [String: [Int]] = [:]
            var keys: [String: Int] = [:]
            var failures = 0
        }
        let book = Mutex(Book())
        try await withTargetServer({ request in
            let customer = String(request.path.split(separator: "/").last ?? "")
            book.withLock { book in
                book.inFlight[customer, default: 0] += 1
                if book.inFlight[customer]! > 1 { book.overlaps += 1 }
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...15)))
            let fail = Int.random(in: 0..<4) == 0
            book.withLock { book in
                book.inFlight[customer]! -= 1
                if fail {
                    book.failures += 1
                } else {
                    book.successes[customer, default: []].append(request.json?["seq"]?.int64.map(Int.init) ?? -1)
                    book.keys[request["Idempotency-Key"] ?? "", default: 0] += 1
                }
            }
            return fail ? TargetServer.text("busy", status: .serviceUnavailable) : TargetServer.text("ok")
        }) { target async throws in
            try await withServer { server async throws in
                var jobs: [Int64: (customer: String, seq: Int)] = [:]
                for seq in 0..<50 {
                    let customer = "customer-\(seq % 5)"
                    let id = try await server.enqueue([
                        "input": ["seq": .number(seq)],
                        "stages": [
                            [
                                "name": "render", "task": "sleep",
                                "args": ["ms": .number(Int.random(in: 0...5))],
                            ],
                            [
                                "name": "deliver", "task": "http", "lane": .string(customer), "max_attempts": 50,
                                "backoff": ["kind": "constant", "initial": "20ms"],
                                "args": [
                                    "method": "POST", "url": .string("\(target.base)/hooks/\(customer)"),
                                    "json": ["seq": "{{input.seq}}"],
                                ],
                            ],
                        ],
                    ])
                    jobs[id] = (customer, seq)
                }
                for id in jobs.keys { #expect(try await Self.finished(server, id)["state"] == "completed") }

                // The order each lane was entered in, as the database recorded it.
                let rows = try await server.db.values(
                    "SELECT id FROM \(unescaped: server.db.configuration.schema).jobs ORDER BY lane_ready_at, id",
                    as: Int64.self)
                let ledger = book.withLock { $0 }
                for customer in (0..<5).map({ "customer-\($0)" }) {
                    let expected = rows.compactMap { jobs[$0] }.filter { $0.customer == customer }.map(\.seq)
                    #expect(expected.count == 10)
                    #expect(ledger.successes[customer] == expected, "\(customer) in lane order")
                }
                #expect(ledger.overlaps == 0)
                #expect(ledger.keys.count == 50 && ledger.keys.values.allSatisfy { $0 == 1 })
                #expect(ledger.failures > 0, "some deliveries failed and were retried")
            }
        }
    }

    // MARK: statuses

    @Test func retryAfterIsHonouredAndA404FailsForGood() async throws {
        let calls = Mutex(0)
        try await withTargetServer({ request in
            switch request.path {
            case "/limited":
                let first = calls.withLock { count in
                    count += 1
                    return count == 1
                }
                return first
                    ? TargetServer.text("slow down", status: .tooManyRequests, headers: [.retryAfter: "1"])
                    : TargetServer.json(["ok": true])
            default:
                return TargetServer.text("no such thing", status: .notFound)
            }
        }) { target async throws in
            try await withServer { server async throws in
                // The policy alone would wait 10 minutes: the answer's Retry-After (1 s) is what is
                // waited (bounded at a minute: far from either, however loaded the machine).
                let limited = try await server.enqueue([
                    "stages": [
                        [
                            "task": "http", "backoff": ["kind": "constant", "initial": "600s"],
                            "args": ["method": "GET", "url": .string("\(target.base)/limited")],
                        ]
                    ]
                ])
                let missing = try await server.enqueue([
                    "stages": [["task": "http", "args": ["method": "GET", "url": .string("\(target.base)/missing")]]]
                ])
                let done = try await Self.finished(server, limited)
                #expect(done["state"] == "completed")
                #expect(done["stages"]?.items.first?["attempts"] == 2)
                let attempts = target.received(path: "/limited").map(\.at)
                try #require(attempts.count == 2)
                let gap = attempts[1] - attempts[0]
                #expect(gap >= .milliseconds(950) && gap < .seconds(60), "waited \(gap)")

                let gone = try await Self.finished(server, missing)
                #expect(gone["state"] == "discarded")
                #expect(target.received(path: "/missing").count == 1)
                #expect(Self.lastError(gone).hasPrefix("HTTP 404 from GET \(target.base)/missing: no such thing"))
            }
        }
    }

    /// A 429 with Retry-After on a stage with a rate limit key pauses the key, not only the stage:
    /// a stage of the same key enqueued after it waits out the Retry-After too, one of another key
    /// does not.
    @Test func a429WithRetryAfterPausesTheStagesRateLimitKey() async throws {
        let calls = Mutex(0)
        try await withTargetServer({ request in
            guard request.path == "/limited" else { return TargetServer.json(["ok": true]) }
            let first = calls.withLock { count in
                count += 1
                return count == 1
            }
            return first
                ? TargetServer.text("slow down", status: .tooManyRequests, headers: [.retryAfter: "60"])
                : TargetServer.json(["ok": true])
        }) { target async throws in
            try await withServer { server async throws in
                for key in ["partner", "other"] {
                    #expect(
                        try await server.call(.PUT, "/v1/rate-limits/\(key)", body: ["rate": 100, "per": "1s"]).status
                            == 200)
                }
                func call(_ path: String, rate: String) -> JSONValue {
                    [
                        "stages": [
                            [
                                "task": "http", "rate": .string(rate),
                                "args": ["method": "GET", "url": .string("\(target.base)\(path)")],
                            ]
                        ]
                    ]
                }
                let limited = try await server.enqueue(call("/limited", rate: "partner"))
                _ = try await server.job(limited) { $0["state"] == "retryable" }
                let sameKey = try await server.enqueue(call("/same", rate: "partner"))
                let otherKey = try await server.enqueue(call("/other", rate: "other"))
                // Told apart by order, not by time (a loaded machine makes any bound a guess):
                // another key's stage runs while the paused key's next one is held for the minute.
                #expect(try await Self.finished(server, otherKey)["state"] == "completed")
                #expect(target.received(path: "/same").isEmpty, "the paused key's next stage ran")
                #expect(try await server.call(.GET, "/v1/jobs/\(sameKey)")["state"] != "completed")

            }
        }
    }

    @Test func expectOverridesWhatAStatusMeans() async throws {
        try await withTargetServer({ request in
            switch request.path {
            case "/absent": TargetServer.text("absent", status: .notFound)
            case "/broken": TargetServer.text("broken", status: .internalServerError)
            default: TargetServer.text("conflict", status: .conflict)
            }
        }) { target async throws in
            try await withServer { server async throws in
                func stage(_ path: String, _ expect: JSONValue) -> JSONValue {
                    [
                        "stages": [
                            [
                                "task": "http", "max_attempts": 2, "backoff": ["kind": "constant", "initial": "10ms"],
                                "args": ["method": "DELETE", "url": .string(target.base + path), "expect": expect],
                            ]
                        ]
                    ]
                }
                let absentIsFine = try await server.enqueue(stage("/absent", ["404": "success"]))
                let brokenIsFinal = try await server.enqueue(stage("/broken", ["5xx": "fail"]))
                let conflictRetries = try await server.enqueue(stage("/conflict", ["409": "retry"]))

                let absent = try await Self.finished(server, absentIsFine)
                #expect(absent["state"] == "completed")
                #expect(absent["output"]?["status"] == 404)
                #expect(absent["output"]?["body"] == "absent")
                #expect(try await Self.finished(server, brokenIsFinal)["state"] == "discarded")
                #expect(target.received(path: "/broken").count == 1)
                #expect(try await Self.finished(server, conflictRetries)["state"] == "discarded")
                #expect(target.received(path: "/conflict").count == 2)
            }
        }
    }

    /// Redirects are followed (at most 5), a request is cut off at its timeout, and a server that
    /// cannot be reached is retried.
    @Test func redirectsTimeoutsAndUnreachableServers() async throws {
        try await withTargetServer({ request in
            switch request.path {
            case "/moved": return TargetServer.text("", status: .permanentRedirect, headers: [.location: "/here"])
            case "/here": return TargetServer.json(["method": .string(request.method), "body": .string(request.body)])
            case "/loop": return TargetServer.text("", status: .found, headers: [.location: "/loop"])
            case "/slow":
                try await Task.sleep(for: .seconds(3))
                return TargetServer.text("late")
            default: return TargetServer.text("no", status: .notFound)
            }
        }) { target async throws in
            try await withServer { server async throws in
                func run(_ args: JSONValue) async throws -> JSONValue {
                    let id = try await server.enqueue([
                        "stages": [
                            [
                                "task": "http", "args": args, "max_attempts": 2,
                                "backoff": ["kind": "constant", "initial": "10ms"],
                            ]
                        ]
                    ])
                    return try await Self.finished(server, id)
                }
                let moved = try await run(["method": "POST", "url": .string(target.base + "/moved"), "body": "kept"])
                #expect(moved["output"]?["body"] == ["method": "POST", "body": "kept"], "308 keeps method and body")

                let loop = try await run(["method": "GET", "url": .string(target.base + "/loop")])
                #expect(loop["state"] == "discarded")
                #expect(Self.lastError(loop).contains("more than 5 redirects"))
                #expect(target.received(path: "/loop").count == 6)

                let slow = try await run(["method": "GET", "url": .string(target.base + "/slow"), "timeout": "200ms"])
                #expect(slow["state"] == "discarded")
                #expect(slow["stages"]?.items.first?["attempts"] == 2, "a timeout is retried")
                #expect(Self.lastError(slow).contains("deadline"), "\(Self.lastError(slow))")

                let closed = try await run(["method": "GET", "url": "http://127.0.0.1:1/nothing-listens"])
                #expect(closed["state"] == "discarded")
                #expect(closed["stages"]?.items.first?["errors"]?.items.count == 2, "retried")
                #expect(
                    Self.lastError(closed).hasSuffix("failed: connection refused: nothing listens at 127.0.0.1:1"),
                    "a sentence, not SwiftNIO's errno: \(Self.lastError(closed))")

                // A name that does not resolve (`.invalid` never does), and TLS spoken to a server
                // that speaks plain HTTP: each a sentence naming where it went and what failed.
                let unknown = try await run(["method": "GET", "url": "http://nowhere.invalid/"])
                #expect(
                    Self.lastError(unknown).hasSuffix("failed: the host name nowhere.invalid does not resolve"),
                    "\(Self.lastError(unknown))")
                let port = try #require(URL(string: target.base)?.port)
                let plain = try await run(["method": "GET", "url": .string("https://127.0.0.1:\(port)/moved")])
                #expect(
                    Self.lastError(plain).contains("failed: TLS failed at 127.0.0.1:\(port): "),
                    "\(Self.lastError(plain))")
            }
        }
    }

    // MARK: bodies

    @Test func gzipBodiesAreDecompressedAndOversizedOnesRefused() async throws {
        // gzip of {"compressed": true, "text": "baton baton … "} (200 times "baton ").
        let gzipped = Data(
            base64Encoded: "H4sIAFZlBGsC/6tWSs7PLShKLS5OTVGyUigpKk3VUVAqSa0oAfKUkhJL8vMURslRcpQcJQc/qVQLAKnLp6TQBAAA")!
        try await withTargetServer({ request in
            switch request.path {
            case "/gzip":
                return Response(
                    status: .ok, headers: [.contentType: "application/json", .contentEncoding: "gzip"],
                    body: .init(byteBuffer: ByteBuffer(bytes: gzipped)))
            case "/chunked":
                // No Content-Length: the limit is found while reading.
                return Response(
                    status: .ok,
                    body: .init { writer in
                        for _ in 0..<10 {
                            try await writer.write(ByteBuffer(repeating: UInt8(ascii: "x"), count: 1000))
                        }
                        try await writer.finish(nil)
                    })
            default:
                return TargetServer.text(String(repeating: "y", count: 5000))
            }
        }) { target async throws in
            try await withServer { server async throws in
                func get(_ path: String, limit: Int? = nil) -> JSONValue {
                    var args: JSONValue = ["method": "GET", "url": .string(target.base + path)]
                    if let limit, case .object(var fields) = args {
                        fields["max_response_bytes"] = .number(limit)
                        args = .object(fields)
                    }
                    return ["stages": [["task": "http", "args": args]]]
                }
                let zipped = try await Self.finished(server, try await server.enqueue(get("/gzip")))
                #expect(zipped["state"] == "completed")
                #expect(zipped["output"]?["body"]?["compressed"] == true)
                #expect(zipped["output"]?["body"]?["text"]?.stringValue?.count == 1200)

                for path in ["/sized", "/chunked"] {
                    let big = try await Self.finished(server, try await server.enqueue(get(path, limit: 1024)))
                    #expect(big["state"] == "discarded", "\(path)")
                    #expect(Self.lastError(big).contains("larger than max_response_bytes (1024)"), "\(path)")
                }
                let fits = try await Self.finished(server, try await server.enqueue(get("/sized", limit: 5000)))
                #expect(fits["output"]?["body"]?.stringValue?.count == 5000)
            }
        }
    }

    // MARK: safety

    /// Metadata addresses are refused by default, named directly or reached through a redirect;
    /// a deny list is checked on the address a name resolves to.
    @Test func deniedAddressesAreNeverReached() async throws {
        try await withTargetServer({ request in
            request.path == "/redirect"
                ? TargetServer.text(
                    "", status: .found, headers: [.location: "http://169.254.169.254/latest/meta-data/"])
                : TargetServer.text("reached")
        }) { target async throws in
            let port = target.base.split(separator: ":").last!
            let denyLoopback = Self.tasks(
                HTTPTaskConfiguration(policy: try OutboundPolicy(allow: nil, deny: "127.0.0.0/8")))
            try await withServer(worker: denyLoopback) { server async throws in
                func get(_ url: String) async throws -> JSONValue {
                    let id = try await server.enqueue([
                        "stages": [["task": "http", "args": ["method": "GET", "url": .string(url)]]]
                    ])
                    return try await Self.finished(server, id)
                }
                let metadata = try await get("http://169.254.169.254/latest/meta-data/")
                #expect(metadata["state"] == "discarded")
                #expect(Self.lastError(metadata).contains("169.254.169.254 is not allowed"))
                let viaName = try await get("http://localhost:\(port)/direct")
                #expect(viaName["state"] == "discarded")
                #expect(
                    Self.lastError(viaName).contains("the address 127.0.0.1 is not allowed"),
                    "\(Self.lastError(viaName))")
                #expect(target.received.isEmpty, "nothing reached the server")
            }
            try await withServer { server async throws in
                let id = try await server.enqueue([
                    "stages": [["task": "http", "args": ["method": "GET", "url": .string(target.base + "/redirect")]]]
                ])
                let redirected = try await Self.finished(server, id)
                #expect(redirected["state"] == "discarded")
                #expect(Self.lastError(redirected).contains("169.254.169.254 is not allowed"))
                #expect(target.received.map(\.path) == ["/redirect"])
            }
        }
    }

    /// A secret reaches the server, and nothing else: not the job row, its output, its errors, or
    /// the worker's logs.
    @Test func secretsAreSentButRedactedEverywhereElse() async throws {
        let secret = "tok-s3cret+&/=42"
        try await withTargetServer({ request in
            // An echo: what a careless server does with a credential.
            let echoed = "\(request["Authorization"] ?? "") \(request.query)"
            return request.path == "/echo"
                ? TargetServer.json(["echo": .string(echoed)], headers: [HTTPField.Name("X-Echo")!: echoed])
                : TargetServer.text("bad token \(echoed)", status: .badRequest)
        }) { target async throws in
            let logs = LogCapture()
            let tasks = Self.tasks(HTTPTaskConfiguration(secrets: ["API_TOKEN": secret]))
            try await withServer(worker: tasks, workerLogger: logs.logger()) { server async throws in
                func call(_ path: String) -> JSONValue {
                    [
                        "stages": [
                            [
                                "task": "http",
                                "args": [
                                    "method": "GET", "url": .string(target.base + path),
                                    "headers": ["Authorization": "Bearer {{secrets.API_TOKEN}}"],
                                    "query": ["token": "{{secrets.API_TOKEN}}"],
                                ],
                            ]
                        ]
                    ]
                }
                let echoed = try await Self.finished(server, try await server.enqueue(call("/echo")))
                let refused = try await Self.finished(server, try await server.enqueue(call("/refuse")))
                #expect(echoed["state"] == "completed")
                #expect(refused["state"] == "discarded")

                let sent = try #require(target.received(path: "/echo").first)
                #expect(sent["Authorization"] == "Bearer \(secret)")
                #expect(sent.query == "token=\(HTTPTask.queryEncoded(secret))")

                let encoded = HTTPTask.queryEncoded(secret)
                let rows = try await server.db.values(
                    "SELECT row_to_json(j)::text FROM \(unescaped: server.db.configuration.schema).jobs j",
                    as: String.self)
                let everything = rows.joined() + echoed.jsonText + refused.jsonText + logs.text
                #expect(!everything.contains(secret) && !everything.contains(encoded))
                #expect(echoed["output"]?["body"]?["echo"] == "Bearer [redacted] token=[redacted]")
                #expect(echoed["output"]?["headers"]?["x-echo"] == "Bearer [redacted] token=[redacted]")
                #expect(Self.lastError(refused).contains("bad token Bearer [redacted]"))
                #expect(logs.text.contains("http request"), "the requests were logged, redacted")
                // Each request is in its attempt's log: method, URL (redacted), status, duration.
                let kept = try #require(echoed["stages"]?.items.first?["log"]?.stringValue, "\(echoed)")
                #expect(kept.contains("http request") && kept.contains("method=GET") && kept.contains("status=200"))
                #expect(kept.contains("token=[redacted]") && kept.contains("elapsed="), "\(kept)")
                let failed = refused["stages"]?.items.first?["errors"]?.items.last?["log"]?.stringValue ?? ""
                #expect(failed.contains("status=400"), "\(refused)")
            }
        }
    }

    @Test func aMalformedHTTPStageIsRefusedAtEnqueueWithItsPath() async throws {
        try await withServer { server async throws in
            let reply = try await server.call(
                .POST, "/v1/jobs",
                body: [
                    "stages": [["task": "noop"], ["task": "http", "args": ["method": "GET", "url": "{{input.url"]]]
                ])
            #expect(reply.status == 400)
            #expect(reply["path"] == "stages[1].args.url")
            let form = try await server.call(
                .POST, "/v1/jobs",
                body: [
                    "stages": [
                        ["task": "http", "args": ["method": "POST", "url": "https://x", "multipart": [["name": "a"]]]]
                    ]
                ])
            #expect(form.status == 400)
            #expect(form["path"] == "stages[0].args.multipart[0]")
        }
    }
}
