import Baton
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import Testing

/// "Why is it not running?": a job that cannot make progress says why, in the enqueue answer,
/// in `GET /v1/jobs/{id}` and in `baton jobs show`. The test worker serves queue `default`.
@Suite(.timeLimit(.minutes(2)))
struct WaitReasonTests {
    static func reasons(_ job: JSONValue?) -> [JSONValue] { job?["waiting_for"]?.items ?? [] }
    static func kinds(_ job: JSONValue?) -> [String] { reasons(job).compactMap { $0["reason"]?.stringValue } }

    /// A misspelled queue answers 201 (the job is kept) and says no live worker serves it; so
    /// does the job when read, and `baton jobs show`.
    @Test func aJobInAQueueNoWorkerServesSaysSo() async throws {
        try await withServer { server async throws in
            let enqueued = try await server.call(
                .POST, "/v1/jobs", body: ["queue": "biling", "stages": [["task": "noop"]]])
            #expect(enqueued.status == 201)
            #expect(Self.kinds(enqueued.json) == ["no-worker"])
            #expect(Self.reasons(enqueued.json).first?["message"] == "no live worker serves queue \"biling\"")
            let id = try #require(enqueued["id"]?.int64)

            let read = try await server.call(.GET, "/v1/jobs/\(id)", token: Token.read)
            #expect(read["state"] == "available")
            #expect(Self.kinds(read.json) == ["no-worker"])

            let batch = try await server.call(
                .POST, "/v1/jobs/batch",
                body: ["jobs": [["queue": "biling", "stages": [["task": "noop"]]], ["stages": [["task": "noop"]]]]])
            #expect(batch["jobs"]?.items.map(Self.kinds) == [["no-worker"], []])

            let shown = try await server.baton(["jobs", "show", "\(id)"])
            #expect(shown.status == 0, "\(shown.err)")
            #expect(shown.out.contains("not running: no live worker serves queue \"biling\""), "\(shown.out)")
            let waited = try await server.baton(["jobs", "wait", "\(id)", "--timeout", "1s"])
            #expect(waited.status == 124, "still waiting, not failed")
            #expect(waited.err.contains("no live worker serves queue \"biling\""), "\(waited.err)")
        }
    }

    /// A job in a paused queue says the queue is paused until it is resumed; then it runs and
    /// says nothing more.
    @Test func aJobInAPausedQueueSaysSoUntilResumed() async throws {
        try await withServer { server async throws in
            try #require(await server.call(.POST, "/v1/queues/default/pause").status == 200)
            let enqueued = try await server.call(.POST, "/v1/jobs", body: ["stages": [["task": "noop"]]])
            #expect(Self.kinds(enqueued.json) == ["queue-paused"])
            let id = try #require(enqueued["id"]?.int64)
            let read = try await server.call(.GET, "/v1/jobs/\(id)")
            #expect(Self.reasons(read.json).first?["message"] == "queue \"default\" is paused")

            try #require(await server.call(.POST, "/v1/queues/default/resume").status == 200)
            let done = try await server.job(id) { $0["state"] == "completed" }
            #expect(Self.kinds(done) == [])
        }
    }

