import BatonAPI
import Foundation
import Hummingbird

/// `/ui/workers`: each registered worker: host, process, queues, tasks, heartbeat age and the jobs
/// it runs now.
extension Dashboard {
    struct Workers: Sendable {
        struct Row: Sendable {
            struct Job: Sendable {
                var id: String
                var link: String
            }

            var id: String
            var host: String
            var pid: Int
            var queues: String
            var tasks: String
            var started: String
            var heartbeat: String
            /// Its last heartbeat is older than its lease (the overview flags it).
            var silent: Bool
            var running: [Job]
        }

        var rows: [Row]
    }

    func workers(_ request: Request) async throws -> Response {
        let session = try await session(request, section: .workers)
        let workers = try await asCaller(session, ["listWorkers"]) {
            try await api.listWorkers(.init()).ok.body.json.workers
        }
        let now = Date()
        let rows = workers.sorted { ($0.host, $0.pid) < ($1.host, $1.pid) }.map { worker in
            Workers.Row(
                id: worker.id, host: worker.host, pid: worker.pid, queues: worker.queues.joined(separator: ", "),
                tasks: worker.tasks.joined(separator: ", "),
                started: DashboardText.relative(worker.startedAt, now: now),
                heartbeat: DashboardText.relative(worker.lastHeartbeatAt, now: now), silent: !worker.alive,
                running: worker.runningJobs.map { Workers.Row.Job(id: "\($0)", link: "/ui/jobs/\($0)") })
        }
        return page("workers", title: "Workers", section: .workers, session: session, Workers(rows: rows))
    }
}
