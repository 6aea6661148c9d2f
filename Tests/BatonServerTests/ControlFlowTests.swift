import Baton
import BatonHTTPTask
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import Testing

@testable import BatonWorker

/// `repeat` and `next` end to end: chains of `http` stages enqueued over the control plane, run by
/// a worker against a real server on loopback, their path read back from `GET /v1/jobs/{id}`.
@Suite(.timeLimit(.minutes(3)))
struct ControlFlowTests {
    static func tasks() -> TaskRegistry { HTTPTaskTests.tasks(HTTPTaskConfiguration()) }

    static func finished(_ server: TestServer, _ id: Int64) async throws -> JSONValue {
        try await HTTPTaskTests.finished(server, id)
    }

    /// The stage index of every run, in order.
    static func path(_ job: JSONValue) -> [Int] {
        (job["path"]?.items ?? []).compactMap { $0["stage"]?.int64.map(Int.init) }
    }

    static func states(_ job: JSONValue) -> [String] {
        (job["stages"]?.items ?? []).compactMap { $0["state"]?.stringValue }
    }

    /// A paginated API walked to its end: the stage runs once per page, each run fed the answer
    /// before, each with its own idempotency key; the stage after it runs once.
    @Test func aRepeatedStageWalksAPaginatedAPIToItsEnd() async throws {
        let pages: [String: JSONValue] = [
            "": ["items": [1, 2], "next_cursor": "b"],
            "b": ["items": [3, 4], "next_cursor": "c"],
            "c": ["items": [.number(JSONNumber("12345678901234567890")!)], "next_cursor": nil],
        ]
        try await withTargetServer({ request in
            guard request.path == "/items" else { return TargetServer.json(["ok": true]) }
            let cursor = request.query.replacingOccurrences(of: "cursor=", with: "")
            return TargetServer.json(pages[cursor] ?? [:], status: pages[cursor] == nil ? .notFound : .ok)
        }) { target async throws in
            try await withServer(worker: Self.tasks()) { server async throws in
                let id = try await server.enqueue([
                    "input": ["body": ["next_cursor": ""]],
                    "stages": [
                        [
                            "task": "http", "name": "page",
                            "args": [
                                "method": "GET",
                                "url": .string("\(target.base)/items?cursor={{input.body.next_cursor}}"),
                            ],
                            "repeat": ["while": "{{output.body.next_cursor}}", "max": 10],
                        ],
                        [
                            "task": "http", "name": "done",
                            "args": [
                                "method": "POST", "url": .string("\(target.base)/done"), "json": "{{stages.page.runs}}",
                            ],
                        ],
                    ],
                ])
                let job = try await Self.finished(server, id)
                #expect(job["state"] == "completed", "\(job)")
                #expect(target.received(path: "/items").map(\.query) == ["cursor=", "cursor=b", "cursor=c"])
                #expect(
                    target.received(path: "/items").map { $0["Idempotency-Key"] }
                        == ["\(id)-0", "\(id)-1", "\(id)-2"])
                let done = try #require(target.received(path: "/done").first)
                #expect(done["Idempotency-Key"] == "\(id)-3")
                // Every page, for the stage after: the last one's number exact.
                #expect(
                    done.json?.arrayValue?.compactMap { $0["body"]?["items"] }
                        == [[1, 2], [3, 4], [.number(JSONNumber("12345678901234567890")!)]])
                #expect(done.body.contains("[12345678901234567890]"))
                #expect(Self.path(job) == [0, 0, 0, 1])
                #expect(job["path"]?.items.map { $0["name"]?.stringValue } == ["page", "page", "page", "done"])
                #expect(job["stages"]?.items.first?["runs"] == 3)
                #expect(job["stages"]?.items.first?["output"]?["body"]?["next_cursor"] == .null)
                #expect(Self.states(job) == ["completed", "completed"])
            }
        }
    }

    /// A lookup that answers 404 goes to the "create" branch; one that answers 200 updates and
    /// finishes early, the create stage skipped.
    @Test func aGotoTakesTheCreateBranchAndAFinishEndsEarly() async throws {
        try await withTargetServer({ request in
            switch (request.method, request.path) {
            case ("GET", "/customers/7"): TargetServer.text("no such customer", status: .notFound)
            case ("GET", "/customers/8"): TargetServer.json(["id": 8, "name": "Ada"])
            case ("PUT", _): TargetServer.json(["updated": true])
            default: TargetServer.json(["created": true], status: .created)
            }
        }) { target async throws in
            try await withServer(worker: Self.tasks()) { server async throws in
                func chain(_ customer: Int) -> JSONValue {
                    [
                        "input": ["id": .number(JSONNumber(customer))],
                        "stages": [
                            [
                                "task": "http", "name": "lookup",
                                "args": [
                                    "method": "GET", "url": .string("\(target.base)/customers/{{input.id}}"),
                                    "expect": ["404": "success"],
                                ],
                                "next": [["if": ["path": "output.status", "equals": 404], "goto": "create"]],
                            ],
                            [
                                "task": "http", "name": "update",
                                "args": [
                                    "method": "PUT", "url": .string("\(target.base)/customers/{{input.body.id}}"),
                                ],
                                "next": [["if": "{{output.body.updated}}", "finish": true]],
                            ],
                            [
                                "task": "http", "name": "create",
                                "args": ["method": "POST", "url": .string("\(target.base)/customers")],
                            ],
                        ],
                    ]
                }
                let missing = try await server.enqueue(chain(7))
                let known = try await server.enqueue(chain(8))

                let created = try await Self.finished(server, missing)
                #expect(created["state"] == "completed", "\(created)")
                #expect(Self.path(created) == [0, 2])
                #expect(Self.states(created) == ["completed", "skipped", "completed"])
                #expect(created["output"]?["body"] == ["created": true])

                let updated = try await Self.finished(server, known)
                #expect(updated["state"] == "completed", "\(updated)")
                #expect(Self.path(updated) == [0, 1])
                #expect(Self.states(updated) == ["completed", "completed", "skipped"])
                #expect(updated["output"]?["body"] == ["updated": true])
                #expect(updated["current_stage"] == 1)

                #expect(target.received.filter { $0.method == "POST" }.count == 1)
                #expect(target.received(path: "/customers/8").map(\.method) == ["GET", "PUT"])
            }
        }
    }

    /// A repeat whose condition still holds after `max` runs fails the stage for good, saying why.
    @Test func reachingTheMaxFailsTheStageForGood() async throws {
        try await withTargetServer({ _ in TargetServer.json(["more": true]) }) { target async throws in
            try await withServer(worker: Self.tasks()) { server async throws in
                let id = try await server.enqueue([
                    "stages": [
                        [
                            "task": "http", "args": ["method": "GET", "url": .string("\(target.base)/poll")],
                            "repeat": ["while": ["path": "output.body.more", "equals": true], "max": 3],
                        ]
                    ]
                ])
                let job = try await Self.finished(server, id)
                #expect(job["state"] == "discarded")
                #expect(target.received(path: "/poll").count == 3)
                let error = try #require(job["stages"]?.items.first?["errors"]?.items.last)
                #expect(error["code"] == "repeat_max")
                #expect(error["error"]?.stringValue?.contains("max of 3 runs") == true, "\(error)")
                #expect(Self.path(job) == [0, 0])
            }
        }
    }

    /// A repeated stage in a lane keeps its place: another job of the lane waits until it is done.
    @Test func aRepeatedStageInALaneKeepsItsPlace() async throws {
        try await withTargetServer({ request in
            let runs = Int(request.query.replacingOccurrences(of: "n=", with: "")) ?? 0
            return TargetServer.json(["n": .number(JSONNumber(runs + 1))])
        }) { target async throws in
            try await withServer(worker: Self.tasks()) { server async throws in
                func job(_ name: String) -> JSONValue {
                    [
                        "input": ["body": ["n": 0]],
                        "stages": [
                            [
                                "task": "http", "lane": "one",
                                "args": ["method": "GET", "url": .string("\(target.base)/\(name)?n={{input.body.n}}")],
                                "repeat": ["while": ["path": "output.body.n", "present": true], "max": 4],
                            ]
                        ],
                    ]
                }
                // max 4 with a condition that always holds: both end discarded after 4 runs each.
                let first = try await server.enqueue(job("a"))
                let second = try await server.enqueue(job("b"))
                _ = try await Self.finished(server, first)
                _ = try await Self.finished(server, second)
                let order = target.received.map(\.path)
                #expect(order == ["/a", "/a", "/a", "/a", "/b", "/b", "/b", "/b"], "\(order)")
            }
        }
    }

    /// What can be known at enqueue is refused then, with the path of the field at fault.
    @Test func badRulesAreRefusedAtEnqueueWithTheirPath() async throws {
        try await withServer(worker: Self.tasks()) { server async throws in
            func refusal(_ stages: JSONValue) async throws -> String? {
                let reply = try await server.call(.POST, "/v1/jobs?unchecked=true", body: ["stages": stages])
                #expect(reply.status == 400, "\(reply.text)")
                return reply["path"]?.stringValue
            }
            #expect(
                try await refusal([["task": "a", "next": [["if": "{{output.x}}", "goto": "nowhere"]]]])
                    == "stages[0].next[0].goto")
            #expect(
                try await refusal([
                    ["task": "a", "name": "first"], ["task": "b", "next": [["if": "{{output}}", "goto": "first"]]],
                ]) == "stages[1].next[0].goto")
            #expect(
                try await refusal([["task": "a", "repeat": ["while": "{{output.more}}"]]])?.hasPrefix(
                    "stages[0].repeat") == true)
            #expect(
                try await refusal([["task": "a", "repeat": ["while": "{{output.more}}", "max": 0]]])
                    == "stages[0].repeat.max")
            #expect(
                try await refusal([["task": "a", "repeat": ["while": "output.more", "max": 2]]])?.hasPrefix(
                    "stages[0].repeat.while") == true)
            #expect(
                try await refusal([["task": "a", "next": [["if": "{{output.x}}", "goto": "b", "finish": true]]]])
                    == "stages[0].next[0]")
            #expect(
                try await refusal([["group": [["task": "a", "repeat": ["while": "{{output.x}}", "max": 2]]]]])
                    == "stages[0].group[0].repeat")
        }
    }
}
