import ArgumentParser
import Baton
import BatonAPI
import BatonHTTPClient
import Foundation

struct Workers: AdminCommand {
    static let configuration = CommandConfiguration(
        abstract: "Live workers: their queues and tasks, the jobs they run, their last heartbeat.")

    @OptionGroup var local: AdminOptions
    @ParentCommand var root: BatonCommand

    func run() async throws {
        let workers = try await admin.client().call { baton in try await baton.workers() }
        let console = admin.console
        if admin.json { return try console.json(Components.Schemas.WorkerList(workers: workers)) }
        guard !workers.isEmpty else { return console.err("no live workers: start one with `baton worker`") }
        var table = Table(
            [
                .init(title: "WORKER", minimumWidth: 12),
                .init(title: "STATUS", color: { $0 == "silent" ? .red : nil }),
                .init(title: "PID", alignRight: true),
                .init(title: "QUEUES", minimumWidth: 8), .init(title: "TASKS", minimumWidth: 8),
                .init(title: "RUNNING", alignRight: true), .init(title: "HEARTBEAT", alignRight: true),
                .init(title: "UP", alignRight: true),
            ], shrinkOrder: [4, 3, 0])
        let now = Date()
        for worker in workers {
            table.append([
                worker.id, worker.alive ? "live" : "silent", "\(worker.pid)", worker.queues.joined(separator: ","),
                worker.tasks.joined(separator: ","),
                "\(worker.runningJobs.count)",
                Text.age(worker.lastHeartbeatAt, now: now) + " ago", Text.span(now.timeIntervalSince(worker.startedAt)),
            ])
        }
        console.out(table.render(on: console))
    }
}