    /// Pausing a queue no job is in and no worker serves is refused (404), naming it; with
    /// `?unchecked=true` (`--unchecked`) it is paused for jobs yet to come.
    @Test func pausingAnUnknownQueueIsRefusedUnlessUnchecked() async throws {
        try await withServer { server async throws in
            let refused = try await server.call(.POST, "/v1/queues/defualt/pause")
            #expect(refused.status == 404)
            #expect(refused["type"] == "urn:baton:problem:unknown-queue")
            #expect(refused["detail"]?.stringValue?.contains("\"defualt\"") == true, "\(refused.text)")
            let queues = try await server.call(.GET, "/v1/queues")
            #expect(!(queues["queues"]?.items.contains { $0["name"] == "defualt" } ?? true), "nothing was paused")

            let cli = try await server.baton(["queues", "pause", "defualt"])
            #expect(cli.status == 5)
            #expect(cli.err.contains("--unchecked"), "\(cli.err)")

            #expect(try await server.call(.POST, "/v1/queues/later/pause?unchecked=true").status == 200)
            let id = try await server.enqueue(["queue": "later", "stages": [["task": "noop"]]])
            #expect(Self.kinds(try await server.call(.GET, "/v1/jobs/\(id)").json) == ["queue-paused", "no-worker"])
            // A queue the worker serves is known before any job is in it; one paused already too.
            #expect(try await server.call(.POST, "/v1/queues/default/pause").status == 200)
            let again = try await server.baton(["queues", "pause", "later"])
            #expect(again.status == 0, "\(again.err)")
        }
    }

    /// A task no worker of the queue runs (enqueued with `?unchecked=true`) is named.
    @Test func aTaskNoWorkerOfTheQueueRunsIsNamed() async throws {
        try await withServer { server async throws in
            let enqueued = try await server.call(
                .POST, "/v1/jobs?unchecked=true", body: ["stages": [["task": "noop"], ["task": "resize"]]])
            #expect(Self.kinds(enqueued.json) == [], "its first task is served")
            let id = try #require(enqueued["id"]?.int64)
            // The worker runs the first stage and leaves the second, untried, for a worker that runs it.
            let stuck: JSONValue = try await eventually("the second stage to wait") {
                let job = try await server.call(.GET, "/v1/jobs/\(id)").json
                if job["current_stage"] == 1, job["state"] == "available" { return job }
                return nil
            }
            #expect(Self.kinds(stuck) == ["no-worker-for-task"])
            #expect(stuck["stages"]?.items.last?["attempts"] == 0)
            #expect(
                Self.reasons(stuck).first?["message"] == "no live worker serving queue \"default\" runs task \"resize\""
            )
        }
    }

    /// A job behind a retrying lane head names the head, when it tries again, and how many wait
    /// ahead; a scheduled job says when it is due.
    @Test func aJobBehindARetryingLaneHeadNamesItAndWhen() async throws {
        try await withServer { server async throws in
            let head = try await server.enqueue([
                "stages": [
                    [
                        "task": "http", "args": ["method": "GET", "url": "http://127.0.0.1:1/nothing-listens"],
                        "lane": "acct-7", "max_attempts": 3, "backoff": ["kind": "constant", "initial": "1h"],
                    ]
                ]
            ])
            let second = try await server.call(
                .POST, "/v1/jobs", body: ["stages": [["task": "noop", "lane": "acct-7"]]])
            #expect(Self.kinds(second.json) == ["lane"])
            let third = try await server.enqueue(["stages": [["task": "noop", "lane": "acct-7"]]])
            let retrying: JSONValue = try await eventually("the head to fail") {
                let job = try await server.call(.GET, "/v1/jobs/\(head)").json
                if job["state"] == "retryable" { return job }
                return nil
            }
            #expect(Self.kinds(retrying) == ["retry"])
            #expect(Self.reasons(retrying).first?["until"] == retrying["run_at"])

            let behind = try await server.call(.GET, "/v1/jobs/\(third)").json
            let reason = try #require(Self.reasons(behind).first)
            #expect(reason["reason"] == "lane")
            #expect(reason["job"]?.int64 == head)
            #expect(reason["until"] == retrying["run_at"])
            let message = reason["message"]?.stringValue ?? ""
            #expect(
                message.hasPrefix("waits in lane \"acct-7\" behind job \(head) and 1 more waiting ahead"), "\(message)")

            let later = try await server.call(.POST, "/v1/jobs", body: ["delay": "1h", "stages": [["task": "noop"]]])
            #expect(Self.kinds(later.json) == ["scheduled"])
            #expect(Self.reasons(later.json).first?["until"] == later["run_at"])
        }
    }
}
