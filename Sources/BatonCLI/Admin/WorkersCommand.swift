import ArgumentParser
import Baton
import BatonAPI
import Foundation

struct Workers: AdminCommand {
    static let configuration = CommandConfiguration(
        abstract: "Live workers: their queues, the jobs they run, their last heartbeat.")

    @OptionGroup var local: AdminOptions
    @ParentCommand var root: BatonCommand

    func run() async throws {
        let list = try await admin.client().call(.GET, "/v1/workers", as: WorkerList.self)
        let console = admin.console
        if admin.json { return try console.json(list) }
        guard !list.workers.isEmpty else { return console.err("no live workers: start one with `baton worker`") }
        var table = Table(
            [
                .init(title: "WORKER", minimumWidth: 12), .init(title: "PID", alignRight: true),
                .init(title: "QUEUES", minimumWidth: 8), .init(title: "RUNNING", alignRight: true),
                .init(title: "HEARTBEAT", alignRight: true), .init(title: "UP", alignRight: true),
            ], shrinkOrder: [2, 0])
        let now = Date()
        for worker in list.workers {
            table.append([
                worker.id, "\(worker.pid)", worker.queues.joined(separator: ","), "\(worker.runningJobs.count)",
                Text.age(worker.lastHeartbeatAt, now: now) + " ago", Text.span(now.timeIntervalSince(worker.startedAt)),
            ])
        }
        console.out(table.render(on: console))
    }
}
