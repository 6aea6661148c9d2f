import ArgumentParser
import Baton
import BatonAPI
import BatonHTTPClient
import Foundation

struct Lanes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Lanes: the jobs holding each, its width, how many wait; set how wide a lane is.",
        discussion: """
            A lane runs its stages in order, as many at once as its width (1 unless set: strictly one
            at a time). A lane is blocked when a holder failed and waits to retry: it keeps its place,
            so in a lane of width 1 nothing behind it moves until it succeeds, is discarded or is
            cancelled (baton jobs cancel ID lets the lane move on).
            """,
        subcommands: [List.self, SetWidth.self, Unset.self, SettingList.self], defaultSubcommand: List.self)

    struct List: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Lanes with jobs: the head, how many hold the lane of how many may, how many wait.")

        @Flag(help: "Only blocked lanes: a holder failed and waits to retry.")
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
                    .init(title: "LANE", minimumWidth: 8), .init(title: "HELD", alignRight: true),
                    .init(title: "HEAD", alignRight: true), .init(title: "STATE", color: Console.color(ofState:)),
                    .init(title: "STAGE", minimumWidth: 6), .init(title: "ATT", alignRight: true),
                    .init(title: "WAITING", alignRight: true), .init(title: "NEXT", alignRight: true),
                    .init(title: "LAST ERROR", minimumWidth: 4),
                ], shrinkOrder: [8, 4, 0])
            let now = Date()
            for lane in lanes {
                let held = "\(lane.held)/\(lane.width)"
                guard let head = lane.head else {
                    table.append([lane.lane, held, "-", "-", "", "", "\(lane.waiting)", "", ""])
                    continue
                }
                let waits = head.state == .retryable || head.state == .scheduled
                let next = waits ? (head.runAt > now ? Text.age(head.runAt, now: now) : "due") : ""
                table.append([
                    lane.lane, held, "\(head.id)", head.state.rawValue,
                    "\(head.stage + 1)" + (head.task.map { " \($0)" } ?? ""), "\(head.attempts)", "\(lane.waiting)",
                    next, head.lastError ?? "",
                ])
            }
            console.out(table.render(on: console))
        }
    }

    struct SetWidth: AdminCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Set how many stages of a lane run at once; takes effect now, jobs in flight included.",
            discussion: """
                LANE is a lane, or a prefix ending in * that sets every lane it starts (quote it:
                'customer-*'). A lane's own setting wins, then the longest prefix. A wider lane admits
                its waiting stages at once, in order; a narrower one lets its holders finish first.
                """)

        @Argument(help: "The lane, or a prefix ending in *.")
        var lane: String

        @Option(help: "How many of its stages may be available, running or retrying at once (1 to 10000).")
        var width: Int

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            let setting = try await admin.client().call { baton in try await baton.setLaneWidth(width, lane: lane) }
            if admin.json { return try admin.console.json(setting) }
            admin.console.out("lane \(Text.printable(setting.lane)): width \(setting.width)")
        }
    }

    struct Unset: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a lane's setting: it takes its prefix's width, or 1.")

        @Argument(help: "The lane, or a prefix ending in *, as it was set.")
        var lane: String

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            try await admin.client().call { baton in try await baton.deleteLaneSetting(lane) }
            if !admin.json { admin.console.out("lane \(Text.printable(lane)): setting deleted") }
        }
    }

    struct SettingList: AdminCommand {
        static let configuration = CommandConfiguration(
            commandName: "settings",
            abstract: "The lane widths set, by lane or prefix, and who set them (api or the settings file).")

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            let settings = try await admin.client().call { baton in try await baton.laneSettings() }
            let console = admin.console
            if admin.json { return try console.json(Components.Schemas.LaneSettingList(settings: settings)) }
            guard !settings.isEmpty else { return console.err("no lane settings: every lane has width 1") }
            var table = Table(
                [
                    .init(title: "LANE", minimumWidth: 8), .init(title: "WIDTH", alignRight: true),
                    .init(title: "FROM"), .init(title: "SET", alignRight: true),
                ], shrinkOrder: [0])
            let now = Date()
            for setting in settings {
                table.append([
                    setting.lane, "\(setting.width)", setting.source.rawValue, Text.age(setting.updatedAt, now: now),
                ])
            }
            console.out(table.render(on: console))
        }
    }
}
