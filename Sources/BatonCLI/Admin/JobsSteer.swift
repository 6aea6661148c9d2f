import ArgumentParser
import Baton
import BatonAPI
import BatonHTTPClient
import Foundation

extension Jobs {
    struct Cancel: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cancel jobs, running ones included (their worker stops the stage).",
            discussion: """
                By id, or every unfinished job a filter matches: baton jobs cancel --queue billing --state scheduled
                (--dry-run counts them first).
                """)

        @Argument(help: "The jobs' ids (with filters: only these, if they match).")
        var ids: [JobID] = []

        @OptionGroup var filter: BulkFilterOptions
        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func validate() throws { try filter.validate(ids: ids) }

        func run() async throws {
            if filter.isBulk { return try await filter.run(.cancel, ids: ids, admin) }
            try await steer(ids, admin) { client, id in
                let job = try await client.call { baton in try await baton.cancel(id) }
                return (job, "cancelled job \(id)")
            }
        }
    }

    struct Retry: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run scheduled or retryable jobs now; start discarded or cancelled ones again.",
            discussion: """
                By id: a scheduled job, or a retryable one waiting out its backoff, runs its stage now (a
                lane holder keeps its place); a discarded or cancelled one starts again at the stage that
                failed. Or every discarded or cancelled job a filter matches, after an outage:
                baton jobs retry --state discarded --queue billing --since 2h (--dry-run counts them first).
                """)

        @Argument(help: "The jobs' ids (with filters: only these, if they match).")
        var ids: [JobID] = []

        @OptionGroup var filter: BulkFilterOptions
        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func validate() throws { try filter.validate(ids: ids) }

        func run() async throws {
            if filter.isBulk { return try await filter.run(.retry, ids: ids, admin) }
            try await steer(ids, admin) { client, id in
                let job = try await client.call { baton in try await baton.retry(id) }
                return (job, "retrying job \(id) at stage \(job.currentStage + 1)/\(job.stages.count)")
            }
        }
    }

    struct Skip: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Discard jobs that are not running, with a reason; a lane they hold moves on.",
            discussion: """
                The way past a lane holder that waits to retry: baton jobs skip 42 --reason "bad input, \
                refunded by hand". The reason is kept as the stage's last error.
                """)

        @Argument(help: "The jobs' ids.")
        var ids: [JobID]

        @Option(help: "Why they are skipped (kept with each job).")
        var reason: String

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            try await steer(ids, admin) { client, id in
                let job = try await client.call { baton in try await baton.skip(id, reason: reason) }
                return (job, "skipped job \(id) at stage \(job.currentStage + 1)/\(job.stages.count)")
            }
        }
    }

    struct Delete: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete finished jobs.",
            discussion: """
                By id, or every finished job a filter matches: baton jobs delete --state discarded --error "bad input"
                (--dry-run counts them first).
                """)

        @Argument(help: "The jobs' ids (with filters: only these, if they match).")
        var ids: [JobID] = []

        @OptionGroup var filter: BulkFilterOptions
        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func validate() throws { try filter.validate(ids: ids) }

        func run() async throws {
            if filter.isBulk { return try await filter.run(.delete, ids: ids, admin) }
            try await steer(ids, admin) { client, id in
                try await client.call { baton in try await baton.delete(id) }
                return (Deleted(id: id), "deleted job \(id)")
            }
        }
    }
}

/// Does `action` to each job in turn, going on past failures: each success is a line (with
/// `--json`, the API's answer as one JSON line), each failure a message on standard error; the
/// command fails with the first failure's status.
private func steer(
    _ ids: [JobID], _ admin: AdminOptions,
    _ action: (AdminClient, Int64) async throws -> (json: any Encodable, text: String)
) async throws {
    let client = try admin.client()
    let console = admin.console
    var first: AdminFailure?
    for id in ids.map(\.value) {
        do {
            let (json, text) = try await action(client, id)
            if admin.json { try console.json(json) } else { console.out(text) }
        } catch let failure as AdminFailure where failure.status != .unreachable && failure.status != .unauthorized {
            console.err("baton: job \(id): \(failure.message)")
            if admin.json {
                var document = failure.problemDocument
                if case .object(var fields) = document {
                    fields["id"] = .number(JSONNumber(id))
                    document = .object(fields)
                }
                console.out(document.jsonText)
            }
            first = first ?? failure
        }
    }
    // Each failure has been told; only the status is left to give.
    if let first { throw ExitCode(first.status.rawValue) }
}

/// What `baton jobs delete --json` prints for a deleted job (the API answers 204, no body).
private struct Deleted: Encodable {
    var id: Int64
    var deleted = true
}

/// What `baton jobs list` and `baton jobs cancel|retry|delete` filter jobs by, as `GET /v1/jobs`
/// and `POST /v1/jobs/bulk` take it.
struct JobFilterOptions: ParsableArguments {
    @Option(
        help: "Only jobs in these states, comma-separated (e.g. running,retryable).", completion: Completions.states)
    var state: String?

    @Option(help: "Only jobs of this queue.", completion: Completions.queues)
    var queue: String?

    @Option(help: "Only jobs whose current stage is in this lane.")
    var lane: String?

    @Option(help: "Only jobs with a stage running this task.")
    var task: String?

