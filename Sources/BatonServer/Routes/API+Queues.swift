import Baton
import BatonAPI
import BatonPostgres
import Foundation
import Hummingbird

extension API {
    var queueRoutes: [Route] {
        [
            Route(method: .get, path: "/v1/queues", access: .readers, handler: queues),
            Route(method: .post, path: "/v1/queues/{name}/pause", access: .admin, handler: pause),
            Route(method: .post, path: "/v1/queues/{name}/resume", access: .admin, handler: resume),
        ]
    }

    /// `GET /v1/queues`: counts per state, the oldest available job's age, paused or not.
    @Sendable func queues(_ request: Request, context: BatonRequestContext, caller: Caller?) async throws -> Response {
        let now = Date()
        return JSONBody.response(QueueList(queues: try await store.queues().map { QueueView($0, now: now) }))
    }

    /// `POST /v1/queues/{name}/pause`: workers stop claiming from the queue; running stages finish.
    @Sendable func pause(_ request: Request, context: BatonRequestContext, caller: Caller?) async throws -> Response {
        let name = try Self.queueName(context)
        try await store.setPaused(true, queue: name)
        context.logger.notice("queue paused", metadata: ["queue": .string(name)])
        return JSONBody.response(QueuePauseState(name: name, paused: true))
    }

    /// `POST /v1/queues/{name}/resume`: workers claim from the queue again, woken at once.
    @Sendable func resume(_ request: Request, context: BatonRequestContext, caller: Caller?) async throws -> Response {
        let name = try Self.queueName(context)
        try await store.setPaused(false, queue: name)
        context.logger.notice("queue resumed", metadata: ["queue": .string(name)])
        return JSONBody.response(QueuePauseState(name: name, paused: false))
    }

    /// `GET /v1/lanes`: each lane's head (the job holding it, and why it is stuck if it is retrying)
    /// and how many jobs wait behind it; by lane name, `limit` at a time.
    @Sendable func lanes(_ request: Request, context: BatonRequestContext, caller: Caller?) async throws -> Response {
        let query = Query(request)
        let limit = try query.int("limit", default: 100, range: 1...1000)
        var after: String?
        if let key = try Cursor.decode(try query.string("cursor")) {
            guard key.hasPrefix("lane:") else {
                throw Problem.invalid("cursor", "cursor is not one this server handed out")
            }
            after = String(key.dropFirst(5))
        }
        let lanes = try await store.lanes(after: after, limit: limit + 1)
        let page = lanes.prefix(limit)
        let next = lanes.count > limit ? Cursor.encode("lane:" + page.last!.lane) : nil
        return JSONBody.response(LanePage(lanes: page.map(LaneView.init), nextCursor: next))
    }

    /// `GET /v1/workers`: registered workers with their heartbeats and the jobs they run.
    @Sendable func workers(_ request: Request, context: BatonRequestContext, caller: Caller?) async throws -> Response {
        JSONBody.response(WorkerList(workers: try await store.workers().map(WorkerView.init)))
    }
}
