import ArgumentParser
import Baton
import BatonAPI
import BatonHTTPClient
import Foundation

struct Queues: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Queues with their jobs per state; pause and resume them.",
        subcommands: [List.self, Pause.self, Resume.self, FairKey.self], defaultSubcommand: List.self)

    struct List: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Each queue: jobs per state and how long its oldest available job has waited.",
            discussion: """
                STATUS is paused, unserved (jobs are available and no live worker serves the queue), \
                unserved-task (some of its oldest available jobs are of a task no live worker serving it \
                runs; named below the table) or active; WORKERS counts the live workers serving it. Each state counts the jobs \
                `baton jobs list --queue Q --state S` lists (group members are in their parent), but \
                DONE: the completions of the last 24 hours (group members' included). Below the table, \
                each fair queue's keys with stages waiting and the five with the most.
                """)

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            let queues = try await admin.client().call { baton in try await baton.queues()
            }
            let console = admin.console
            if admin.json { return try console.json(Components.Schemas.QueueList(queues: queues)) }
            guard !queues.isEmpty else { return console.err("no queues: no jobs yet") }
            var table = Table(
                [
                    .init(title: "QUEUE", minimumWidth: 8),
                    .init(
                        title: "STATUS",
                        color: { $0.hasPrefix("unserved") ? .red : $0.hasPrefix("paused") ? .yellow : nil }),
                    .init(title: "WORKERS", alignRight: true),
                ]
                    + Self.columns.map { Table.Column(title: $0.title, alignRight: true) }
                    + [.init(title: "WAITED", alignRight: true)],
                shrinkOrder: [0])
            for queue in queues {
                table.append(
                    [queue.name, Self.status(queue), "\(queue.workers)"]
                        + Self.columns.map { "\(queue.counts[$0.state])" }
                        + [queue.oldestAvailableAgeSeconds.map(Text.span) ?? "-"])
            }
            console.out(table.render(on: console))
            for queue in queues {
                guard let fair = queue.fairShare else { continue }
                func listed(_ keys: [Components.Schemas.FairKeyCount]) -> String {
                    keys.map { "\(Text.printable($0.key.isEmpty ? "\"\"" : $0.key)) \($0.stages)" }
                        .joined(separator: ", ")
                }
                var parts: [String] = []
                if fair.keys > 0 {
                    parts.append("\(fair.keys) fairness keys have stages waiting; most: \(listed(fair.top))")
                }
                if fair.running > 0 { parts.append("running now: \(listed(fair.runningTop))") }
                if fair.recentStarts > 0 {
                    let shares = fair.recentTop.map {
                        "\(Text.printable($0.key.isEmpty ? "\"\"" : $0.key)) \(Int(($0.share * 100).rounded())) %"
                    }
                    parts.append(
                        "started in the last \(fair.recentMinutes) min: \(fair.recentStarts); "
                            + "shares: \(shares.joined(separator: ", "))")
                }
                if !parts.isEmpty { console.out("queue \(queue.name): " + parts.joined(separator: "; ")) }
                if let from = queue.fairKeyFrom {
                    console.out("queue \(queue.name): jobs naming no fairness key take the one at \(from)")
                }
            }
            for queue in queues where !queue.unservedTasks.isEmpty {
                console.err(
                    "queue \(queue.name): no live worker serving it runs "
                        + queue.unservedTasks.map { "task \($0)" }.joined(separator: ", ")
                        + ", which some of its oldest available jobs wait for")
            }
        }

        /// Paused first (a resume is what it waits for), then unserved, then a task unserved.
        static func status(_ queue: Components.Schemas.Queue) -> String {
            queue.paused
                ? "paused" : queue.unserved ? "unserved" : queue.unservedTasks.isEmpty ? "active" : "unserved-task"
        }

        static let columns: [(title: String, state: JobState)] = [
            ("AVAIL", .available), ("RUN", .running), ("SCHED", .scheduled), ("RETRY", .retryable),
            ("WAIT", .waiting), ("DONE", .completed), ("DISC", .discarded), ("CANC", .cancelled),
        ]
    }

    struct Pause: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop workers claiming from a queue (running stages finish).")

        @Argument(help: "The queue's name.", completion: Completions.queues)
        var name: String

        @Flag(help: "Pause a queue no job is in and no worker serves (for jobs yet to come).")
        var unchecked = false

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws { try await setPaused(true, name, unchecked: unchecked, admin) }
    }

    struct Resume: AdminCommand {
        static let configuration = CommandConfiguration(abstract: "Let workers claim from a paused queue again.")

        @Argument(help: "The queue's name.", completion: Completions.queues)
        var name: String

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws { try await setPaused(false, name, unchecked: true, admin) }
    }
}

extension Queues {
    struct FairKey: AdminCommand {
        static let configuration = CommandConfiguration(
            commandName: "fair-key",
            abstract: "Take the fairness key of a queue's jobs that name none from what they carry.",
            discussion: """
                FROM is a field of the job's metadata or input, such as metadata.tenant or \
                input.customer.id: each job enqueued into the queue without a key from then on takes the \
                text there (a job with nothing there shares the key of the jobs without one; anything \
                else than text refuses its enqueue). --none: jobs name their own keys again.
                """)

        @Argument(help: "The queue's name.", completion: Completions.queues)
        var name: String

        @Argument(help: "Where the key is: metadata.FIELD or input.FIELD.")
        var from: String?

        @Flag(help: "Jobs name their own fairness keys again.")
        var none = false

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            guard (from == nil) == none else {
                throw AdminFailure(.usage, "give where the key is (such as metadata.tenant) or --none, not both")
            }
            let saved = try await admin.client().call { baton in try await baton.setFairKeySource(from, queue: name) }
            let console = admin.console
            if admin.json { return try console.json(saved) }
            console.out(
                saved.from.map {
                    "queue \(Text.printable(name)) takes the fairness keys of jobs naming none from \($0)"
                }
                    ?? "queue \(Text.printable(name)): jobs name their own fairness keys")
        }
    }
}

private func setPaused(_ paused: Bool, _ name: String, unchecked: Bool, _ admin: AdminOptions) async throws {
    try await admin.client().call { baton in try await baton.setPaused(paused, queue: name, unchecked: unchecked) }
    let console = admin.console
    if admin.json { return try console.json(Components.Schemas.QueuePause(name: name, paused: paused)) }
    console.out("\(paused ? "paused" : "resumed") queue \(Text.printable(name))")
}

extension Components.Schemas.StateCounts {
    subscript(state: JobState) -> Int {
        switch state {
        case .scheduled: scheduled
        case .available: available
        case .running: running
        case .retryable: retryable
        case .waiting: waiting
        case .completed: completed
        case .discarded: discarded
        case .cancelled: cancelled
        }
    }
}
