import BatonAPI
import Foundation
import Hummingbird

/// `/ui/lanes`: blocked lanes first (their head failed and waits to retry: why, since when, until
/// when), then every lane by name, a hundred at a time; each with its head job, how many hold it of
/// how many may, and how many wait behind. Below, the widths set; admins set and delete them.
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
            /// "2 of 3": how many hold the lane, of its width.
            var held: String
        }

        struct Setting: Sendable {
            var lane: String
            var width: Int
            var fromSettings: Bool
        }

        struct Limit: Sendable {
            var key: String
            /// "10 per 1s"
            var rate: String
            var burst: Int
            var tokens: String
            var fromSettings: Bool
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
        var settings: [Setting]
        var limits: [Limit]
    }

    static let lanesPerPage = 100

    func lanes(_ request: Request) async throws -> Response {
        let session = try await session(request, section: .lanes)
        let cursor = request.uri.queryParameters["cursor"].map(String.init)
        // The five reads at once.
        let (blocked, listed, counts, settings, limits) = try await asCaller(
            session, ["listLanes", "listLaneSettings", "listRateLimits"]
        ) {
            async let blocked =
                cursor == nil
                ? api.listLanes(.init(query: .init(blocked: true, limit: Self.lanesPerPage))).ok.body.json.lanes : []
            async let listed = api.listLanes(.init(query: .init(limit: Self.lanesPerPage, cursor: cursor))).ok.body.json
            async let counts = api.store.laneCounts()
            async let settings = api.listLaneSettings(.init()).ok.body.json.settings
            async let limits = api.listRateLimits(.init()).ok.body.json.rateLimits
            return try await (blocked, listed, counts, settings, limits)
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
                waitingLink: lane.waiting > 0 ? "/ui/jobs?lane=" + Self.query(lane.lane) + "&state=waiting" : nil,
                held: "\(lane.held) of \(lane.width)")
        }
        return page(
            "lanes", title: "Lanes", section: .lanes, session: session, notice: Self.notice(request),
            Lanes(
                rows: rows, total: counts.lanes, blocked: counts.blocked,
                moreBlocked: cursor == nil && counts.blocked > blocked.count ? counts.blocked - blocked.count : nil,
                nextPage: listed.nextCursor.map { "/ui/lanes?cursor=" + Self.query($0) },
                firstPage: cursor == nil ? nil : "/ui/lanes",
                settings: settings.map {
                    Lanes.Setting(lane: $0.lane, width: $0.width, fromSettings: $0.source == .settings)
                },
                limits: limits.map {
                    Lanes.Limit(
                        key: $0.key, rate: "\($0.rate) per \($0.per)", burst: $0.burst,
                        tokens: String(format: "%.1f", $0.tokens), fromSettings: $0.source == .settings)
                }))
    }

    /// `POST /ui/lanes/width` (fields `lane`, `width`), `/ui/lanes/unset` (`lane`), `/ui/lanes/rate`
    /// (`key`, `rate`, `per`, `burst`) or `/ui/lanes/unrate` (`key`), then back to the lanes; a
    /// refusal (a width out of range, a setting of the settings file) is the API's.
    func actOnLanes(_ request: Request, action: String) async throws -> Response {
        let session = try await session(request, section: .lanes)
        let form = try await postedForm(request, session: session)
        let lane = form["lane"] ?? form["key"] ?? ""
        let operations = [
            "width": "setLaneSetting", "unset": "deleteLaneSetting", "rate": "setRateLimit",
            "unrate": "deleteRateLimit",
        ]
        try await asCaller(session, operations[action].map { [$0] } ?? []) {
            switch action {
            case "width":
                guard let width = form["width"].flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }) else {
                    throw DashboardError.refused(.badRequest, "A lane's width is a whole number, from 1 to 10000.")
                }
                _ = try await api.setLaneSetting(.init(path: .init(lane: lane), body: .json(.init(width: width)))).ok
            case "unset": _ = try await api.deleteLaneSetting(.init(path: .init(lane: lane))).noContent
            case "rate":
                guard let rate = form["rate"].flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }) else {
                    throw DashboardError.refused(.badRequest, "A rate is a whole number, from 1 to 1000000.")
                }
                let burst = form["burst"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
                let request = Components.Schemas.RateLimitRequest(rate: rate, per: form["per"] ?? "", burst: burst)
                _ = try await api.setRateLimit(.init(path: .init(key: lane), body: .json(request))).ok
            case "unrate": _ = try await api.deleteRateLimit(.init(path: .init(key: lane))).noContent
            default: throw DashboardError.refused(.notFound, "There is no such action.")
            }
        }
        return Self.redirect("/ui/lanes?done=lane-\(action)&what=" + Self.query(lane))
    }
}
