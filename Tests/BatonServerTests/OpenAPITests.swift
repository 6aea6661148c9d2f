import AsyncHTTPClient
import Baton
import BatonAPI
import BatonServerTestSupport
import Foundation
import NIOHTTP1
import Testing

@testable import BatonServer

/// The server answers exactly the operations of its OpenAPI document (the generated code registers
/// them; this holds the router around it to the document) and serves that very document.
@Suite(.timeLimit(.minutes(2)))
struct OpenAPITests {
    let operations = APIDocument.shared.operations.values

    /// Every documented operation reaches a handler (no 404 "no route", no 405); every other
    /// method on a documented path is a 405 naming the documented ones; an unknown path is a 404
    /// problem; the served document is the one compiled in from `openapi.yaml`.
    @Test func theServerAnswersExactlyTheDocumentedOperations() async throws {
        try await withServer(worker: nil) { server async throws in
            for operation in operations {
                let concrete = operation.path.replacingOccurrences(of: "{id}", with: "999999")
                    .replacingOccurrences(of: "{name}", with: "some-queue")
                let body: JSONValue? =
                    operation.path == "/v1/jobs/batch"
                    ? ["jobs": [["stages": [["task": "noop"]]]]]
                    : operation.method == .post ? ["stages": [["task": "noop"]]] : nil
                let reply = try await server.call(HTTPMethod(rawValue: operation.method.rawValue), concrete, body: body)
                #expect(reply.status != 405, "\(operation.method) \(operation.path)")
                #expect(
                    reply["detail"]?.stringValue?.hasPrefix("no route") != true, "\(operation.method) \(operation.path)"
                )
            }
            for (path, allow) in APIDocument.shared.allowedMethods.all {
                let allowed = Set(allow.map(\.rawValue))
                let concrete = path.replacingOccurrences(of: "{id}", with: "1").replacingOccurrences(
                    of: "{name}", with: "q")
                for method in ["GET", "POST", "PUT", "PATCH", "DELETE", "QUERY", "PROPFIND"]
                where !allowed.contains(method) {
                    let reply = try await server.call(HTTPMethod(rawValue: method), concrete)
                    #expect(reply.status == 405, "\(method) \(path)")
                    #expect(reply["type"] == "urn:baton:problem:method-not-allowed")
                    let given = (reply.headers.first(name: "Allow") ?? "").split(separator: ",").map {
                        $0.trimmingCharacters(in: .whitespaces)
                    }
                    #expect(Set(given) == allowed, "\(method) \(path)")
                }
            }
            let unknown = try await server.call(.GET, "/v1/nothing-here")
            #expect(unknown.status == 404)
            #expect(unknown["type"] == "urn:baton:problem:not-found")
            let served = try await server.call(.GET, "/openapi.json", token: Token.read)
            #expect(served.json == (try JSONValue(parsing: EmbeddedOpenAPI.json)))
            #expect(served["paths"]?.objectValue?.count == APIDocument.shared.allowedMethods.all.count)
        }
    }

    /// The document compiled in is `Sources/BatonAPI/openapi.yaml` as it is in the tree: no stale
    /// copy can be served.
    @Test func theDocumentCompiledInIsTheOneInTheTree() throws {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appending(path: "Sources/BatonAPI/openapi.yaml")
        let yaml = try String(contentsOf: source, encoding: .utf8)
        let document = try JSONValue(parsing: EmbeddedOpenAPI.json)
        #expect(yaml.contains("operationId: enqueueJob"))
        for (path, item) in document["paths"]?.objectValue ?? [:] {
            #expect(yaml.contains("\n  \(path):\n"), "\(path)")
            for operation in item.objectValue?.values.compactMap({ $0["operationId"]?.stringValue }) ?? [] {
                #expect(yaml.contains("operationId: \(operation)\n"), "\(operation)")
            }
        }
    }

    /// Query parameters are refused like unknown body fields: one not declared, one without a
    /// value, one not of its declared type, each a 400 naming it.
    @Test func queryParametersAreCheckedAgainstTheDocument() async throws {
        try await withServer(worker: nil) { server async throws in
            for (target, path) in [
                ("/v1/jobs?wiat=30s", "wiat"), ("/v1/jobs?state=", "state"), ("/v1/jobs?limit=ten", "limit"),
                ("/v1/jobs?limit=0", "limit"), ("/v1/jobs/1?wait=soon", "wait"), ("/v1/queues?limit=5", "limit"),
                ("/v1/jobs?state=done", "state"), ("/v1/jobs?cursor=bm90LW91cnM", "cursor"),
                ("/v1/jobs?created_after=2026-12-06T09:30:00", "created_after"),
                ("/v1/jobs?created_before=yesterday", "created_before"),
            ] {
                let reply = try await server.call(.GET, target)
                #expect(reply.status == 400, "\(target): \(reply.text)")
                #expect(reply["path"]?.stringValue == path, "\(target): \(reply.text)")
                #expect(!reply.text.contains("DecodingError") && !reply.text.contains("<nil>"), "\(reply.text)")
            }
            let naive = try await server.call(.GET, "/v1/jobs?created_after=2026-12-06T09:30:00")
            #expect(naive["detail"]?.stringValue?.contains("with its offset (RFC 3339)") == true, "\(naive.text)")
            #expect(try await server.call(.GET, "/v1/jobs?created_after=2026-12-06T09:30:00Z").status == 200)
            let unchecked = try await server.call(.POST, "/v1/jobs?unchecked=yes", body: ["stages": [["task": "noop"]]])
            #expect(unchecked.status == 400)
            #expect(unchecked["path"] == "unchecked")
        }
    }
}