    @Option(help: "Only jobs whose last error contains this text (case-insensitive).")
    var error: String?

    @Option(help: "Only jobs created this long ago or less (e.g. 30m, 2h).")
    var since: Duration?

    @Option(
        help: ArgumentHelp(
            "Only jobs whose metadata holds this key with this value (repeatable).", valueName: "key=value"))
    var metadata: [String] = []

    @Option(
        help: ArgumentHelp(
            "Only jobs with a stage whose args hold this key with this value (repeatable).", valueName: "key=value"))
    var args: [String] = []

    /// Whether any filter is given.
    var isGiven: Bool {
        state != nil || queue != nil || lane != nil || task != nil || error != nil || since != nil
            || !metadata.isEmpty || !args.isEmpty
    }

    /// `--metadata` by key.
    var metadataValues: [String: String] { Self.pairs(metadata) }
    /// `--args` by key.
    var argsValues: [String: String] { Self.pairs(args) }

    private static func pairs(_ items: [String]) -> [String: String] {
        Dictionary(
            items.compactMap { item in
                item.firstIndex(of: "=").map { (String(item[..<$0]), String(item[item.index(after: $0)...])) }
            }, uniquingKeysWith: { $1 })
    }

    /// The states asked for.
    var states: [Components.Schemas.JobState] {
        (state?.split(separator: ",") ?? []).compactMap { Components.Schemas.JobState(rawValue: String($0)) }
    }

    func validate() throws {
        for name in state?.split(separator: ",") ?? [] where JobState(rawValue: String(name)) == nil {
            throw ValidationError(
                "unknown state \"\(name)\"; states are \(JobState.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        for (option, items) in [("metadata", metadata), ("args", args)] {
            for item in items where !(item.firstIndex(of: "=").map { $0 > item.startIndex } ?? false) {
                throw ValidationError("--\(option) is written key=value (e.g. --\(option) tenant=42), not \"\(item)\"")
            }
        }
    }

    /// `duration` before `now`.
    static func ago(_ duration: Duration?, from now: Date) -> Date? {
        duration.map {
            now.addingTimeInterval(-Double($0.components.seconds) - Double($0.components.attoseconds) / 1e18)
        }
    }
}

/// The filter of `baton jobs cancel|retry|delete` over many jobs (`POST /v1/jobs/bulk`).
struct BulkFilterOptions: ParsableArguments {
    @OptionGroup var jobs: JobFilterOptions

    @Option(help: "Only jobs that finished this long ago or less (e.g. 30m).")
    var finishedSince: Duration?

    @Flag(help: "Every job the command applies to, with no other filter.")
    var all = false

    @Flag(help: "Count the jobs that match and show the newest; change nothing.")
    var dryRun = false

    /// Whether the command is to act on what a filter matches rather than on ids alone.
    var isBulk: Bool { all || dryRun || jobs.isGiven || finishedSince != nil }

    func validate(ids: [JobID]) throws {
        if ids.isEmpty && !isBulk {
            throw ValidationError(
                "give job ids, or a filter (--state, --queue, --lane, --task, --error, --since, --finished-since, --metadata, --args) or --all"
            )
        }
        if all && (ids.count > 0 || jobs.isGiven || finishedSince != nil) {
            throw ValidationError("--all takes no ids or other filters")
        }
    }

    func run(_ action: BatonHTTPClient.BulkAction, ids: [JobID], _ admin: AdminOptions) async throws {
        let now = Date()
        let filter = BatonHTTPClient.BulkFilter(
            state: jobs.state == nil ? nil : jobs.states, queue: jobs.queue, lane: jobs.lane, task: jobs.task,
            error: jobs.error, createdAfter: JobFilterOptions.ago(jobs.since, from: now),
            finishedAfter: JobFilterOptions.ago(finishedSince, from: now), ids: ids.isEmpty ? nil : ids.map(\.value),
            metadata: jobs.metadata.isEmpty ? nil : .init(additionalProperties: jobs.metadataValues),
            args: jobs.args.isEmpty ? nil : .init(additionalProperties: jobs.argsValues))
        let answer = try await admin.client().call { baton in
            try await baton.bulk(action, matching: filter, dryRun: dryRun)
        }
        let console = admin.console
        if admin.json { return try console.json(answer) }
        let done = ["retry": "retried", "cancel": "cancelled", "delete": "deleted"][action.rawValue] ?? action.rawValue
        let jobs = answer.matched == 1 ? "job" : "jobs"
        if dryRun {
            console.out("\(answer.matched) \(jobs) would be \(done)" + (answer.sample.isEmpty ? "" : "; the newest:"))
        } else {
            console.out(
                "\(done) \(answer.changed) of \(answer.matched) matching \(jobs)"
                    + (answer.changed < answer.matched
                        ? " (the others changed meanwhile, or their group still runs)" : ""))
        }
        if dryRun && !answer.sample.isEmpty {
            console.out(Jobs.List.table(answer.sample, now: now).render(on: console))
        }
        if action == .retry, let paused = answer.pausedQueues, !paused.isEmpty {
            console.err(
                "baton: note: paused, so their retried jobs wait until resumed: "
                    + paused.map(Text.printable).joined(separator: ", ") + " (baton queues resume NAME)")
        }
    }
}
