import Baton
import BatonAPI
import Foundation
import Testing

/// The wire types read back what they write, with every field present (absent values as explicit
/// nulls, as the OpenAPI document requires).
struct WireTests {
    static let time = Date(timeIntervalSince1970: 1_790_000_000.125)

    func roundTrip<T: Codable & Equatable>(_ value: T) throws -> JSONValue {
        let json = try JSONValue(parsing: try JSONValue(encoding: value).jsonText)
        #expect(try json.decode(as: T.self) == value)
        return json
    }

    @Test func aJobWithEveryKindOfStageReadsBackAsWritten() throws {
        let failed = AttemptErrorView(attempt: 1, at: Self.time, worker: nil, error: "503")
        let job = JobView(
            id: 7, queue: "default", priority: -2, state: .retryable, runAt: Self.time, createdAt: Self.time,
            finishedAt: nil, metadata: ["customer": 7], input: ["n": 1.5], output: .null, currentStage: 1,
            stages: [
                StageView(
                    index: 0, name: "render", task: "render", lane: nil, state: .completed, attempts: 1,
                    maxAttempts: 20, startedAt: Self.time, finishedAt: Self.time, output: "doc", errors: [],
                    members: nil),
                StageView(
                    index: 1, name: nil, task: nil, lane: nil, state: .retryable, attempts: 0, maxAttempts: nil,
                    startedAt: nil, finishedAt: nil, output: .null, errors: [failed],
                    members: [
                        MemberView(index: 0, id: 8, state: .discarded, attempts: 1, output: .null, errors: [failed])
                    ]),
            ], idempotencyKey: nil, parentID: nil)
        let json = try roundTrip(job)
        #expect(json["finished_at"] == .null)
        #expect(json["idempotency_key"] == .null)
        #expect(json["run_at"] == "2026-09-21T14:13:20.125Z")
        let stages = json["stages"]
        guard case .array(let list)? = stages else { throw WireFailure("stages is not an array") }
        #expect(list[0]["members"] == nil, "only group stages have members")
        #expect(list[1]["lane"] == .null)
        #expect(list[1]["errors"] == [["attempt": 1, "at": "2026-09-21T14:13:20.125Z", "worker": nil, "error": "503"]])
    }

    @Test func listingsQueuesLanesAndWorkersReadBackAsWritten() throws {
        let summary = JobSummaryView(
            id: 1, queue: "q", priority: 0, state: .waiting, currentStage: 0, stageCount: 2, task: nil, lane: "a",
            attempts: 0, runAt: Self.time, createdAt: Self.time, finishedAt: nil, lastError: nil)
        #expect(try roundTrip(JobPage(jobs: [summary], nextCursor: nil))["next_cursor"] == .null)
        var counts = QueueView.Counts()
        counts[.available] = 3
        let queue = try roundTrip(
            QueueList(queues: [
                QueueView(
                    name: "q", paused: true, counts: counts, oldestAvailableAt: nil, oldestAvailableAgeSeconds: nil)
            ]))
        #expect(
            queue["queues"] == [
                [
                    "name": "q", "paused": true, "oldest_available_at": nil, "oldest_available_age_seconds": nil,
                    "counts": [
                        "scheduled": 0, "available": 3, "running": 0, "retryable": 0, "waiting": 0, "completed": 0,
                        "discarded": 0, "cancelled": 0,
                    ],
                ]
            ])
        let head = LaneView.Head(
            id: 2, queue: "q", state: .retryable, stage: 0, task: "t", attempts: 3, runAt: Self.time, lastError: nil)
        let lanes = LanePage(lanes: [LaneView(lane: "a", head: head, waiting: 4)], nextCursor: "x")
        #expect(try roundTrip(lanes)["lanes"].map { $0 == .array([]) } == false)
        #expect(lanes.lanes[0].isBlocked)
        let worker = WorkerView(
            id: "w", host: "h", pid: 1, queues: ["q"], tasks: ["t"], startedAt: Self.time,
            lastHeartbeatAt: Self.time, runningJobs: [1, 2])
        _ = try roundTrip(WorkerList(workers: [worker]))
        _ = try roundTrip(BatchResponse(jobs: [EnqueuedJobView(id: 1, queue: "q", state: .available, inserted: false)]))
    }

    @Test func timesFromPostgreSQLAndFromTheServerBothParse() {
        #expect(RFC3339.parse("2026-09-21T14:13:20.125Z") == Self.time)
        #expect(RFC3339.parse("2026-09-21T16:13:20.125+02:00") == Self.time)
        #expect(RFC3339.parse("2026-09-21T14:13:20Z") != nil)
        #expect(RFC3339.parse("yesterday") == nil)
    }

    @Test func aSubmissionTellsTaskStagesFromGroups() throws {
        let job = JobSubmission(
            stages: [
                .task(TaskStageSubmission(task: "render", args: ["t": "x"])),
                .group(GroupStageSubmission(group: [.task(TaskStageSubmission(task: "a", lane: "l"))], name: "fan")),
            ], input: 1, queue: "q")
        let json = try roundTrip(job)
        #expect(
            json["stages"] == [
                ["task": "render", "args": ["t": "x"]], ["name": "fan", "group": [["task": "a", "lane": "l"]]],
            ])
        let problem = ProblemDetails(type: "urn:baton:problem:unknown-task", title: "t", status: 422, tasks: ["x"])
        #expect(problem.name == "unknown-task")
        #expect(ProblemDetails(title: "Not Found", status: 404).name == nil)
    }
}

struct WireFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
