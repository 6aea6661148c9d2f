import Baton
import BatonServerTestSupport
import Hummingbird
import Testing

/// How the `http` task follows redirects: methods as browsers change them, credentials kept for
/// their own origin only.
@Suite struct HTTPRedirectTests {
    /// 303 turns any method into GET, 301 and 302 turn POST into GET (dropping the body) and keep
    /// other methods; a redirect to another origin (here another port) drops `Authorization` and
    /// `Cookie`, one within the origin keeps them.
    @Test func redirectsChangeMethodsAsBrowsersDoAndKeepCredentialsToTheirOrigin() async throws {
        @Sendable func seen(_ request: Received) -> Response {
            TargetServer.json([
                "method": .string(request.method), "body": .string(request.body),
                "auth": .string(request["Authorization"] ?? ""), "cookie": .string(request["Cookie"] ?? ""),
            ])
        }
        try await withTargetServer({ seen($0) }) { other async throws in
            try await withTargetServer({ request in
                switch request.path {
                case "/301": TargetServer.text("", status: .movedPermanently, headers: [.location: "/seen"])
                case "/302": TargetServer.text("", status: .found, headers: [.location: "/seen"])
                case "/303": TargetServer.text("", status: .seeOther, headers: [.location: "/seen"])
                case "/away": TargetServer.text("", status: .found, headers: [.location: other.base + "/seen"])
                default: seen(request)
                }
            }) { target async throws in
                try await withServer { server async throws in
                    func seenBy(_ method: String, _ path: String, body: String? = nil) async throws -> JSONValue? {
                        var args: [String: JSONValue] = [
                            "method": .string(method), "url": .string(target.base + path),
                            "headers": ["Authorization": "Bearer secret-token", "Cookie": "session=1"],
                        ]
                        if let body { args["body"] = .string(body) }
                        let id = try await server.enqueue(["stages": [["task": "http", "args": .object(args)]]])
                        let job = try await server.job(id) { $0["state"] == "completed" || $0["state"] == "discarded" }
                        return job["output"]?["body"]
                    }
                    let cases: [(String, String, String, String)] = [
                        ("POST", "/301", "GET", ""), ("POST", "/302", "GET", ""), ("PUT", "/303", "GET", ""),
                        ("PUT", "/301", "PUT", "kept"), ("PUT", "/302", "PUT", "kept"),
                    ]
                    for (method, path, expected, body) in cases {
                        let answer = try await seenBy(method, path, body: "kept")
                        #expect(
                            answer?["method"] == .string(expected), "\(method) \(path): \(String(describing: answer))")
                        #expect(answer?["body"] == .string(body), "\(method) \(path)")
                        #expect(answer?["auth"] == "Bearer secret-token", "same origin keeps credentials")
                    }
                    let away = try await seenBy("GET", "/away")
                    #expect(away?["method"] == "GET")
                    #expect(away?["auth"] == "", "Authorization crossed to another origin")
                    #expect(away?["cookie"] == "", "Cookie crossed to another origin")
                    #expect(other.received(path: "/seen").count == 1)
                }
            }
        }
    }
}
