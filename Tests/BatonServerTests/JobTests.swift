import AsyncHTTPClient
import Baton
import BatonPostgres
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import NIOHTTP1
import Testing

/// Following and steering jobs over HTTP.
@Suite(.timeLimit(.minutes(2)))
struct JobTests {
    /// Background, ordered and group stages enqueued as JSON, followed to `completed` with every
    /// stage's output, attempts and members.
    @Test func aMixedChainRunsToCompletion() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue([
                "input": 1, "metadata": ["order": "A-1"],
                "stages": [
                    ["task": "add", "args": ["n": 1], "name": "first"],
                    ["task": "add", "args": ["n": 10], "lane": "customer-7", "max_attempts": 3, "timeout": "10s"],
                    [
                        "name": "fan",
                        "group": [
                            ["task": "add", "args": ["n": 100]],
                            ["task": "add", "args": ["n": 200], "lane": "customer-7"],
                        ],
                    ],
                    ["task": "sum", "backoff": ["kind": "constant", "initial": "100ms"]],
                ],
            ])
            let job = try await server.job(id) { $0["state"] == "completed" }
            #expect(job["output"] == 324)  // 112 + 212
            let stages = job["stages"]?.items ?? []
            #expect(stages.map { $0["output"] } == [2, 12, [112, 212], 324])
            #expect(stages.map { $0["state"] } == ["completed", "completed", "completed", "completed"])
            #expect(stages.map { $0["attempts"] } == [1, 1, 1, 1])
            #expect(stages[1]["lane"] == "customer-7")
            #expect(stages[1]["max_attempts"] == 3)
            #expect(stages[0]["name"] == "first")
            let members = stages[2]["members"]?.items ?? []
            #expect(members.map { $0["output"] } == [112, 212])
            #expect(members.map { $0["state"] } == ["completed", "completed"])
            #expect(job["metadata"] == ["order": "A-1"])
            #expect(job["finished_at"] != .null)
        }
    }

    /// A group member that is a sub-chain (issue 48), declared as JSON: its job runs the stages in
    /// order (one in a lane) and the member's output is its last stage's; the job is found by a
    /// sub-chain stage's args.
    @Test func aSubChainMemberRunsItsStagesAndHandsOnTheLast() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue([
                "input": 1,
                "stages": [
                    [
                        "group": [
                            [
                                "name": "three",
                                "stages": [
                                    ["task": "add", "args": ["n": 1]],
                                    ["task": "add", "args": ["n": 10, "customer": "c-48"], "lane": "customer-48"],
                                    ["task": "add", "args": ["n": 100]],
                                ],
                            ],
                            ["task": "add", "args": ["n": 1000]],
                        ]
                    ],
                    ["task": "sum"],
                ],
            ])
            let job = try await server.job(id) { $0["state"] == "completed" }
            #expect(job["output"] == 1113)  // 112 + 1001
            let members = job["stages"]?.items.first?["members"]?.items ?? []
            #expect(members.map { $0["output"] } == [112, 1001])
            #expect(members.map { $0["task"] } == ["add", "add"])
            let member = try await server.call(.GET, "/v1/jobs/\(members.first?["id"]?.int64 ?? 0)")
            #expect(member["stages"]?.items.map { $0["output"] } == [2, 12, 112])
            #expect(member["stages"]?.items.dropFirst().first?["lane"] == "customer-48")
            let found = try await server.call(.GET, "/v1/jobs?args.customer=c-48")
            #expect(found["jobs"]?.items.map { $0["id"] } == [.number(JSONNumber(id))], "\(found.text)")
        }
    }

    /// A map declared as JSON (issue 48): the array at a path of the input, a sub-chain of three
    /// stages per element (the second in a lane); the job's output is the results in element
    /// order, each number exactly as the stages passed it on.
    @Test func aMapOverAListHandsOnEachElementsResult() async throws {
        try await withServer { server async throws in
            let numbers: [JSONValue] = (1...50).map { .number(JSONNumber("\($0).5")!) }
            let id = try await server.enqueue([
                "input": ["numbers": .array(numbers)],
                "stages": [
                    ["task": "noop"],
                    [
                        "map": "{{output.numbers}}",
                        "stages": [["task": "noop"], ["task": "noop", "lane": "fan-out"], ["task": "noop"]],
                    ],
                    ["task": "noop"],
                ],
            ])
            let job = try await server.job(id) { $0["state"] == "completed" }
            #expect(job["output"] == .array(numbers))
            let stage = job["stages"]?.items.dropFirst().first
            #expect(stage?["members"]?.items.count == 50)
            let refused = try await server.call(
                .POST, "/v1/jobs", body: ["stages": [["map": "{{numbers}}", "stages": [["task": "noop"]]]]])
            #expect(refused.status == 400)
            #expect(refused["path"] == "stages[0].map", "\(refused.text)")
        }
    }

    /// A map that goes on past failures, declared as JSON: every element runs; the job's output
    /// is each result in element order (`null` where the run failed) and the failures, and the
    /// job's page says the policy. A policy that cannot be is refused, naming its field, as is a
    /// first stage's map over more of the input than its `max_elements`.
    @Test func aMapThatGoesOnHandsOnItsFailures() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue([
                "input": [1, 2, 3, 4],
                "stages": [["map": "{{output}}", "stages": [["task": "even-only"]], "failures": "continue"]],
            ])
            let job = try await server.job(id) { $0["state"] == "completed" }
            #expect(
                job["output"]
                    == [
                        "results": [nil, 2, nil, 4],
                        "failures": [
                            ["index": 0, "state": "discarded", "error": "not even: 1"],
                            ["index": 2, "state": "discarded", "error": "not even: 3"],
                        ],
                    ], "\(job)")
            #expect(job["stages"]?.items.first?["failures"] == "continue")
            #expect(job["stages"]?.items.first?["member_counts"] == ["completed": 2, "discarded": 2])

            let stopping = try await server.enqueue([
                "input": [1, 2, 3, 4],
                "stages": [
                    ["map": "{{output}}", "stages": [["task": "even-only"]], "stop_after": 2, "concurrency": 1]
                ],
            ])
            let stopped = try await server.job(stopping) { $0["state"] == "discarded" }
            #expect(stopped["stages"]?.items.first?["stop_after"] == 2)
            #expect(stopped["stages"]?.items.first?["unstarted"] == 1)
            #expect(stopped["stages"]?.items.first?["member_counts"] == ["completed": 1, "discarded": 2], "\(stopped)")

            for (stage, path) in [
                (["failures": "all", "stop_after": 2] as JSONValue, "stages[0].stop_after"),
                (["failures": "continue", "stop_after": 0], "stages[0].stop_after"),
                (["failures": "sometimes"], "stages[0].failures"),
                (["max_elements": 0], "stages[0].max_elements"),
                (["max_elements": 2], "stages[0].map"),
            ] {
                var body: [String: JSONValue] = ["map": "{{output}}", "stages": [["task": "noop"]]]
                for (key, value) in stage.objectValue ?? [:] { body[key] = value }
                let refused = try await server.call(
                    .POST, "/v1/jobs", body: ["input": [1, 2, 3], "stages": [.object(body)]])
                #expect(refused.status == 400, "\(refused.text)")
                #expect(refused["path"]?.stringValue?.hasPrefix(path) == true, "\(stage): \(refused.text)")
            }
        }
    }

    /// A fairness key over HTTP (issue 49): stored, shown on the job and its page; one that is not
    /// a name is refused naming `fair_key`.
    @Test func aJobNamesItsFairnessKey() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue([
                "fair_key": "tenant-42", "fair_weight": 2.5, "stages": [["task": "noop"]],
            ])
            let job = try await server.job(id) { $0["state"] == "completed" }
            #expect(job["fair_key"] == "tenant-42")
            #expect(job["fair_weight"] == 2.5)
            let plain = try await server.job(try await server.enqueue(["stages": [["task": "noop"]]])) { _ in true }
            #expect(plain["fair_weight"] == nil)
            for key: JSONValue in [7, "", .string(String(repeating: "k", count: 201))] {
                let refused = try await server.call(
                    .POST, "/v1/jobs", body: ["fair_key": key, "stages": [["task": "noop"]]])
                #expect(refused.status == 400, "\(key): \(refused.text)")
                #expect(refused["path"] == "fair_key", "\(key): \(refused.text)")
            }
            for weight: JSONValue in [0, -2, 1001, "2"] {
                for body: JSONValue in [
                    ["fair_key": "a", "fair_weight": weight, "stages": [["task": "noop"]]],
                    ["jobs": [["fair_key": "a", "fair_weight": weight, "stages": [["task": "noop"]]]]],
                ] {
                    let batch = body["jobs"] != nil
                    let refused = try await server.call(.POST, batch ? "/v1/jobs/batch" : "/v1/jobs", body: body)
                    #expect(refused.status == 400, "\(weight): \(refused.text)")
                    let path = refused["path"]?.stringValue ?? ""
                    #expect(path.hasSuffix("fair_weight"), "\(weight): \(refused.text)")
                }
            }
        }
    }

    /// An admin makes a queue take its jobs' keys from their metadata; a job whose metadata holds
    /// a number there is refused naming the field (in a batch, the job's); the queue says where
    /// its keys come from; the change is audited; cleared, jobs name their own again.
    @Test func aQueueTakesItsJobsKeysFromTheirMetadata() async throws {
        try await withServer { server async throws in
            let set = try await server.call(.PUT, "/v1/queues/tenants/fair-key", body: ["from": "metadata.tenant"])
            #expect(set.status == 200, "\(set.text)")
            #expect(set["from"] == "metadata.tenant")
            for from: JSONValue in ["output.tenant", "metadata", 7] {
                let refused = try await server.call(.PUT, "/v1/queues/tenants/fair-key", body: ["from": from])
                #expect(refused.status == 400 && refused["path"] == "from", "\(from): \(refused.text)")
            }
            let queue = try await server.call(.GET, "/v1/queues")["queues"]?.items.first { $0["name"] == "tenants" }
            #expect(queue?["fair_key_from"] == "metadata.tenant")

            let job: JSONValue = ["queue": "tenants", "metadata": ["tenant": "t-9"], "stages": [["task": "noop"]]]
            let id = try await server.enqueue(job)
            #expect(try await server.job(id) { _ in true }["fair_key"] == "t-9")
            let numbered: JSONValue = ["queue": "tenants", "metadata": ["tenant": 9], "stages": [["task": "noop"]]]
            let refused = try await server.call(.POST, "/v1/jobs", body: numbered)
            #expect(refused.status == 400 && refused["path"] == "metadata.tenant", "\(refused.text)")
            let batch = try await server.call(.POST, "/v1/jobs/batch", body: ["jobs": [job, numbered]])
            #expect(batch.status == 400 && batch["path"] == "jobs[1].metadata.tenant", "\(batch.text)")
            #expect(
                try await server.db.store.auditEvents(AuditFilter(action: "setFairKeySource")).first?.target
                    == "queue:tenants")

            let cleared = try await server.call(.DELETE, "/v1/queues/tenants/fair-key")
            #expect(cleared.status == 200 && cleared["from"] == nil, "\(cleared.text)")
            #expect(try await server.call(.POST, "/v1/jobs", body: numbered).status == 201)
        }
    }

    @Test func cancelStopsARunningJob() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue([
                "stages": [["task": "sleep", "args": ["ms": 60_000]], ["task": "noop"]]
            ])
            _ = try await server.job(id) { $0["state"] == "running" }
            let cancelled = try await server.call(.POST, "/v1/jobs/\(id)/cancel")
            #expect(cancelled.status == 200)
            #expect(cancelled["state"] == "cancelled")
            let again = try await server.call(.POST, "/v1/jobs/\(id)/cancel")
            #expect(again.status == 409)
            // The worker lets go of it: nothing of this job runs any more.
            try await eventually("the worker to stop the stage") {
                try await server.call(.GET, "/v1/workers")["workers"]?.items.first?["running_jobs"] == []
            }
            #expect(try await server.call(.POST, "/v1/jobs/424242/cancel").status == 404)
        }
    }

    /// A discarded job starts again at the stage that failed, with fresh attempts, and completes;
    /// its earlier error stays in the history.
    @Test func retryRestartsADiscardedJobAtItsFailedStage() async throws {
        try await withServer { server async throws in
            let key = UUID().uuidString
            let id = try await server.enqueue([
                "input": 5,
                "stages": [["task": "add", "args": ["n": 1]], ["task": "fail-first", "args": ["key": .string(key)]]],
            ])
            let discarded = try await server.job(id) { $0["state"] == "discarded" }
            #expect(discarded["current_stage"] == 1)
            #expect(discarded["stages"]?.items[1]["errors"]?.items.count == 1)
            let retried = try await server.call(.POST, "/v1/jobs/\(id)/retry")
            #expect(retried.status == 200)
            let done = try await server.job(id) { $0["state"] == "completed" }
            #expect(done["output"] == 6)
            #expect(done["stages"]?.items[1]["errors"]?.items.count == 1)
            #expect(done["stages"]?.items[0]["attempts"] == 1)
            let again = try await server.call(.POST, "/v1/jobs/\(id)/retry")
            #expect(again.status == 409)
        }
    }

    @Test func deleteRemovesOnlyFinishedJobs() async throws {
        try await withServer { server async throws in
            let running = try await server.enqueue(["stages": [["task": "sleep", "args": ["ms": 60_000]]]])
            #expect(try await server.call(.DELETE, "/v1/jobs/\(running)").status == 409)
            let done = try await server.enqueue(["stages": [["task": "noop"]]])
            _ = try await server.job(done) { $0["state"] == "completed" }
            let deleted = try await server.call(.DELETE, "/v1/jobs/\(done)")
            #expect(deleted.status == 204)
            #expect(try await server.call(.GET, "/v1/jobs/\(done)").status == 404)
            #expect(try await server.call(.DELETE, "/v1/jobs/\(done)").status == 404)
            #expect(try await server.call(.GET, "/v1/jobs/not-a-number").status == 404)
            #expect(try await server.call(.POST, "/v1/jobs/\(running)/cancel").status == 200)
        }
    }

    /// Newest first, by keyset: paging while other jobs are enqueued neither repeats nor skips
    /// any job that existed when paging began.
    @Test func paginationNeitherSkipsNorRepeatsUnderConcurrentInserts() async throws {
        try await withServer(worker: nil) { server async throws in
            let jobs = JSONValue.array(Array(repeating: ["stages": [["task": "noop"]], "queue": "idle"], count: 120))
            let first = try await server.call(.POST, "/v1/jobs/batch?unchecked=true", body: ["jobs": jobs])
            let existing = Set((first["jobs"]?.items ?? []).compactMap { $0["id"]?.int64 })
            #expect(existing.count == 120)
            let inserting = Task {
                for _ in 0..<20 {
                    try await server.call(
                        .POST, "/v1/jobs/batch?unchecked=true",
                        body: ["jobs": .array(Array(jobs.items.prefix(5)))])
                }
            }
            var seen: [Int64] = []
            var cursor: String?
            repeat {
                let page = try await server.call(
                    .GET, "/v1/jobs?queue=idle&limit=25" + (cursor.map { "&cursor=\($0)" } ?? ""), token: Token.read)
                seen += (page["jobs"]?.items ?? []).compactMap { $0["id"]?.int64 }
                cursor = page["next_cursor"]?.stringValue
            } while cursor != nil
            try await inserting.value
            #expect(seen == seen.sorted(by: >))
            #expect(Set(seen).count == seen.count)
            #expect(existing.isSubset(of: Set(seen)))

            let filtered = try await server.call(.GET, "/v1/jobs?state=available,running&task=noop&limit=5")
            #expect(filtered["jobs"]?.items.count == 5)
            #expect(try await server.call(.GET, "/v1/jobs?state=done").status == 400)
            #expect(try await server.call(.GET, "/v1/jobs?limit=0").status == 400)
            #expect(try await server.call(.GET, "/v1/jobs?cursor=%%%").status == 400)
            #expect(try await server.call(.GET, "/v1/jobs?queue=elsewhere")["jobs"] == [])
        }
    }
}
