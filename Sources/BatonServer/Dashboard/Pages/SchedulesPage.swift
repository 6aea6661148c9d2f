import BatonAPI
import Foundation
import Hummingbird

/// `/ui/schedules`: every schedule with its expression and zone, its next runs and its last job;
/// admins pause, resume and run one now.
extension Dashboard {
    struct Schedules: Sendable {
        struct Row: Sendable {
            var name: String
            var cron: String
            var zone: String
            var misfire: String
            var paused: Bool
            var fromSettings: Bool
            var upcoming: [String]
            var lastRun: String?
            var lastJob: String?
            var lastJobLink: String?
            var pauseAction: String
            var runAction: String
        }

        var rows: [Row]
    }

    func schedules(_ request: Request) async throws -> Response {
        let session = try await session(request, section: .schedules)
        let schedules = try await asCaller(session, ["listSchedules"]) {
            try await api.listSchedules(.init()).ok.body.json.schedules
        }
        let now = Date()
        let rows = schedules.map { schedule in
            let path = "/ui/schedules/" + Self.path(schedule.name)
            return Schedules.Row(
                name: schedule.name, cron: schedule.cron, zone: schedule.timeZone, misfire: schedule.misfire,
                paused: schedule.paused, fromSettings: schedule.source == .settings,
                upcoming: schedule.paused
                    ? []
                    : schedule.upcoming.prefix(3).map {
                        DashboardText.time($0) + " (" + DashboardText.relative($0, now: now) + ")"
                    },
                lastRun: schedule.lastRunAt.map { DashboardText.relative($0, now: now) },
                lastJob: schedule.lastJobId.map { "\($0)" }, lastJobLink: schedule.lastJobId.map { "/ui/jobs/\($0)" },
                pauseAction: path + (schedule.paused ? "/resume" : "/pause"), runAction: path + "/run")
        }
        return page(
            "schedules", title: "Schedules", section: .schedules, session: session, notice: Self.notice(request),
            Schedules(rows: rows))
    }

    /// `POST /ui/schedules/NAME/pause`, `/resume` or `/run`, then back to the list.
    func actOnSchedule(_ request: Request, name: String, action: String) async throws -> Response {
        let session = try await session(request)
        _ = try await postedForm(request, session: session)
        var done = action
        let operations = ["pause": "pauseSchedule", "resume": "resumeSchedule", "run": "runSchedule"]
        try await asCaller(session, operations[action].map { [$0] } ?? []) {
            switch action {
            case "pause": _ = try await api.pauseSchedule(.init(path: .init(name: name))).ok
            case "resume": _ = try await api.resumeSchedule(.init(path: .init(name: name))).ok
            case "run":
                let job = try await api.runSchedule(.init(path: .init(name: name))).created.body.json
                done = "run-\(job.id)"
            default: throw DashboardError.refused(.notFound, "There is no such action.")
            }
        }
        return Self.redirect("/ui/schedules?done=schedule-\(done)&what=" + Self.query(name))
    }
}
