import ArgumentParser
import Baton
import BatonAPI
import BatonHTTPClient
import Foundation

struct Jobs: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, show, cancel, retry, delete, wait for and signal jobs.",
        subcommands: [
            List.self, Show.self, Logs.self, Cancel.self, Retry.self, Skip.self, Delete.self, Wait.self, Signal.self,
        ],
        defaultSubcommand: List.self)
}

/// A job id argument: a positive integer.
struct JobID: ExpressibleByArgument, Sendable {
    var value: Int64

    init?(argument: String) {
        guard let value = Int64(argument), value > 0 else { return nil }
        self.value = value
    }

    static var defaultCompletionKind: CompletionKind { .default }
}

extension Jobs {
    struct List: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Jobs, newest first (group members show under their parent: baton jobs show).")

        @OptionGroup var filter: JobFilterOptions

        @Option(help: "At most this many jobs.")
        var limit: Int = 50

        @Flag(help: "Every job that matches, page after page.")
        var all = false

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func validate() throws {
            guard limit >= 1 else { throw ValidationError("--limit must be at least 1") }
        }

        func run() async throws {
            let client = try admin.client()
            var jobs: [JobSummaryView] = []
            var cursor: String?
            let createdAfter = JobFilterOptions.ago(filter.since, from: Date())
            repeat {
                let size = all ? 1000 : min(1000, limit - jobs.count)
                let page = try await client.call { [cursor] baton in
                    try await baton.jobs(
                        states: filter.states, queue: filter.queue, lane: filter.lane, task: filter.task,
                        error: filter.error, createdAfter: createdAfter, metadata: filter.metadataValues,
                        args: filter.argsValues, limit: size, cursor: cursor)
                }
                jobs += page.jobs
                cursor = page.nextCursor
            } while cursor != nil && (all || jobs.count < limit)
            let console = admin.console
            if admin.json { return try console.json(Components.Schemas.JobPage(jobs: jobs, nextCursor: cursor)) }
            guard !jobs.isEmpty else { return console.err("no jobs match") }
            console.out(Self.table(jobs, now: Date()).render(on: console))
            if cursor != nil { console.err("more jobs match: --limit N or --all to see them") }
        }

        static func table(_ jobs: [JobSummaryView], now: Date) -> Table {
            var table = Table(
                [
                    .init(title: "ID", alignRight: true), .init(title: "QUEUE", minimumWidth: 7),
                    .init(title: "STATE", color: Console.color(ofState:)), .init(title: "STAGE", minimumWidth: 5),
                    .init(title: "LANE", minimumWidth: 6), .init(title: "ATT", alignRight: true),
                    .init(title: "AGE", alignRight: true), .init(title: "LAST ERROR", minimumWidth: 10),
                ], shrinkOrder: [3, 4, 7, 1])
            for job in jobs {
                let stage = "\(min(job.currentStage + 1, job.stageCount))/\(job.stageCount)"
                table.append([
                    "\(job.id)", job.queue, job.state.rawValue, job.task.map { "\(stage) \($0)" } ?? stage,
                    job.lane ?? "", "\(job.attempts)", Text.age(job.createdAt, now: now), job.lastError ?? "",
                ])
            }
            return table
        }
    }

    struct Show: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "A job's chain as a tree: each stage's state, attempts, timings, errors and output.")

        @Argument(help: "The job's id.")
        var id: JobID

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            let job = try await admin.client().call { baton in
                try await baton.job(id.value)
            }
            let console = admin.console
            if admin.json { return try console.json(job) }
            console.out(JobTree(job, console: console, now: Date()).lines().joined(separator: "\n"))
        }
    }

    struct Logs: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "What a job's tasks logged, attempt by attempt, oldest first.",
            discussion: """
                Each attempt that ran a task and logged something, headed by its stage, task and how \
                it ended; the last 64 KiB of each are kept. Group members are jobs of their own: \
                `baton jobs logs MEMBER-ID`.
                """)

        @Argument(help: "The job's id.")
        var id: JobID

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            let job = try await admin.client().call { baton in try await baton.job(id.value) }
            let console = admin.console
            let attempts = Self.attempts(of: job)
            if admin.json {
                return try console.json(
                    JSONValue.array(
                        attempts.map {
                            [
                                "stage": .number(JSONNumber($0.stage)), "attempt": .number(JSONNumber($0.attempt)),
                                "outcome": .string($0.outcome), "log": .string($0.log),
                            ]
                        }))
            }
            guard !attempts.isEmpty else { return console.err("job \(id.value): no attempt logged anything") }
            for attempt in attempts {
                console.out(
                    "── stage \(attempt.stage + 1) (\(attempt.label)), attempt \(attempt.attempt), \(attempt.outcome)")
                console.out(attempt.log)
            }
        }

        /// Every attempt with a log, stage by stage: its failed attempts, then the one that completed it.
        static func attempts(of job: JobView) -> [(
            stage: Int, label: String, attempt: Int, outcome: String, log: String
        )] {
            job.stages.flatMap { stage in
                let label = stage.name ?? stage.task ?? "stage"
                let failed = stage.errors.compactMap { error in
                    error.log.map { (stage.index, label, error.attempt, "failed: \(error.error)", $0) }
                }
                let completed = stage.log.map { [(stage.index, label, stage.attempts, "completed", $0)] } ?? []
                return failed + completed
            }
        }
    }
}
