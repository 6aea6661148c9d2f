import BatonAPI
import Foundation
import Hummingbird

/// `/ui/lanes`: blocked lanes first (their head failed and waits to retry: why, since when, until
/// when), then the rest by name; each with its head job and how many wait behind it.
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
        var blocked: Int
    }

    func lanes(_ request: Request) async throws -> Response {
        let session = try session(request, roles: Section.lanes.roles)
        let lanes = try await asCaller(session) { try await allLanes() }
        let now = Date()
        let rows = lanes.sorted { ($0.blocked ? 0 : 1, $0.lane) < ($1.blocked ? 0 : 1, $1.lane) }.map { lane in
            Lanes.Row(
                lane: lane.lane, link: "/ui/jobs?lane=" + Self.query(lane.lane), blocked: lane.blocked,
                head: lane.head.map { "\($0.id)" }, headLink: lane.head.map { "/ui/jobs/\($0.id)" },
                headState: lane.head?.state.rawValue, task: lane.head?.task, attempts: lane.head?.attempts,
                next: lane.blocked ? lane.head.map { DashboardText.relative($0.runAt, now: now) } : nil,
                lastError: lane.head?.lastError.map { Self.firstLine($0) }, waiting: lane.waiting)
        }
        return page(
            "lanes", title: "Lanes", section: .lanes, session: session,
            Lanes(rows: rows, blocked: lanes.filter(\.blocked).count))
    }
}
