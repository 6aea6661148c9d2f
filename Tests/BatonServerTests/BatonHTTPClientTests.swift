import AsyncHTTPClient
import Baton
import BatonAPI
import BatonHTTPClient
import BatonServerTestSupport
import Foundation
import Testing

/// The public Swift client against a real server and worker: what a Swift service that enqueues
/// over HTTP relies on.
@Suite(.timeLimit(.minutes(3)))
struct BatonHTTPClientTests {
    static func client(_ server: TestServer, token: String? = Token.admin) throws -> BatonHTTPClient {
        try BatonHTTPClient(url: URL(string: server.base)!, token: token)
    }

    @Test func aTypedChainRunsAndItsResultComesBackExactly() async throws {
        try await withServer { server async throws in
            let baton = try Self.client(server)
            let input = Carry.Numbers(
                id: 9_007_199_254_740_993, count: .max, price: Decimal(string: "0.1")!,
                big: try JSONValue(parsing: "123456789012345678901234567890"),
                rest: ["tiny": .number(JSONNumber("1e-400")!), "huge": .number(JSONNumber("1e400")!)])
            let job = try await baton.enqueue(Chain(input: input).then(Carry()), metadata: ["n": .number(UInt64.max)])
            #expect(job.inserted)
            let output = try await job.result()
            #expect(output.id == input.id && output.count == input.count && output.price == input.price)
            #expect(output.big == input.big)
            #expect(output.rest == input.rest)
            let record = try await job.job()
            #expect(record.state == .completed)
            #expect(record.input == (try JSONValue(encoding: input)))
        }
    }

    /// A stage's `repeat` and `next` go over HTTP as the stored chain has them.
    @Test func controlFlowGoesOverTheWireUnchanged() throws {
        let stage = StageSpec.task(
            "page", args: ["n": 1], name: "p", repeat: RepeatRule(while: .truthy("output.next"), max: 7),
            next: [
                FlowRule(if: .equals("output.status", 404), .goto("create")),
                FlowRule(if: .present("output.done", false), .finish),
            ])
        let wire = try JSONValue(encoding: Components.Schemas.StageRequest(stage))
        #expect(wire["repeat"] == stage.json["repeat"])
        #expect(wire["next"] == stage.json["next"])
        #expect(try wire.decode(as: StageSpec.self) == stage)
    }

    @Test func enqueueGetListWaitCancelRetryDelete() async throws {
        try await withServer { server async throws in
            let baton = try Self.client(server)
            let request = Components.Schemas.JobRequest(
                idempotencyKey: "client-1", input: 1, stages: [.TaskStageRequest(.init(task: "add", args: ["n": 2]))])
            let first = try await baton.enqueue(request, wait: .seconds(10))
            #expect(first.inserted)
            #expect(first.job.state == .completed)
            #expect(first.job.output == 3)
            let again = try await baton.enqueue(request)
            #expect(!again.inserted && again.job.id == first.job.id)

            let sleeping = try await baton.enqueue(
                .init(stages: [.TaskStageRequest(.init(task: "sleep", args: ["ms": 60_000]))]))
            let cancelled = try await baton.cancel(sleeping.job.id)
            #expect(cancelled.state == .cancelled)
            #expect(try await baton.waitUntilFinished(sleeping.job.id).state == .cancelled)
            let retried = try await baton.retry(sleeping.job.id)
            #expect(retried.state != .cancelled)
            _ = try await baton.cancel(sleeping.job.id)

            let page = try await baton.jobs(states: [.completed], limit: 10)
            #expect(page.jobs.map(\.id).contains(first.job.id))
            #expect(!page.jobs.map(\.id).contains(sleeping.job.id))
            try await baton.delete(first.job.id)
            let batch = try await baton.enqueue(batch: [
                request, .init(stages: [.TaskStageRequest(.init(task: "noop"))]),
            ])
            #expect(batch.map(\.inserted) == [true, true])
            #expect(try await baton.queues().first { $0.name == "default" } != nil)
            #expect(try await baton.workers().first?.tasks.contains("carry") == true)
            #expect(try await baton.lanes().lanes.isEmpty)
        }
    }

    @Test func refusalsAreTypedProblems() async throws {
        try await withServer { server async throws in
            let baton = try Self.client(server)
            func problem(_ call: () async throws -> Void) async -> BatonProblem? {
                do {
                    try await call()
                } catch BatonHTTPError.refused(let problem) {
                    return problem
                } catch {
                    Issue.record("not a refusal: \(error)")
                }
                return nil
            }
            let unknown = await problem { () in
                _ = try await baton.enqueue(.init(stages: [.TaskStageRequest(.init(task: "no-such-task"))]))
            }
            #expect(unknown?.kind == .unknownTask && unknown?.tasks == ["no-such-task"] && unknown?.status == 422)
            let invalid = await problem { () in
                _ = try await baton.enqueue(.init(stages: [.TaskStageRequest(.init(task: "noop", timeout: "soon"))]))
            }
            #expect(invalid?.kind == .invalidRequest && invalid?.path == "stages[0].timeout")
            let missing = await problem { () in _ = try await baton.job(987_654) }
            #expect(missing?.kind == .notFound && missing?.status == 404)
            let finished = try await baton.enqueue(
                .init(stages: [.TaskStageRequest(.init(task: "noop"))]), wait: .seconds(10))
            let conflict = await problem { () in _ = try await baton.cancel(finished.job.id) }
            #expect(conflict?.kind == .conflict)
            let stranger = try Self.client(server, token: "not-a-token-at-all")
            let unauthorized = await problem { () in _ = try await stranger.queues() }
            #expect(unauthorized?.kind == .unauthorized)
            let reader = try Self.client(server, token: Token.read)
            let forbidden = await problem { () in
                _ = try await reader.cancel(finished.job.id)
            }
            #expect(forbidden?.kind == .forbidden)

            // AsyncHTTPClient retries connecting until the request's deadline unless told not to.
            var configuration = HTTPClient.Configuration()
            configuration.connectionPool.retryConnectionEstablishment = false
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            let nowhere = try BatonHTTPClient(url: URL(string: "http://127.0.0.1:1")!, token: nil, httpClient: http)
            await #expect {
                _ = try await nowhere.queues()
            } throws: { error in
                if case BatonHTTPError.unreachable = error { true } else { false }
            }
            try await http.shutdown()
            #expect(throws: BatonHTTPError.self) { try BatonHTTPClient(url: URL(string: "ftp://x")!, token: nil) }
        }
    }

    /// A chain that fails says so with Baton's own error, as `JobHandle.result()` does.
    @Test func aFailedChainThrowsJobFailed() async throws {
        try await withServer { server async throws in
            let baton = try Self.client(server)
            let job = try await baton.enqueue(
                Chain(input: 1).then(FailFirst(key: "client-\(UUID())"), retry: .none))
            await #expect {
                _ = try await job.result()
            } throws: { error in
                guard case BatonError.jobFailed(_, .discarded, let message?) = error else { return false }
                return message.message.contains("first run")
            }
        }
    }
}
