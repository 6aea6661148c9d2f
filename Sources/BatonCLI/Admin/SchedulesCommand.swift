import ArgumentParser
import Baton
import BatonAPI
import BatonHTTPClient
import Foundation

struct Schedules: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Schedules: their next runs and last job; pause, resume, run one now.",
        discussion: """
            Schedules are defined in the settings file (`schedules:`) or over the API
            (PUT /v1/schedules/NAME); each slot enqueues one job across the cluster.
            """,
        subcommands: [List.self, Show.self, Pause.self, Resume.self, RunNow.self], defaultSubcommand: List.self)

    struct List: AdminCommand {
        static let configuration = CommandConfiguration(abstract: "Every schedule with its next run and last job.")

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            let schedules = try await admin.client().call { baton in try await baton.schedules() }
            let console = admin.console
            if admin.json { return try console.json(Components.Schemas.ScheduleList(schedules: schedules)) }
            guard !schedules.isEmpty else { return console.err("no schedules") }
            var table = Table(
                [
                    .init(title: "NAME", minimumWidth: 8), .init(title: "CRON", minimumWidth: 9),
                    .init(title: "ZONE", minimumWidth: 3),
                    .init(title: "STATUS", color: { $0 == "paused" ? .yellow : nil }),
                    .init(title: "NEXT", alignRight: true), .init(title: "LAST JOB", alignRight: true),
                    .init(title: "FROM"),
                ], shrinkOrder: [1, 0, 2])
            let now = Date()
            for schedule in schedules {
                table.append([
                    schedule.name, schedule.cron, schedule.timeZone, schedule.paused ? "paused" : "active",
                    schedule.paused ? "-" : schedule.nextRunAt.map { Text.age($0, now: now) } ?? "never",
                    schedule.lastJobId.map { "\($0)" } ?? "-", schedule.source.rawValue,
                ])
            }
            console.out(table.render(on: console))
        }
    }

    struct Show: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "A schedule: its expression, zone, misfire policy, next five runs, last job and job.")

        @Argument(help: "The schedule's name.")
        var name: String

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            let schedule = try await admin.client().call { baton in try await baton.schedule(name) }
            let console = admin.console
            if admin.json { return try console.json(schedule) }
            var lines = [
                "schedule \(Text.printable(schedule.name))  \(schedule.paused ? "paused" : "active")  "
                    + "from \(schedule.source.rawValue)",
                "cron \(Text.printable(schedule.cron))  in \(schedule.timeZone)  misfire \(schedule.misfire)",
            ]
            if schedule.paused {
                lines.append("next runs: none while paused")
            } else {
                lines.append("next runs:")
                lines += schedule.upcoming.map { "  \(Text.time($0))" }
                if schedule.upcoming.isEmpty { lines.append("  none: the expression never fires again") }
            }
            if let last = schedule.lastRunAt {
                lines.append("last run \(Text.time(last))" + (schedule.lastJobId.map { ", job \($0)" } ?? ""))
            }
            lines.append("job " + Text.preview(schedule.job, limit: console.width))
            console.out(lines.joined(separator: "\n"))
        }
    }

    struct Pause: AdminCommand {
        static let configuration = CommandConfiguration(abstract: "Stop a schedule enqueueing until it is resumed.")

        @Argument(help: "The schedule's name.")
        var name: String

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws { try await setPaused(true, name, admin) }
    }

    struct Resume: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Resume a schedule from its next run after now (the runs of the pause are not made up).")

        @Argument(help: "The schedule's name.")
        var name: String

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws { try await setPaused(false, name, admin) }
    }

    struct RunNow: AdminCommand {
        static let configuration = CommandConfiguration(
            commandName: "run-now", abstract: "Enqueue a schedule's job now, outside its runs; prints the job's id.")

        @Argument(help: "The schedule's name.")
        var name: String

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            let job = try await admin.client().call { baton in try await baton.runSchedule(name) }
            let console = admin.console
            if admin.json { return try console.json(job) }
            console.out("\(job.id)")
        }
    }
}

private func setPaused(_ paused: Bool, _ name: String, _ admin: AdminOptions) async throws {
    let schedule = try await admin.client().call { baton in try await baton.setPaused(paused, schedule: name) }
    let console = admin.console
    if admin.json { return try console.json(schedule) }
    console.out(
        "\(paused ? "paused" : "resumed") schedule \(Text.printable(name))"
            + (paused ? "" : schedule.nextRunAt.map { "; next run \(Text.time($0))" } ?? ""))
}
