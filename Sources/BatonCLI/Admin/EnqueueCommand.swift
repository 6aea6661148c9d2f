import ArgumentParser
import Baton
import BatonAPI
import BatonHTTPClient
import Foundation

struct Enqueue: AdminCommand {
    static let configuration = CommandConfiguration(
        abstract: "Enqueue a job and print its id.",
        discussion: """
            Give a job as the API's JSON (what POST /v1/jobs takes; {"jobs": [...]} enqueues a batch,
            all or none), from a file or - for standard input; or one stage with --task:

              baton enqueue job.json
              baton enqueue --task sleep --args '{"ms": 500}' --lane customer-7 --priority -1 --delay 10s

            Lower priorities run first. A Swift task is named by its type's name (or its static name).
            """)

    @Argument(help: "A JSON file holding the job, or - to read standard input.")
    var file: String?

    @Option(help: "Enqueue one stage running this task.")
    var task: String?

    @Option(help: "With --task: the stage's args, a JSON object.")
    var args: String?

    @Option(help: "With --task: the job's input, any JSON.")
    var input: String?

    @Option(help: "With --task: order the stage in this lane.")
    var lane: String?

    @Option(help: "With --task: the queue (default: default).", completion: Completions.queues)
    var queue: String?

    // Unconditional: `--priority -3` is a value, not an option named -3.
    @Option(parsing: .unconditional, help: "With --task: the priority, -32768 to 32767; lower runs first (default 0).")
    var priority: Int32?

    @Option(help: "With --task: run no sooner than this long from now (e.g. 30s, 10m).")
    var delay: String?

    @Option(help: "With --task: run no sooner than this RFC 3339 time.")
    var runAt: String?

    @Option(help: "With --task: a key that makes enqueueing again return the same job.")
    var idempotencyKey: String?

    @Option(help: "With --task: the job's metadata, a JSON object.")
    var metadata: String?

    @Option(help: "With --task: the key (a tenant) its stages take turns under with other keys' in its queue.")
    var fairKey: String?

    @Option(help: "With --task: its stages' weight under that key (default 1; 2 takes twice the turns of 1).")
    var fairWeight: Double?

    @Option(help: "With --task: while a job with this unique key has not finished, answer it instead of a new one.")
    var uniqueKey: String?

    @Option(help: "With --task: with --unique-key, jobs in the same window of this length (e.g. 1h) are the same.")
    var uniqueWindow: String?

    @Flag(help: "Enqueue even if no live worker serves the task yet.")
    var unchecked = false

    @OptionGroup var local: AdminOptions
    @ParentCommand var root: BatonCommand

    /// Checked when the command runs rather than in `validate()`, which ArgumentParser calls before
    /// it reports an unknown option: `--bogus 3` would be "give a job file or --task, not both"
    /// (the 3 taken for a file) instead of naming `--bogus`.
    private func check() throws {
        let quick: [(String, Any?)] = [
            ("--args", args), ("--input", input), ("--lane", lane), ("--queue", queue), ("--priority", priority),
            ("--delay", delay), ("--run-at", runAt), ("--idempotency-key", idempotencyKey), ("--metadata", metadata),
            ("--unique-key", uniqueKey), ("--unique-window", uniqueWindow), ("--fair-key", fairKey),
            ("--fair-weight", fairWeight),
        ]
        switch (file, task) {
        case (nil, nil): throw ValidationError("give a job file (or - for standard input), or --task")
        case (.some, .some): throw ValidationError("give a job file or --task, not both")
        case (.some, nil):
            let given = quick.filter { $0.1 != nil }.map(\.0)
            if !given.isEmpty {
                throw ValidationError(
                    "\(given.joined(separator: ", ")) \(given.count == 1 ? "goes" : "go") with --task; "
                        + "a job file says \(given.count == 1 ? "it" : "them") itself")
            }
        default:
            if delay != nil, runAt != nil { throw ValidationError("give --delay or --run-at, not both") }
            if uniqueWindow != nil, uniqueKey == nil { throw ValidationError("--unique-window goes with --unique-key") }
        }
    }

