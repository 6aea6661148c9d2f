import Baton
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import Testing

/// Retrying and deleting a job whose failed group still has members running.
@Suite struct GroupRetryTests {
    /// The members of the job's group stage, as the API lists them.
    static func members(_ job: JSONValue) -> [JSONValue] { job["stages"]?.items.first?["members"]?.items ?? [] }

    /// A group fails when one member fails for good while another still runs: retrying or deleting
    /// the parent is refused with 409 saying why, until the running member is cancelled; then the
    /// retry starts its failed members again, each the same job.
    @Test func aFailedGroupWithMembersRunningIsRefusedThenRetried() async throws {
        try await withServer { server async throws in
            let key = "group-\(UUID())"
            let parent = try await server.enqueue([
                "input": 1,
                "stages": [
                    [
                        "group": [
                            ["task": "fail-first", "args": ["key": .string(key)], "max_attempts": 1],
                            ["task": "sleep", "args": ["ms": 60_000]],
                        ]
                    ]
                ],
            ])
            let failed = try await server.job(parent) { $0["state"] == "discarded" }
            let sleeper = try #require(
                Self.members(failed).first { $0["state"] == "running" }?["id"]?.int64, "\(failed)")

            let refused = try await server.call(.POST, "/v1/jobs/\(parent)/retry")
            #expect(refused.status == 409)
            #expect(refused["detail"]?.stringValue?.contains("still running") == true, "\(refused.text)")
            #expect(try await server.call(.DELETE, "/v1/jobs/\(parent)").status == 409)

            #expect(try await server.call(.POST, "/v1/jobs/\(sleeper)/cancel").status == 200)
            let retried = try await server.call(.POST, "/v1/jobs/\(parent)/retry")
            #expect(retried.status == 200, "\(retried.text)")
            #expect(retried["state"] != "discarded")
            // Both members failed (one discarded, one cancelled): each starts again in place, the
            // same job; fail-first succeeds on its second run, and the group waits for the sleeper.
            var again: JSONValue = .null
            try await eventually("the group to run its sleeper again, and fail-first to complete") {
                again = try await server.call(.GET, "/v1/jobs/\(parent)").json
                let members = Self.members(again)
                return members.count == 2 && members.contains { $0["state"] == "running" && $0["id"]?.int64 == sleeper }
                    && members.contains { $0["state"] == "completed" }
            }
            #expect(again["state"] == "waiting")
            try await server.call(.POST, "/v1/jobs/\(parent)/cancel")
        }
    }
}
