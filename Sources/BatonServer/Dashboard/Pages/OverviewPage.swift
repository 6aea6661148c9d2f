import BatonAPI
import Foundation
import Hummingbird

/// `/ui`: every queue with its jobs per state, paused or not and its oldest available job's age;
/// live workers and blocked lanes. Admins pause and resume queues here.
extension Dashboard {
    struct Overview: Sendable {
        struct Queue: Sendable {
            struct Count: Sendable {
                var state: String
                var count: Int
                var link: String
            }

            var name: String
            var link: String
            var paused: Bool
            var counts: [Count]
            var oldest: String?
            var action: String
        }

        var queues: [Queue]
        var states: [String]
        var workers: Int
        var lanes: Int
        var blockedLanes: Int
        var hasBlocked: Bool
    }

    /// The states in the order a queue's counts are shown.
    static let shownStates = [
        "available", "running", "scheduled", "retryable", "waiting", "completed", "discarded", "cancelled",
    ]

    func overview(_ request: Request) async throws -> Response {
        let session = try session(request, roles: Section.overview.roles)
        let now = Date()
        let (queues, workers, lanes) = try await asCaller(session) {
            (
                try await api.listQueues(.init()).ok.body.json.queues,
                try await api.listWorkers(.init()).ok.body.json.workers,
                try await allLanes()
            )
        }
        let overview = Overview(
            queues: queues.map { queue in
                let name = Self.query(queue.name)
                return Overview.Queue(
                    name: queue.name, link: "/ui/jobs?queue=\(name)", paused: queue.paused,
                    counts: Self.shownStates.map { state in
                        Overview.Queue.Count(
                            state: state, count: queue.counts[state], link: "/ui/jobs?queue=\(name)&state=\(state)")
                    },
                    oldest: queue.oldestAvailableAt.map { DashboardText.relative($0, now: now) },
                    action: "/ui/queues/\(Self.path(queue.name))/\(queue.paused ? "resume" : "pause")")
            }, states: Self.shownStates, workers: workers.count, lanes: lanes.count,
            blockedLanes: lanes.filter(\.blocked).count, hasBlocked: lanes.contains(where: \.blocked))
        return page(
            "overview", title: "Overview", section: .overview, session: session, notice: Self.notice(request),
            overview)
    }

    /// `POST /ui/queues/NAME/pause` or `/resume`, then back to the overview.
    func actOnQueue(_ request: Request, name: String, action: String) async throws -> Response {
        let session = try session(request, roles: [.admin])
        _ = try await postedForm(request, session: session)
        try await asCaller(session) {
            switch action {
            case "pause": _ = try await api.pauseQueue(.init(path: .init(name: name))).ok
            case "resume": _ = try await api.resumeQueue(.init(path: .init(name: name))).ok
            default: throw DashboardError.refused(.notFound, "There is no such action.")
            }
        }
        return Self.redirect("/ui?done=\(action)&what=" + Self.query(name))
    }

    /// Every lane, page by page (the API hands out 1,000 at most at a time).
    func allLanes() async throws -> [Components.Schemas.Lane] {
        var lanes: [Components.Schemas.Lane] = []
        var cursor: String?
        repeat {
            let page = try await api.listLanes(.init(query: .init(limit: 1000, cursor: cursor))).ok.body.json
            lanes += page.lanes
            cursor = page.nextCursor
        } while cursor != nil && lanes.count < 10_000
        return lanes
    }

    /// `text` for a query string.
    static func query(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))
            ?? ""
    }

    /// `text` for one path segment.
    static func path(_ text: String) -> String { query(text) }

    /// The line shown once after an action: `?done=ACTION&what=NAME` (only these sentences, so a
    /// link cannot make the dashboard say anything else).
    static func notice(_ request: Request) -> String? {
        let what = String(request.uri.queryParameters["what"].map(String.init)?.prefix(200) ?? "")
        switch request.uri.queryParameters["done"] {
        case "pause": return "Queue \(what) paused: workers claim nothing from it until it is resumed."
        case "resume": return "Queue \(what) resumed."
        case "cancel": return "Job \(what) cancelled."
        case "retry": return "Job \(what) retried: it starts again at the stage it stopped on."
        case "delete": return "Job \(what) deleted."
        case "cancel-many", "retry-many", "delete-many":
            let done = Int(what) ?? 0
            let skipped = request.uri.queryParameters["skipped"].flatMap { Int($0) } ?? 0
            let verb =
                ["cancel-many": "cancelled", "retry-many": "retried", "delete-many": "deleted"][
                    request.uri.queryParameters["done"].map(String.init) ?? ""] ?? ""
            return "\(done) \(done == 1 ? "job" : "jobs") \(verb)"
                + (skipped > 0 ? "; \(skipped) could not be (their state does not allow it)." : ".")
        default: return nil
        }
    }
}

extension Components.Schemas.StateCounts {
    subscript(state: String) -> Int {
        switch state {
        case "scheduled": scheduled
        case "available": available
        case "running": running
        case "retryable": retryable
        case "waiting": waiting
        case "completed": completed
        case "discarded": discarded
        default: cancelled
        }
    }
}