    func run() async throws {
        try check()
        let client = try admin.client()
        let console = admin.console
        switch try request() {
        case .batch(let jobs):
            let enqueued = try await client.call { baton in
                try await baton.enqueue(batch: jobs, unchecked: unchecked)
            }
            if admin.json { return try console.json(Components.Schemas.BatchResponse(jobs: enqueued)) }
            for job in enqueued { report(job.id, inserted: job.inserted, on: console) }
        case .one(let job):
            let enqueued = try await client.call { baton in
                try await baton.enqueue(job, unchecked: unchecked)
            }
            if admin.json { return try console.json(enqueued.job) }
            report(enqueued.job.id, inserted: enqueued.inserted, on: console)
        }
    }

    private func report(_ id: Int64, inserted: Bool, on console: Console) {
        console.out("\(id)")
        if !inserted {
            console.err("job \(id) already existed: it holds the idempotency or unique key given, so no job was added")
        }
    }

    private enum Request {
        case one(Components.Schemas.JobRequest)
        case batch([Components.Schemas.JobRequest])
    }

    /// The job file read as the API's types (a mistake in it is named by its path, before anything is
    /// sent), or the one-stage job the options describe.
    private func request() throws -> Request {
        guard let file else { return .one(try quickJob()) }
        let data: Data
        do {
            data =
                file == "-"
                ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            throw AdminFailure(.usage, "cannot read \(file): \(error.localizedDescription)")
        }
        let name = file == "-" ? "standard input" : file
        let json: JSONValue
        do {
            json = try JSONValue(parsing: data, duplicateKeys: .refuse)
        } catch {
            throw AdminFailure(.usage, "\(name) is not JSON: \(error)")
        }
        do {
            if json["jobs"] != nil {
                return .batch(try RequestBody.decode(Components.Schemas.BatchRequest.self, from: json).jobs)
            }
            return .one(try RequestBody.decode(Components.Schemas.JobRequest.self, from: json))
        } catch {
            throw AdminFailure(.failed, "\(name) is not a job the API takes: \(error)")
        }
    }

    private func quickJob() throws -> Components.Schemas.JobRequest {
        let args = try args.map { try json($0, option: "--args") }
        if let args, case .object = args {
        } else if args != nil {
            throw AdminFailure(.usage, "--args must be a JSON object, such as '{\"ms\": 500}'")
        }
        let metadata = try metadata.map { try json($0, option: "--metadata") }
        if let metadata, case .object = metadata {
        } else if metadata != nil {
            throw AdminFailure(.usage, "--metadata must be a JSON object, such as '{\"customer\": 7}'")
        }
        var runAtTime: Date?
        if let runAt {
            guard let time = RFC3339.parse(runAt) else {
                throw AdminFailure(.usage, "--run-at must be an RFC 3339 time, such as 2026-01-31T09:30:00Z")
            }
            runAtTime = time
        }
        if let delay, DurationFormat.parse(delay) == nil {
            throw AdminFailure(.usage, "--delay must be a duration, such as 30s or 10m")
        }
        if let uniqueWindow, DurationFormat.parse(uniqueWindow) == nil {
            throw AdminFailure(.usage, "--unique-window must be a duration, such as 1h or 10m")
        }
        return Components.Schemas.JobRequest(
            queue: queue, priority: priority, runAt: runAtTime, delay: delay, idempotencyKey: idempotencyKey,
            unique: uniqueKey.map { .init(key: $0, window: uniqueWindow) },
            metadata: metadata, fairKey: fairKey, fairWeight: fairWeight,
            input: try input.map { try json($0, option: "--input") },
            stages: [.TaskStageRequest(.init(task: task ?? "", args: args, lane: lane))])
    }

    private func json(_ text: String, option: String) throws -> JSONValue {
        do {
            return try JSONValue(parsing: text)
        } catch {
            throw AdminFailure(
                .usage, "\(option) is not JSON (\(error)); quote it for the shell: \(option) '{\"ms\": 500}'")
        }
    }
}
