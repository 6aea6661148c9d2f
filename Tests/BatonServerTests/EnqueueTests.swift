import AsyncHTTPClient
import Baton
import BatonServerTestSupport
import Foundation
import NIOHTTP1
import Testing

/// `POST /v1/jobs` and `/v1/jobs/batch`: what is refused, with which status and path, and that a
/// refused request writes nothing.
@Suite(.timeLimit(.minutes(2)))
struct EnqueueTests {
    static let noop: JSONValue = ["task": "noop"]

    /// (body, expected status, expected `path`)
    static let invalid: [(String, Int, String)] = [
        (#"{"stages": []}"#, 400, "stages"),
        (#"{"queue": "q"}"#, 400, "stages"),
        (#"{"stages": [{"task": "noop", "timeout": "soon"}]}"#, 400, "stages[0].timeout"),
        (#"{"stages": [{"task": "noop", "timeout": 30}]}"#, 400, "stages[0].timeout"),
        (#"{"stages": [{"task": "noop", "backoff": {"kind": "random"}}]}"#, 400, "stages[0].backoff.kind"),
        (#"{"stages": [{"task": "noop", "backoff": {"initial": "-1s"}}]}"#, 400, "stages[0].backoff.initial"),
        (#"{"stages": [{"task": "noop", "max_attempts": 0}]}"#, 400, "stages[0].max_attempts"),
        (#"{"stages": [{"task": "noop", "max_attempts": 1.5}]}"#, 400, "stages[0].max_attempts"),
        (#"{"priority": "high", "stages": [{"task": "noop"}]}"#, 400, "priority"),
        (#"{"priority": 40000, "stages": [{"task": "noop"}]}"#, 400, "priority"),
        (#"{"stages": [{"task": 7}]}"#, 400, "stages[0].task"),
        (#"{"stages": [{"task": "noop", "lane": {"key": "a"}}]}"#, 400, "stages[0].lane"),
        (#"{"stages": [{"task": "noop", "lane": ""}]}"#, 400, "stages[0].lane"),
        (#"{"stages": [{"task": "noop", "retries": 3}]}"#, 400, "stages[0].retries"),
        (#"{"stages": [{"group": []}]}"#, 400, "stages[0].group"),
        (#"{"stages": [{"group": [{"task": "noop", "timeout": "x"}]}]}"#, 400, "stages[0].group[0].timeout"),
        (#"{"stages": [{"task": "noop", "name": "a"}, {"task": "noop", "name": "a"}]}"#, 400, "stages[1].name"),
        (#"{"stages": "noop"}"#, 400, "stages"),
        (#"{"stages": [{"task": "noop"}], "run_at": "tomorrow"}"#, 400, "run_at"),
        (#"{"stages": [{"task": "noop"}], "run_at": "2030-01-01T00:00:00Z", "delay": "1s"}"#, 400, "delay"),
        (#"{"stages": [{"task": "noop"}], "metadata": [1]}"#, 400, "metadata"),
        (#"{"stages": [{"task": "noop"}], "input": {"a": "x\u0000y"}}"#, 400, "input.a"),
        (#"{"stages": [{"task": "noop"}], "queue": ""}"#, 400, "queue"),
        (#"{"stages": [{"task": "noop"}], "colour": "red"}"#, 400, "colour"),
        (#"{"stages": [{"task": "noop"}], "run_at": null}"#, 400, "run_at"),
        (#"{"stages": [{"task": "noop"}], "metadata": null}"#, 400, "metadata"),
        (#"{"stages": [{"task": "noop", "timeout": null}]}"#, 400, "stages[0].timeout"),
        (
            #"{"stages": [{"group": [{"task": "noop", "backoff": {"kind": null}}]}]}"#, 400,
            "stages[0].group[0].backoff.kind"
        ),
        (#"{"stages": [{"task": "noop"}], "input": {"a": 1e200000}}"#, 400, "input.a"),
        (#"{"stages": [{"task": "noop"}], "queue": "a", "queue": "b"}"#, 400, ""),
        (#"[1, 2]"#, 400, ""),
        (#"{"stages": [{"task": "noop"}"#, 400, ""),
        (#"{"stages": [{"task": "noop"}, {"task": "no-such-task"}]}"#, 422, "stages[1].task"),
        (#"{"stages": [{"group": [{"task": "noop"}, {"task": "nor-this"}]}]}"#, 422, "stages[0].group[1].task"),
        // A stage's own queue: a name, served by some live worker with the stage's task.
        (#"{"stages": [{"task": "noop", "queue": ""}]}"#, 400, "stages[0].queue"),
        (#"{"stages": [{"task": "noop"}, {"task": "noop", "queue": "gpu"}]}"#, 422, "stages[1].queue"),
        (#"{"stages": [{"group": [{"task": "noop", "queue": "gpu"}]}]}"#, 422, "stages[0].group[0].queue"),
        // A sub-chain: only as a group member, with a stage at least, its stages checked as a chain's.
        (#"{"stages": [{"stages": [{"task": "noop"}]}]}"#, 400, "stages[0]"),
        (#"{"stages": [{"group": [{"stages": []}]}]}"#, 400, "stages[0].group[0].stages"),
        (
            #"{"stages": [{"group": [{"stages": [{"task": "noop", "timeout": "x"}]}]}]}"#, 400,
            "stages[0].group[0].stages[0].timeout"
        ),
        (
            #"{"stages": [{"group": [{"stages": [{"task": "noop"}, {"task": "nope"}]}]}]}"#, 422,
            "stages[0].group[0].stages[1].task"
        ),
    ]

    @Test func badInputIsRefusedWithItsPathAndWritesNothing() async throws {
        try await withServer { server async throws in
            for (body, status, path) in Self.invalid {
                let reply = try await server.call(.POST, "/v1/jobs", raw: body)
                #expect(reply.status == status, "\(body): \(reply.text)")
                #expect(reply["path"]?.stringValue == path, "\(body): \(reply.text)")
                #expect(reply.headers.first(name: "Content-Type") == "application/problem+json")
                #expect(reply["detail"]?.stringValue?.isEmpty == false)
            }
            let tooMany = JSONValue.array(Array(repeating: Self.noop, count: 101))
            for body: JSONValue in [["stages": tooMany], ["stages": [["group": tooMany]]]] {
                let reply = try await server.call(.POST, "/v1/jobs", body: body)
                #expect(reply.status == 400)
                #expect(reply["detail"]?.stringValue?.contains("at most 100") == true, "\(reply.text)")
            }
            let huge =
                "{\"input\": \"" + String(repeating: "x", count: 1 << 20) + "\", \"stages\": [{\"task\": \"noop\"}]}"
            #expect(try await server.call(.POST, "/v1/jobs", raw: huge).status == 413)
            let unknown = try await server.call(.POST, "/v1/jobs", raw: #"{"stages": [{"task": "no-such-task"}]}"#)
            #expect(unknown["tasks"] == ["no-such-task"])
            #expect(
                try await server.db.values(
                    "SELECT count(*)::int FROM \(unescaped: server.db.store.schema).jobs", as: Int.self) == [0])
            // ?unchecked=true takes a task no worker serves yet.
            let unchecked = try await server.call(
                .POST, "/v1/jobs?unchecked=true", body: ["stages": [["task": "no-such-task"]], "queue": "elsewhere"])
            #expect(unchecked.status == 201)
            #expect(unchecked["state"] == "available")
            // Null where any JSON goes, and for a lane (none), is a value; elsewhere it is refused above.
            let nulls = try await server.call(
                .POST, "/v1/jobs",
                raw: #"{"input": null, "stages": [{"task": "noop", "lane": null, "args": {"a": null}}]}"#)
            #expect(nulls.status == 201, "\(nulls.text)")
        }
    }

    @Test func aBatchIsAllOrNothing() async throws {
        try await withServer { server async throws in
            let good: JSONValue = ["stages": [Self.noop]]
            let bad = try await server.call(
                .POST, "/v1/jobs/batch", body: ["jobs": [good, good, ["stages": [["task": "noop", "timeout": "x"]]]]])
            #expect(bad.status == 400)
            #expect(bad["path"] == "jobs[2].stages[0].timeout")
            let unknown = try await server.call(
                .POST, "/v1/jobs/batch", body: ["jobs": [good, ["stages": [["task": "nope"]]]]])
            #expect(unknown.status == 422)
            #expect(unknown["path"] == "jobs[1].stages[0].task")
            #expect(
                try await server.db.values(
                    "SELECT count(*)::int FROM \(unescaped: server.db.store.schema).jobs", as: Int.self) == [0])

            let ok = try await server.call(
                .POST, "/v1/jobs/batch",
                body: ["jobs": [good, ["stages": [Self.noop], "queue": "other", "idempotency_key": "b-1"], good]])
            #expect(ok.status == 201)
            let jobs = ok["jobs"]?.items ?? []
            #expect(jobs.count == 3)
            #expect(jobs.map { $0["inserted"] } == [true, true, true])
            #expect(jobs[1]["queue"] == "other")
            let again = try await server.call(
                .POST, "/v1/jobs/batch",
                body: ["jobs": [["stages": [Self.noop], "queue": "other", "idempotency_key": "b-1"]]])
            #expect(again.status == 200)
            #expect(again["jobs"]?.items.first?["id"] == jobs[1]["id"])
            #expect(again["jobs"]?.items.first?["inserted"] == false)
        }
    }

    @Test func anIdempotencyKeyAnswersWithTheExistingJob() async throws {
        try await withServer { server async throws in
            let body: JSONValue = ["stages": [Self.noop], "queue": "idle"]
            let first = try await server.call(.POST, "/v1/jobs", body: body, headers: [("Idempotency-Key", "order-42")])
            #expect(first.status == 201)
            #expect(first.headers.first(name: "Location") == "/v1/jobs/\(first["id"]!.int64!)")
            let second = try await server.call(
                .POST, "/v1/jobs", body: body, headers: [("Idempotency-Key", "order-42")])
            #expect(second.status == 200)
            #expect(second["id"] == first["id"])
            #expect(second["idempotency_key"] == "order-42")
            let field = try await server.call(
                .POST, "/v1/jobs", body: ["stages": [Self.noop], "queue": "idle", "idempotency_key": "order-42"])
            #expect(field.status == 200)
            #expect(field["id"] == first["id"])
            let clash = try await server.call(
                .POST, "/v1/jobs", body: ["stages": [Self.noop], "idempotency_key": "a"],
                headers: [("Idempotency-Key", "b")])
            #expect(clash.status == 400)
            #expect(clash["path"] == "idempotency_key")
        }
    }

    /// A unique job: while one holds the rule's key, another enqueue answers 200 with it; a
    /// malformed rule is refused at its path; a retry waits while another job holds the key.
    @Test func aUniqueJobAnswersWithTheJobThatHoldsItsKey() async throws {
        try await withServer { server async throws in
            let body: JSONValue = [
                "stages": [["task": "noop", "args": ["customer": 7]]], "queue": "idle",
                "unique": ["window": "1h", "finished": ["discarded"]],
            ]
            let first = try await server.call(.POST, "/v1/jobs", body: body)
            #expect(first.status == 201, "\(first.text)")
            let second = try await server.call(.POST, "/v1/jobs", body: body)
            #expect(second.status == 200)
            #expect(second["id"] == first["id"])
            let byKey: JSONValue = ["stages": [Self.noop], "queue": "idle", "unique": ["key": "sync-7"]]
            let keyed = try await server.call(.POST, "/v1/jobs", body: byKey)
            #expect(keyed.status == 201)
            #expect(try await server.call(.POST, "/v1/jobs", body: byKey)["id"] == keyed["id"])
            for (unique, path) in [
                (["window": "0s"], "unique.window"), (["key": ""], "unique.key"), (["finished": ["running"]], "unique"),
            ] as [(JSONValue, String)] {
                let refused = try await server.call(.POST, "/v1/jobs", body: ["stages": [Self.noop], "unique": unique])
                #expect(refused.status == 400, "\(unique): \(refused.text)")
                #expect(refused["path"]?.stringValue?.hasPrefix(path) == true, "\(unique): \(refused.text)")
            }
            // Cancelled frees the key (the rule names no final state); a retry of the cancelled
            // job then waits for the new holder.
            let id = try #require(keyed["id"]?.int64)
            #expect(try await server.call(.POST, "/v1/jobs/\(id)/cancel").status == 200)
            let holder = try await server.call(.POST, "/v1/jobs", body: byKey)
            #expect(holder.status == 201)
            let retry = try await server.call(.POST, "/v1/jobs/\(id)/retry")
            #expect(retry.status == 409)
            #expect(retry["detail"]?.stringValue?.contains("holds job \(id)'s unique key") == true, "\(retry.text)")
        }
    }

    /// `?wait=` answers when the job finishes (woken by NOTIFY), or with the job as it is when
    /// the time runs out.
    @Test func waitReturnsAsTheJobFinishes() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue([
                "stages": [["task": "sleep", "args": ["ms": 300]], ["task": "add", "args": ["n": 1]]], "input": 1,
            ])
            let reply = try await server.call(.GET, "/v1/jobs/\(id)?wait=30s")
            #expect(reply["state"] == "completed")
            #expect(reply["output"] == 2)

            let slow = try await server.enqueue(["stages": [["task": "sleep", "args": ["ms": 60_000]]]])
            let early = try await server.call(.GET, "/v1/jobs/\(slow)?wait=200ms")
            #expect(early.status == 200)
            #expect(early["state"] != "completed")
            #expect(try await server.call(.POST, "/v1/jobs/\(slow)/cancel").status == 200)

            let direct = try await server.call(
                .POST, "/v1/jobs?wait=30s", body: ["stages": [["task": "add", "args": ["n": 2]]], "input": 40])
            #expect(direct.status == 201)
            #expect(direct["state"] == "completed")
            #expect(direct["output"] == 42)
            #expect(try await server.call(.GET, "/v1/jobs/\(id)?wait=forever").status == 400)
            // Longer waits are cut to the server's maximum (5 minutes); a finished job answers at once.
            #expect(try await server.call(.GET, "/v1/jobs/\(id)?wait=1h")["state"] == "completed")
        }
    }
}
