import AsyncHTTPClient
import Baton
import BatonServerTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// Input meant to break things: each refused with a clear 4xx (never a 5xx, never a crash) and
/// nothing written; what is merely unusual (SQL metacharacters) stored and read back as data.
@Suite(.timeLimit(.minutes(2)))
struct HostileInputTests {
    static func counts(_ server: TestServer) async throws -> [Int] {
        let schema = server.db.configuration.schema
        return try await server.db.values(
            """
            SELECT count(*)::int FROM \(unescaped: schema).jobs
            UNION ALL SELECT count(*)::int FROM \(unescaped: schema).paused_queues
            """, as: Int.self)
    }

    /// Sends raw bytes (which a `String` could not hold, such as invalid UTF-8).
    static func post(_ server: TestServer, _ path: String, bytes: [UInt8]) async throws -> (Int, JSONValue) {
        var request = HTTPClientRequest(url: server.base + path)
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(Token.admin)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: bytes))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        #expect(response.headers.first(name: "Content-Type") == "application/problem+json")
        return (Int(response.status.code), (try? JSONValue(parsing: body.readableBytesView)) ?? .null)
    }

    @Test func malformedAndOversizedBodiesAreRefusedAndNothingIsWritten() async throws {
        try await withServer { server async throws in
            let before = try await Self.counts(server)
            var bodies: [(String, [UInt8])] = [
                (
                    "nesting 100,000 deep",
                    Array((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8)
                ),
                (
                    "invalid UTF-8",
                    Array(#"{"stages": [{"task": "noop"}], "input": ""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8)
                ),
                ("a raw NUL byte", Array(#"{"stages": [{"task": "no"#.utf8) + [0] + Array(#"op"}]}"#.utf8)),
                ("a lone surrogate", Array(#"{"stages": [{"task": "noop"}], "input": "\ud800"}"#.utf8)),
                ("nothing", []),
                ("not JSON", Array("DROP TABLE jobs".utf8)),
            ]
            let stages = JSONValue.array(Array(repeating: ["task": "noop"], count: 10_000)).jsonText
            bodies.append(("10,000 stages", Array(#"{"stages": \#(stages)}"#.utf8)))
            let jobs = JSONValue.array(Array(repeating: ["stages": [["task": "noop"]]], count: 10_001)).jsonText
            bodies.append(("a batch of 10,001", Array(#"{"jobs": \#(jobs)}"#.utf8)))
            for (what, bytes) in bodies {
                let path = what.hasPrefix("a batch") ? "/v1/jobs/batch" : "/v1/jobs"
                let (status, problem) = try await Self.post(server, path, bytes: bytes)
                #expect(status == 400, "\(what): \(problem)")
                #expect(problem["detail"]?.stringValue?.isEmpty == false, "\(what)")
            }
            let (status, _) = try await Self.post(
                server, "/v1/jobs", bytes: Array(repeating: UInt8(ascii: " "), count: 2 << 20))
            #expect(status == 413)
            #expect(try await Self.counts(server) == before)
        }
    }

    /// Every string field, with a NUL character, or far too long, or empty where a name is needed.
    @Test func everyStringFieldRefusesNULAndOversizedNames() async throws {
        try await withServer { server async throws in
            let before = try await Self.counts(server)
            let long = String(repeating: "l", count: 100_000)
            func job(stage: JSONValue = ["task": "noop"], _ fields: [String: JSONValue] = [:]) -> JSONValue {
                var job: [String: JSONValue] = ["stages": [stage]]
                job.merge(fields) { _, new in new }
                return .object(job)
            }
            let cases: [(JSONValue, String)] = [
                (job(["queue": "q\u{0}"]), "queue"), (job(["queue": .string(long)]), "queue"),
                (job(["idempotency_key": "k\u{0}"]), "idempotency_key"),
                (job(["idempotency_key": .string(long)]), "idempotency_key"),
                (job(["metadata": ["k": "v\u{0}"]]), "metadata.k"), (job(["metadata": ["k\u{0}": 1]]), "metadata"),
                (job(["input": ["a": ["b": "\u{0}"]]]), "input.a.b"),
                (job(stage: ["task": "no\u{0}op"]), "stages[0].task"),
                (job(stage: ["task": .string(long)]), "stages[0].task"),
                (job(stage: ["task": "noop", "lane": "l\u{0}"]), "stages[0].lane"),
                (job(stage: ["task": "noop", "lane": .string(long)]), "stages[0].lane"),
                (job(stage: ["task": "noop", "name": "n\u{0}"]), "stages[0].name"),
                (job(stage: ["task": "noop", "args": ["x": "\u{0}"]]), "stages[0].args.x"),
                (job(stage: ["task": "noop", "lane": "tab\tin"]), "stages[0].lane"),
            ]
            for (body, path) in cases {
                let reply = try await server.call(.POST, "/v1/jobs", body: body)
                #expect(reply.status == 400, "\(path): \(reply.text.prefix(300))")
                #expect(reply["path"]?.stringValue == path, "\(reply.text.prefix(300))")
            }
            let header = try await server.call(
                .POST, "/v1/jobs", body: job(), headers: [("Idempotency-Key", String(repeating: "k", count: 300))])
            #expect(header.status == 400)
            #expect(
                try await server.call(.POST, "/v1/queues/\(String(repeating: "q", count: 300))/pause").status == 400)
            #expect(try await server.call(.POST, "/v1/queues/a%00b/pause").status == 400)
            #expect(try await Self.counts(server) == before)
        }
    }

    /// Quotes, semicolons, comments, dollar quotes, LIKE wildcards and backslashes are data: stored,
    /// filtered on and shown exactly as sent, and the tables are still there.
    @Test func sqlMetacharactersInEveryStringFieldAreJustData() async throws {
        try await withServer { server async throws in
            let nasty = #"x'); DROP TABLE jobs; -- $$ \' " % _ \\ ; SELECT pg_sleep(10)"#
            let job: JSONValue = [
                "queue": .string(nasty), "idempotency_key": .string(nasty),
                "metadata": [.init(stringLiteral: nasty): .string(nasty)], "input": ["v": .string(nasty)],
                "stages": [
                    [
                        "task": .string(nasty), "name": .string(nasty), "lane": .string(nasty),
                        "args": ["a": .string(nasty)],
                    ]
                ],
            ]
            let created = try await server.call(.POST, "/v1/jobs?unchecked=true", body: job)
            #expect(created.status == 201, "\(created.text)")
            let id = try #require(created["id"]?.int64)
            let stored = try await server.call(.GET, "/v1/jobs/\(id)").json
            #expect(stored["queue"]?.stringValue == nasty)
            #expect(stored["idempotency_key"]?.stringValue == nasty)
            #expect(stored["metadata"] == [.init(stringLiteral: nasty): .string(nasty)])
            #expect(stored["input"]?["v"]?.stringValue == nasty)
            #expect(stored["stages"]?.items.first?["task"]?.stringValue == nasty)
            #expect(stored["stages"]?.items.first?["lane"]?.stringValue == nasty)

            let encoded = nasty.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            for filter in ["queue", "lane", "task"] {
                let found = try await server.call(.GET, "/v1/jobs?\(filter)=\(encoded)")
                #expect(found["jobs"]?.items.map { $0["id"]?.int64 } == [id], "\(filter)")
            }
            for wildcard in ["%25", "_", "x%25"] {
                #expect(try await server.call(.GET, "/v1/jobs?lane=\(wildcard)")["jobs"] == [], "LIKE is not used")
            }
            let again = try await server.call(.POST, "/v1/jobs?unchecked=true", body: job)
            #expect(again.status == 200 && again["id"]?.int64 == id, "the idempotency key still matches")
            #expect(
                try await server.call(.POST, "/v1/queues/\(encoded)/pause").json == [
                    "name": .string(nasty), "paused": true,
                ])
            let queues = try await server.call(.GET, "/v1/queues")["queues"]?.items ?? []
            #expect(queues.contains { $0["name"]?.stringValue == nasty && $0["paused"] == true })
            #expect(try await Self.counts(server) == [1, 1])
        }
    }

    @Test func hostileQueryParametersAreRefusedNotCrashedOn() async throws {
        try await withServer(worker: nil) { server async throws in
            for query in [
                "limit=-1", "limit=0", "limit=1e3", "limit=99999999999999999999999", "limit=%00",
                "state=DROP", "cursor=%%%", "cursor=" + String(repeating: "A", count: 4000), "cursor=am9iOng",
            ] {
                let reply = try await server.call(.GET, "/v1/jobs?\(query)")
                #expect(reply.status == 400, "\(query): \(reply.text)")
            }
            for wait in ["-1s", "1e400s", "NaN", "soon", "%00"] {
                #expect(try await server.call(.GET, "/v1/jobs/1?wait=\(wait)").status == 400, "\(wait)")
            }
            for path in ["/v1/jobs/0", "/v1/jobs/-1", "/v1/jobs/99999999999999999999", "/v1/jobs/1%27%20OR%201=1"] {
                #expect(try await server.call(.GET, path).status == 404, "\(path)")
            }
            #expect(try await server.call(.GET, "/v1/lanes?cursor=bGFuZQ&limit=5000").status == 400)
        }
    }

    /// JSON nested just inside the parser's limit is stored and run: no stack runs out on the way
    /// (server, database, worker).
    @Test func deepButAllowedNestingIsStoredAndRun() async throws {
        try await withServer { server async throws in
            var nested: JSONValue = "bottom"
            for _ in 0..<(JSONValue.maxDepth - 5) { nested = ["n": nested] }
            let id = try await server.enqueue(["input": nested, "stages": [["task": "noop"]]])
            let job = try await server.job(id) { $0["state"] == "completed" }
            #expect(job["output"] == nested)
        }
    }
}
