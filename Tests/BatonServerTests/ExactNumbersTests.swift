import Baton
import BatonAPI
import BatonServerTestSupport
import Foundation
import Testing

/// A payload's numbers come back with the value they were given, through every path: the HTTP API
/// in and out, PostgreSQL, a typed and an untyped task, a later stage reading an earlier output,
/// and the CLI. The request is sent as text, so that nothing on the test's side rounds it first.
@Suite(.timeLimit(.minutes(3)))
struct ExactNumbersTests {
    /// Each number as sent, and as PostgreSQL's `jsonb` writes the same value back (without an
    /// exponent).
    static let numbers: [(name: String, sent: String, stored: String)] = [
        ("above_2_53", "9007199254740993", "9007199254740993"),
        ("above_64_bits", "123456789012345678901234567890", "123456789012345678901234567890"),
        ("tenth", "0.1", "0.1"),
        ("small", "1e-7", "0.0000001"),
        ("huge", "1e400", "1" + String(repeating: "0", count: 400)),
        ("tiny", "1e-400", "0." + String(repeating: "0", count: 399) + "1"),
        ("precise", "3.141592653589793238462643383279", "3.141592653589793238462643383279"),
        ("negative", "-18446744073709551617", "-18446744073709551617"),
    ]

    static var object: String {
        "{" + numbers.map { "\"\($0.name)\": \($0.sent)" }.joined(separator: ", ") + "}"
    }

    /// The job, with `Carry` (typed) then `echo` (untyped), as JSON text.
    static var job: String {
        """
        {"input": {"id": 9007199254740993, "count": 18446744073709551615, "price": 0.1,
                   "big": 12345678901234567890123, "rest": \(object)},
         "metadata": \(object),
         "stages": [{"name": "first", "task": "carry"}, {"task": "echo", "args": \(object)}]}
        """
    }

    /// Every number of `numbers` under `value` has its value, and PostgreSQL's text for it.
    static func expectExact(_ value: JSONValue?, in text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        for number in numbers {
            #expect(
                value?[number.name]?.numberValue == JSONNumber(number.sent), "\(number.name)",
                sourceLocation: sourceLocation)
            #expect(text.contains(number.stored), "\(number.name) as \(number.stored)", sourceLocation: sourceLocation)
        }
    }

    @Test func numbersComeBackExactlyThroughTheAPIPostgreSQLAndTasks() async throws {
        try await withServer { server async throws in
            let created = try await server.call(.POST, "/v1/jobs", raw: Self.job)
            try #require(created.status == 201, "\(created.text)")
            let id = try #require(created["id"]?.int64)
            let done = try await server.job(id) { $0["state"] == "completed" }
            let text = try await server.call(.GET, "/v1/jobs/\(id)").text
            #expect(text.contains("9007199254740993"))
            #expect(text.contains("18446744073709551615"))
            #expect(text.contains("12345678901234567890123"))
            Self.expectExact(done["input"]?["rest"], in: text)
            Self.expectExact(done["metadata"], in: text)

            // The typed task read them into Int64, UInt64, Decimal and JSONValue and wrote them back.
            let first = done["stages"]?.items.first?["output"]
            #expect(first?["id"] == done["input"]?["id"])
            #expect(first?["count"] == done["input"]?["count"])
            #expect(first?["price"]?.numberValue == JSONNumber("0.1"))
            #expect(first?["big"]?.numberValue == JSONNumber("12345678901234567890123"))
            Self.expectExact(first?["rest"], in: text)

            // The stage's args as stored, and as the untyped task saw them with the metadata and
            // the first stage's output, unrounded.
            Self.expectExact(done["stages"]?.items.last?["args"], in: text)
            let echo = done["output"]
            Self.expectExact(echo?["args"], in: text)
            Self.expectExact(echo?["metadata"], in: text)
            Self.expectExact(echo?["first"]?["rest"], in: text)
            #expect(echo?["input"] == first)

            // A batch, and the CLI's JSON and human output.
            let batch = try await server.call(.POST, "/v1/jobs/batch", raw: "{\"jobs\": [\(Self.job), \(Self.job)]}")
            #expect(batch.status == 201, "\(batch.text)")
            let shown = try await server.baton(["jobs", "show", "\(id)", "--json"])
            #expect(shown.status == 0, "\(shown.err)")
            Self.expectExact(try JSONValue(parsing: shown.out)["output"]?["args"], in: shown.out)
            let waited = try await server.baton(["jobs", "wait", "\(id)"])
            #expect(waited.status == 0, "\(waited.err)")
            Self.expectExact(try JSONValue(parsing: waited.out)["args"], in: waited.out)
        }
    }

    /// Numbers `jsonb` cannot store are refused at their path, before anything is written.
    @Test func numbersPostgreSQLCannotStoreAreRefusedAtTheirPath() async throws {
        try await withServer { server async throws in
            let refused: [(String, String)] = [
                (#"{"input": {"x": 1e200000}, "stages": [{"task": "noop"}]}"#, "input.x"),
                (#"{"metadata": {"m": [1, 1e-20000]}, "stages": [{"task": "noop"}]}"#, "metadata.m[1]"),
                (#"{"stages": [{"task": "noop", "args": {"n": 1e131072}}]}"#, "stages[0].args.n"),
                (
                    #"{"stages": [{"group": [{"task": "noop", "args": {"n": 1.5e-16383}}]}]}"#,
                    "stages[0].group[0].args.n"
                ),
            ]
            for (body, path) in refused {
                let reply = try await server.call(.POST, "/v1/jobs", raw: body)
                #expect(reply.status == 400, "\(body): \(reply.text)")
                #expect(reply["path"]?.stringValue == path, "\(body): \(reply.text)")
            }
            let batch = try await server.call(
                .POST, "/v1/jobs/batch",
                raw: #"{"jobs": [{"stages": [{"task": "noop"}]}, {"input": 1e200000, "stages": [{"task": "noop"}]}]}"#)
            #expect(batch.status == 400)
            #expect(batch["path"] == "jobs[1].input")
            #expect(
                try await server.db.values(
                    "SELECT count(*)::int FROM \(unescaped: server.db.store.schema).jobs", as: Int.self) == [0])
        }
    }
}
