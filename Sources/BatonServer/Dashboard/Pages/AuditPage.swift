import BatonAPI
import Foundation
import Hummingbird

/// `/ui/audit`: the audit trail, newest first (an admin token limited to no queue), filtered by
/// actor, action or target, 100 at a time.
extension Dashboard {
    struct AuditView: Sendable {
        struct Row: Sendable {
            var at: String
            var when: String
            var actor: String
            var action: String
            var target: String
            /// The job a `job:ID` target names.
            var link: String?
            var details: String
            var requestID: String
        }

        var rows: [Row]
        var actor: String
        var action: String
        var target: String
        var older: String?
    }

    func audit(_ request: Request) async throws -> Response {
        let session = try await session(request, section: .audit)
        func text(_ name: String) -> String? { Self.parameter(name, of: request) }
        let listed = try await asCaller(session, ["listAuditEvents"]) {
            try await api.listAuditEvents(
                .init(
                    query: .init(
                        actor: text("actor"), action: text("action"), target: text("target"), limit: 100,
                        cursor: text("cursor")))
            ).ok.body.json
        }
        let now = Date()
        let filters = Self.filters(["actor", "action", "target"], of: request).percentEncodedQuery ?? ""
        let older = listed.nextCursor.map {
            "/ui/audit?" + (filters.isEmpty ? "" : filters + "&") + "cursor=" + Self.query($0)
        }
        let view = AuditView(
            rows: listed.events.map { event in
                AuditView.Row(
                    at: DashboardText.time(event.at), when: DashboardText.relative(event.at, now: now),
                    actor: event.actor, action: event.action, target: event.target,
                    link: event.target.hasPrefix("job:") ? "/ui/jobs/" + event.target.dropFirst(4) : nil,
                    details: event.details.jsonText, requestID: event.requestId ?? "")
            }, actor: text("actor") ?? "", action: text("action") ?? "", target: text("target") ?? "", older: older)
        return page("audit", title: "Audit", section: .audit, session: session, view)
    }
}
