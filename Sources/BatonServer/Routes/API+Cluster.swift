import Baton
import BatonAPI
import BatonPostgres
import Foundation

extension API {
    /// `GET /v1/queues`: jobs per state now, as `GET /v1/jobs` lists them, completions over the last
    /// day (from the per-minute history: no completed row is counted, however many are kept), the
    /// oldest available job's age, paused or not.
    func listQueues(_ input: Operations.ListQueues.Input) async throws -> Operations.ListQueues.Output {
        let now = Date()
        let summaries = try await store.queueSummaries(finishedSince: now.addingTimeInterval(-86400))
        let queues = summaries.filter { Caller.current?.serves($0.name) ?? true }.map {
            Components.Schemas.Queue($0, now: now)
        }
        return .ok(.init(body: .json(.init(queues: queues))))
    }

    /// `POST /v1/queues/{name}/pause`: workers stop claiming from the queue; running stages finish.
    func pauseQueue(_ input: Operations.PauseQueue.Input) async throws -> Operations.PauseQueue.Output {
        let name = try Self.queueName(input.path.name)
        try checkQueue(name, path: "name")
        guard try await store.setPaused(true, queue: name, unchecked: input.query.unchecked == true, by: actor) else {
            throw Problem(
                .notFound, type: "unknown-queue", title: "Unknown queue",
                detail: "no job is in queue \"\(name)\" and no worker serves it, so nothing was paused",
                path: "name")
        }
        RequestScope.logger.notice("queue paused", metadata: ["queue": .string(name)])
        return .ok(.init(body: .json(.init(name: name, paused: true))))
    }

    /// `POST /v1/queues/{name}/resume`: workers claim from the queue again, woken at once.
    func resumeQueue(_ input: Operations.ResumeQueue.Input) async throws -> Operations.ResumeQueue.Output {
        let name = try Self.queueName(input.path.name)
        try checkQueue(name, path: "name")
        try await store.setPaused(false, queue: name, by: actor)
        RequestScope.logger.notice("queue resumed", metadata: ["queue": .string(name)])
        return .ok(.init(body: .json(.init(name: name, paused: false))))
    }

    /// `PUT /v1/queues/{name}/fair-key`: the queue's jobs that name no fairness key take the one
    /// their metadata or input holds at `from`.
    func setFairKeySource(_ input: Operations.SetFairKeySource.Input) async throws
        -> Operations.SetFairKeySource.Output
    {
        let name = try Self.queueName(input.path.name)
        try checkQueue(name, path: "name")
        guard case .json(let body) = input.body else { throw Problem.invalid("", "the body must be JSON") }
        let from = try FairKeySource(parsing: body.from)
        try await store.setFairKeySource(from, queue: name, by: actor)
        RequestScope.logger.notice("fairness keys derived", metadata: ["queue": .string(name), "from": "\(from)"])
        return .ok(.init(body: .json(.init(name: name, from: from.path))))
    }

    /// `DELETE /v1/queues/{name}/fair-key`: its jobs name their own fairness key again.
    func clearFairKeySource(_ input: Operations.ClearFairKeySource.Input) async throws
        -> Operations.ClearFairKeySource.Output
    {
        let name = try Self.queueName(input.path.name)
        try checkQueue(name, path: "name")
        try await store.setFairKeySource(nil, queue: name, by: actor)
        return .ok(.init(body: .json(.init(name: name))))
    }

    /// `GET /v1/workers`: registered workers with their heartbeats and the jobs they run.
    func listWorkers(_ input: Operations.ListWorkers.Input) async throws -> Operations.ListWorkers.Output {
        .ok(.init(body: .json(.init(workers: try await store.workers().map(Components.Schemas.Worker.init)))))
    }
}
