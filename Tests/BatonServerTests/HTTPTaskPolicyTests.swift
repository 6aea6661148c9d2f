import Baton
import BatonServerTestSupport
import BatonWorker
import Foundation
import Hummingbird
import NIOCore
import Testing

/// The `http` task as an operator configures it and a server answers it.
@Suite struct HTTPTaskPolicyTests {
    /// `BATON_HTTP_ALLOW` end to end: a worker allowed only 127.0.0.1 calls it, and refuses a host
    /// outside the list before connecting (the stage discarded, saying why; nothing sent).
    @Test func anAllowListLetsThroughOnlyWhatItNames() async throws {
        try await withTargetServer({ _ in TargetServer.json(["ok": true]) }) { target async throws in
            var tasks = serverTestTasks
            tasks.register(
                HTTPTask(
                    configuration: HTTPTaskConfiguration(policy: try OutboundPolicy(allow: "127.0.0.1", deny: nil))))
            try await withServer(worker: tasks) { server async throws in
                func call(_ url: String) async throws -> JSONValue {
                    let id = try await server.enqueue([
                        "stages": [
                            ["task": "http", "args": ["method": "GET", "url": .string(url)], "max_attempts": 1]
                        ]
                    ])
                    return try await server.job(id) { $0["state"] == "completed" || $0["state"] == "discarded" }
                }
                let allowed = try await call(target.base + "/in")
                #expect(allowed["state"] == "completed")
                #expect(allowed["output"]?["body"]?["ok"] == true)
                let port = target.base.split(separator: ":").last.map(String.init) ?? ""
                let refused = try await call("http://127.0.0.2:\(port)/out")
                #expect(refused["state"] == "discarded")
                let error = refused["stages"]?.items.first?["errors"]?.items.last?["error"]?.stringValue ?? ""
                #expect(error.contains("127.0.0.2 is not allowed"), "\(error)")
                #expect(target.received.map(\.path) == ["/in"])
            }
        }
    }

    /// A body sent with `Content-Encoding: deflate` (zlib) is inflated like gzip.
    @Test func deflateBodiesAreInflated() async throws {
        // zlib of {"deflated": true, "text": "baton baton … "} (100 times "baton ").
        let deflated = Data(base64Encoded: "eJyrVkpJTctJLElNUbJSKCkqTdVRUCpJrSgB8pSSEkvy8xRGyVGSuqRSLQASuOXT")!
        try await withTargetServer({ _ in
            Response(
                status: .ok, headers: [.contentType: "application/json", .contentEncoding: "deflate"],
                body: .init(byteBuffer: ByteBuffer(bytes: deflated)))
        }) { target async throws in
            try await withServer { server async throws in
                let id = try await server.enqueue([
                    "stages": [["task": "http", "args": ["method": "GET", "url": .string(target.base + "/z")]]]
                ])
                let job = try await server.job(id) { $0["state"] == "completed" || $0["state"] == "discarded" }
                #expect(job["state"] == "completed", "\(job)")
                #expect(job["output"]?["body"]?["deflated"] == true)
                #expect(job["output"]?["body"]?["text"]?.stringValue?.count == 600)
            }
        }
    }
}
