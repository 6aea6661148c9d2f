import ArgumentParser
import Baton
import BatonAPI
import BatonHTTPClient
import Foundation

struct Audit: AdminCommand {
    static let configuration = CommandConfiguration(
        abstract: "Who changed what: the audit trail of the API, the CLI and the dashboard, newest first.",
        discussion: """
            Every cancel, retry, delete, bulk operation, queue pause, schedule change, signal, lane and \
            rate setting, with the name of the token that made it and the request's id. Needs an \
            admin token.
            """)

    @Option(help: "Changes made with this token (its name).")
    var actor: String?

    @Option(help: "Changes by this operation (cancelJob, bulkJobs, pauseQueue, putSchedule…).")
    var action: String?

    @Option(help: "Changes to this: job:42, jobs (bulk), queue:NAME, schedule:NAME, lane:NAME, rate-limit:KEY.")
    var target: String?

    @Option(help: "Show at most this many (default 50).")
    var limit: Int = 50

    @OptionGroup var local: AdminOptions
    @ParentCommand var root: BatonCommand

    func validate() throws {
        guard limit >= 1 else { throw ValidationError("--limit must be at least 1") }
    }

    func run() async throws {
        let client = try admin.client()
        var events: [Components.Schemas.AuditEvent] = []
        var cursor: String?
        repeat {
            let page = try await client.call { [cursor, events] baton in
                try await baton.auditEvents(
                    actor: actor, action: action, target: target, limit: min(1000, limit - events.count),
                    cursor: cursor)
            }
            events += page.events
            cursor = page.nextCursor
        } while cursor != nil && events.count < limit
        let console = admin.console
        if admin.json { return try console.json(Components.Schemas.AuditPage(events: events, nextCursor: cursor)) }
        guard !events.isEmpty else { return console.err("no changes recorded") }
        var table = Table(
            [
                .init(title: "AT", minimumWidth: 19), .init(title: "ACTOR", minimumWidth: 6),
                .init(title: "ACTION", minimumWidth: 8), .init(title: "TARGET", minimumWidth: 8),
                .init(title: "DETAILS", minimumWidth: 8), .init(title: "REQUEST", minimumWidth: 8),
            ], shrinkOrder: [5, 4, 3])
        for event in events {
            table.append([
                Text.time(event.at), event.actor, event.action, event.target, Text.preview(event.details, limit: 120),
                event.requestId ?? "",
            ])
        }
        console.out(table.render(on: console))
        if cursor != nil { console.err("more changes are recorded: --limit N to see them") }
    }
}
