import Baton
import BatonAPI
import BatonPostgres
import Foundation

extension API {
    /// `GET /v1/queues`: counts per state, the oldest available job's age, paused or not.
    func listQueues(_ input: Operations.ListQueues.Input) async throws -> Operations.ListQueues.Output {
        let now = Date()
        let queues = try await store.queues().map { Components.Schemas.Queue($0, now: now) }
        return .ok(.init(body: .json(.init(queues: queues))))
    }

    /// `POST /v1/queues/{name}/pause`: workers stop claiming from the queue; running stages finish.
    func pauseQueue(_ input: Operations.PauseQueue.Input) async throws -> Operations.PauseQueue.Output {
        let name = try Self.queueName(input.path.name)
        guard try await store.setPaused(true, queue: name, unchecked: input.query.unchecked == true) else {
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
        try await store.setPaused(false, queue: name)
        RequestScope.logger.notice("queue resumed", metadata: ["queue": .string(name)])
        return .ok(.init(body: .json(.init(name: name, paused: false))))
    }

    /// `GET /v1/lanes`: each lane's head (the job holding it, and why it is stuck if it is retrying)
    /// and how many jobs wait behind it; by lane name, `limit` at a time.
    func listLanes(_ input: Operations.ListLanes.Input) async throws -> Operations.ListLanes.Output {
        let limit = try Self.limit(input.query.limit, default: 100)
        var after: String?
        if let key = try Cursor.decode(input.query.cursor) {
            guard key.hasPrefix("lane:") else {
                throw Problem.invalid("cursor", "cursor is not one this server handed out")
            }
            after = String(key.dropFirst(5))
        }
        let lanes = try await store.lanes(after: after, limit: limit + 1, blocked: input.query.blocked ?? false)
        let page = lanes.prefix(limit)
        let next = lanes.count > limit ? Cursor.encode("lane:" + page.last!.lane) : nil
        return .ok(.init(body: .json(.init(lanes: page.map(Components.Schemas.Lane.init), nextCursor: next))))
    }

    /// `GET /v1/workers`: registered workers with their heartbeats and the jobs they run.
    func listWorkers(_ input: Operations.ListWorkers.Input) async throws -> Operations.ListWorkers.Output {
        .ok(.init(body: .json(.init(workers: try await store.workers().map(Components.Schemas.Worker.init)))))
    }
}
