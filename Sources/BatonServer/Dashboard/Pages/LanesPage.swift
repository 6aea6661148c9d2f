import BatonAPI
import Foundation
import Hummingbird

/// `/ui/lanes`: blocked lanes first (their head failed and waits to retry: why, since when, until
/// when), then every lane by name, a hundred at a time; each with its head job and how many wait
/// behind it.
extension Dashboard {
    struct Lanes: Sendable {
        struct Row: Sendable {
            var lane: String
            var link: String
            var blocked: Bool
            var head: String?
            var headLink: String?
            var headState: String?
            var task: String?
            var attempts: Int?
            var next: String?
            var lastError: String?
            var waiting: Int
        }

        var rows: [Row]
        var total: Int
        var blocked: Int
        /// Shown on the first page only, where the blocked lanes are listed first.
        var moreBlocked: Int?
        var next: String?
        var first: String?
    }

    static let lanesPerPage = 100

    func lanes(_ request: Request) async throws -> Response {
        let session = try session(request, roles: Section.lanes.roles)
        let cursor = request.uri.queryParameters["cursor"].map(String.init)
        let (blocked, listed, counts) = try await asCaller(session) {
            (
                cursor == nil
                    ? try await api.listLanes(.init(query: .init(blocked: true, limit: Self.lanesPerPage))).ok.body.json
                        .lanes : [],
                try await api.listLanes(.init(query: .init(limit: Self.lanesPerPage, cursor: cursor))).ok.body.json,
                try await api.store.laneCounts()
            )
        }
        let now = Date()
        // The blocked ones were listed first on the first page; by name they are not repeated.
        let rows = (blocked + listed.lanes.filter { !$0.blocked }).map { lane in
            Lanes.Row(
                lane: lane.lane, link: "/ui/jobs?lane=" + Self.query(lane.lane), blocked: lane.blocked,
                head: lane.head.map { "\($0.id)" }, headLink: lane.head.map { "/ui/jobs/\($0.id)" },
                headState: lane.head?.state.rawValue, task: lane.head?.task, attempts: lane.head?.attempts,
                next: lane.blocked ? lane.head.map { DashboardText.relative($0.runAt, now: now) } : nil,
                lastError: lane.head?.lastError.map { Self.firstLine($0) }, waiting: lane.waiting)
        }
        return page(
            "lanes", title: "Lanes", section: .lanes, session: session,
            Lanes(
                rows: rows, total: counts.lanes, blocked: counts.blocked,
                moreBlocked: cursor == nil && counts.blocked > blocked.count ? counts.blocked - blocked.count : nil,
                next: listed.nextCursor.map { "/ui/lanes?cursor=" + Self.query($0) },
                first: cursor == nil ? nil : "/ui/lanes"))
    }
}
