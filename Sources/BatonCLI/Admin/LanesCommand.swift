import ArgumentParser
import Baton
import BatonAPI
import BatonHTTPClient
import Foundation

struct Lanes: AdminCommand {
    static let configuration = CommandConfiguration(
        abstract: "Lanes: the job holding each, its state, and how many wait behind it.",
        discussion: """
            A lane is blocked when its holder failed and waits to retry: nothing behind it moves until
            it succeeds, is discarded (baton jobs cancel ID lets the lane move on) or is cancelled.
            """)

    @Flag(help: "Only blocked lanes: their holder failed and waits to retry.")
    var blocked = false

    @OptionGroup var local: AdminOptions
    @ParentCommand var root: BatonCommand

    func run() async throws {
        let client = try admin.client()
        var lanes: [LaneView] = []
        var cursor: String?
        repeat {
            let page = try await client.call { [cursor] baton in
                try await baton.lanes(blocked: blocked, limit: 1000, cursor: cursor)
            }
            lanes += page.lanes
            cursor = page.nextCursor
        } while cursor != nil
        let console = admin.console
        if admin.json { return try console.json(Components.Schemas.LanePage(lanes: lanes)) }
        guard !lanes.isEmpty else { return console.err(blocked ? "no blocked lanes" : "no lanes hold jobs") }
        var table = Table(
            [
                .init(title: "LANE", minimumWidth: 8), .init(title: "HOLDER", alignRight: true),
                .init(title: "STATE", color: Console.color(ofState:)), .init(title: "STAGE", minimumWidth: 5),
                .init(title: "ATT", alignRight: true), .init(title: "WAITING", alignRight: true),
                .init(title: "NEXT", alignRight: true), .init(title: "LAST ERROR", minimumWidth: 10),
            ], shrinkOrder: [7, 3, 0])
        let now = Date()
        for lane in lanes {
            guard let head = lane.head else {
                table.append([lane.lane, "-", "-", "", "", "\(lane.waiting)", "", ""])
                continue
            }
            let waits = head.state == .retryable || head.state == .scheduled
            let next = waits ? (head.runAt > now ? Text.age(head.runAt, now: now) : "due") : ""
            table.append([
                lane.lane, "\(head.id)", head.state.rawValue, "\(head.stage + 1)" + (head.task.map { " \($0)" } ?? ""),
                "\(head.attempts)", "\(lane.waiting)", next, head.lastError ?? "",
            ])
        }
        console.out(table.render(on: console))
    }
}
