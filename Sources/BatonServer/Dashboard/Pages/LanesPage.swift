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
            /// The jobs waiting in the lane (found through `jobs_lane_waiting`), if any.
            var waitingLink: String?
        }

        var rows: [Row]
        var total: Int
        var blocked: Int
        /// Shown on the first page only, where the blocked lanes are listed first.
        var moreBlocked: Int?
        /// The next and first pages (not `next`: a lane's row has its next attempt, and a row without
        /// one would show the page's link instead).
        var nextPage: String?
        var firstPage: String?
    }

    static let lanesPerPage = 100

    func lanes(_ request: Request) async throws -> Response {
        let session = try session(request, roles: Section.lanes.roles)
        let cursor = request.uri.queryParameters["cursor"].map(String.init)
        // The three reads at once.
        let (blocked, listed, counts) = try await asCaller(session) {
            async let blocked =
                cursor == nil
                ? api.listLanes(.init(query: .init(blocked: true, limit: Self.lanesPerPage))).ok.body.json.lanes : []
            async let listed = api.listLanes(.init(query: .init(limit: Self.lanesPerPage, cursor: cursor))).ok.body.json
            async let counts = api.store.laneCounts()
            return try await (blocked, listed, counts)
        }
        let now = Date()
        // The blocked ones were listed first on the first page; by name they are not repeated.
        let rows = (blocked + listed.lanes.filter { !$0.blocked }).map { lane in
            Lanes.Row(
                lane: lane.lane, link: "/ui/jobs?lane=" + Self.query(lane.lane), blocked: lane.blocked,
                head: lane.head.map { "\($0.id)" }, headLink: lane.head.map { "/ui/jobs/\($0.id)" },
                headState: lane.head?.state.rawValue, task: lane.head?.task, attempts: lane.head?.attempts,
                next: lane.blocked ? lane.head.map { DashboardText.relative($0.runAt, now: now) } : nil,
                lastError: lane.head?.lastError.map { Self.firstLine($0) }, waiting: lane.waiting,
                waitingLink: lane.waiting > 0 ? "/ui/jobs?lane=" + Self.query(lane.lane) + "&state=waiting" : nil)
        }
        return page(
            "lanes", title: "Lanes", section: .lanes, session: session,
            Lanes(
                rows: rows, total: counts.lanes, blocked: counts.blocked,
                moreBlocked: cursor == nil && counts.blocked > blocked.count ? counts.blocked - blocked.count : nil,
                nextPage: listed.nextCursor.map { "/ui/lanes?cursor=" + Self.query($0) },
                firstPage: cursor == nil ? nil : "/ui/lanes"))
    }
}
