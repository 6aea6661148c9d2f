import Baton
import BatonHTTPClient
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import Testing

/// `GET /v1/jobs?metadata.tenant=42&args.customer=7`, its bad input, and the same filters in bulk
/// and in the Swift HTTP client.
@Suite(.timeLimit(.minutes(2)))
struct JobSearchAPITests {
    @Test func jobsAreFoundByMetadataAndArgs() async throws {
        try await withServer(worker: nil) { server async throws in
            let a = try await server.enqueue(
                [
                    "stages": [["task": "noop", "args": ["customer": 7]]],
                    "metadata": ["tenant": "42", "plan": "gold plus"],
                ],
                query: "?unchecked=true")
            let b = try await server.enqueue(
                ["stages": [["task": "noop"]], "metadata": ["tenant": 42]], query: "?unchecked=true")
            _ = try await server.enqueue(
                ["stages": [["task": "noop"]], "metadata": ["tenant": "43"]], query: "?unchecked=true")
            func ids(_ query: String) async throws -> [Int64] {
                let reply = try await server.call(.GET, "/v1/jobs?" + query, token: Token.read)
                try #require(reply.status == 200, "\(query): \(reply.text)")
                return (reply["jobs"]?.items ?? []).compactMap { $0["id"]?.int64 }
            }
            #expect(try await ids("metadata.tenant=42") == [b, a])
            #expect(try await ids("metadata=tenant%3D42") == [b, a], "the declared form")
            #expect(try await ids("metadata.tenant=42&args.customer=7") == [a])
            #expect(try await ids("metadata.plan=gold%20plus") == [a])
            #expect(try await ids("metadata.tenant=42&state=available&limit=1") == [b])
            #expect(try await ids("metadata.tenant=44") == [])
            // What the document allows is answered, matching nothing here: a key longer than the
            // index keeps, a NUL (which no stored text holds).
            #expect(try await ids("metadata." + String(repeating: "k", count: 150) + "=42") == [])
            #expect(try await ids("metadata.tenant=4%002") == [])
            let paged = try await server.call(.GET, "/v1/jobs?metadata.tenant=42&limit=1")
            let next = try #require(paged["next_cursor"]?.stringValue)
            #expect(try await ids("metadata.tenant=42&limit=1&cursor=\(next)") == [a])

            for (query, path) in [
                ("metadata.=1", "metadata."), ("metadata.tenant=", "metadata.tenant"), ("metadata=tenant", "metadata"),
                ("metadata.tenant=1&metadata.tenant=2", "metadata.tenant"), ("meta.tenant=1", "meta.tenant"),
                ("args.x=" + String(repeating: "y", count: 1001), "args.x"),
            ] {
                let refused = try await server.call(.GET, "/v1/jobs?" + query)
                #expect(refused.status == 400, "\(query): \(refused.text)")
                #expect(refused["path"]?.stringValue == path, "\(query): \(refused.text)")
            }

            // In bulk: the same filter, in the body.
            let dryRun = try await server.call(
                .POST, "/v1/jobs/bulk",
                body: ["action": "cancel", "dry_run": true, "filter": ["metadata": ["tenant": "42"]]])
            #expect(dryRun["matched"]?.int64 == 2, "\(dryRun.text)")
            let emptyKey = try await server.call(
                .POST, "/v1/jobs/bulk",
                body: ["action": "cancel", "dry_run": true, "filter": ["metadata": ["": "\u{0}"]]])
            #expect(emptyKey.status == 200 && emptyKey["matched"]?.int64 == 0, "\(emptyKey.text)")
            let tooMany = JSONValue.object(Dictionary(uniqueKeysWithValues: (0..<11).map { ("k\($0)", "v") }))
            let refused = try await server.call(
                .POST, "/v1/jobs/bulk", body: ["action": "cancel", "filter": ["args": tooMany]])
            #expect(refused.status == 400 && refused["path"]?.stringValue == "filter.args", "\(refused.text)")

            // The Swift HTTP client.
            let client = try BatonHTTPClient(url: URL(string: server.base)!, token: Token.read)
            let page = try await client.jobs(metadata: ["tenant": "42"], args: ["customer": "7"])
            #expect(page.jobs.map(\.id) == [a])
        }
    }
}
