import Baton
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import Testing

/// `POST /v1/jobs/bulk` and `baton jobs retry|cancel|delete` by filter: after an outage, the dead
/// letters retried in one command.
@Suite(.timeLimit(.minutes(3)))
struct BulkOperationTests {
    /// Discarded jobs of one queue are counted by a dry run, then retried by filter from the CLI and
    /// run to completion; jobs of another queue are left alone.
    @Test func deadLettersAreCountedThenRetriedByFilter() async throws {
        try await withServer { server async throws in
            var billing: [Int64] = []
            for index in 0..<5 {
                billing.append(
                    try await server.enqueue([
                        "input": .number(JSONNumber(index)), "queue": "default", "metadata": ["team": "billing"],
                        "stages": [["task": "fail-first", "args": ["key": .string("bulk-\(UUID())")]]],
                    ]))
            }
            let other = try await server.enqueue([
                "input": 1, "stages": [["task": "fail-first", "args": ["key": .string("other-\(UUID())")]]],
            ])
            for id in billing + [other] { _ = try await server.job(id) { $0["state"] == "discarded" } }

            let filter: JSONValue = ["state": ["discarded"], "ids": .array(billing.map { .number(JSONNumber($0)) })]
            let dry = try await server.call(
                .POST, "/v1/jobs/bulk", body: ["action": "retry", "dry_run": true, "filter": filter])
            #expect(dry.status == 200, "\(dry.text)")
            #expect(dry["matched"] == 5)
            #expect(dry["changed"] == 0)
            #expect(dry["sample"]?.items.map { $0["id"]?.int64 } == billing.reversed().map { $0 })
            #expect(
                try await server.call(.GET, "/v1/jobs/\(billing[0])")["state"] == "discarded",
                "a dry run changes nothing")

            #expect(dry["paused_queues"] == nil)
            // A paused queue among theirs is said, in the API's answer and by the CLI.
            #expect(try await server.call(.POST, "/v1/queues/default/pause").status == 200)
            let paused = try await server.call(
                .POST, "/v1/jobs/bulk", body: ["action": "retry", "dry_run": true, "filter": filter])
            #expect(paused["paused_queues"] == ["default"])
            let ids = billing.map(String.init)
            let counted = try await server.baton(["jobs", "retry", "--state", "discarded", "--dry-run"] + ids)
            #expect(counted.status == 0, "\(counted.err)")
            #expect(counted.lines.first == "5 jobs would be retried; the newest:")
            #expect(counted.err.contains("note: paused, so their retried jobs wait until resumed: default"))
            #expect(try await server.call(.POST, "/v1/queues/default/resume").status == 200)
            let retried = try await server.baton(["jobs", "retry", "--state", "discarded"] + ids)
            #expect(retried.status == 0, "\(retried.err)")
            #expect(retried.lines.first == "retried 5 of 5 matching jobs")
            for id in billing { _ = try await server.job(id) { $0["state"] == "completed" } }
            #expect(try await server.call(.GET, "/v1/jobs/\(other)")["state"] == "discarded")
        }
    }

    /// Only an admin acts in bulk; a filter the document refuses is a 400 naming the field, and
    /// the CLI without ids or a filter is a usage error.
    @Test func bulkRequestsAreCheckedAndForAdminsOnly() async throws {
        try await withServer(worker: nil) { server async throws in
            let body: JSONValue = ["action": "delete", "filter": [:]]
            #expect(try await server.call(.POST, "/v1/jobs/bulk", token: Token.read, body: body).status == 403)
            #expect(try await server.call(.POST, "/v1/jobs/bulk", token: Token.enqueue, body: body).status == 403)
            for (filter, path) in [
                (["ids": [0]], "filter.ids[0]"),
                (["error": .string(String(repeating: "x", count: 201))], "filter.error"),
                (["queue": "bad\u{1}name"], "filter.queue"), (["colour": "red"], "filter.colour"),
            ] as [(JSONValue, String)] {
                let refused = try await server.call(
                    .POST, "/v1/jobs/bulk", body: ["action": "retry", "filter": filter])
                #expect(refused.status == 400, "\(filter): \(refused.text)")
                #expect(refused["path"]?.stringValue == path, "\(refused.text)")
            }
            // Text no stored error can hold (a NUL) matches no job: valid, and nothing to do.
            let id = try await server.enqueue(
                ["queue": "idle", "stages": [["task": "noop"]]], query: "?unchecked=true")
            let nul: JSONValue = ["action": "cancel", "filter": ["error": "a\u{0}b"]]
            let none = try await server.call(.POST, "/v1/jobs/bulk", body: nul)
            #expect(none.status == 200 && none["matched"] == 0, "\(none.text)")
            #expect(try await server.call(.GET, "/v1/jobs?error=a%00b")["jobs"]?.items.isEmpty == true)
            #expect(try await server.client.store.job(id)?.state == .available)
            let nothing = try await server.baton(["jobs", "delete"])
            #expect(nothing.status == 2)
            #expect(nothing.err.contains("give job ids, or a filter"))
        }
    }
}
