import ArgumentParser
import Baton
import BatonAPI
import Foundation

struct Enqueue: AdminCommand {
    static let configuration = CommandConfiguration(
        abstract: "Enqueue a job and print its id.",
        discussion: """
            Give a job as the API's JSON (what POST /v1/jobs takes; {"jobs": [...]} enqueues a batch,
            all or none), from a file or - for standard input; or one stage with --task:

              baton enqueue job.json
              baton enqueue --task sleep --args '{"ms": 500}' --lane customer-7
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

    @Option(help: "With --task: the queue (default: default).")
    var queue: String?

    @Flag(help: "Enqueue even if no live worker serves the task yet.")
    var unchecked = false

    @OptionGroup var local: AdminOptions
    @ParentCommand var root: BatonCommand

    func validate() throws {
        switch (file, task) {
        case (nil, nil): throw ValidationError("give a job file (or - for standard input), or --task")
        case (.some, .some): throw ValidationError("give a job file or --task, not both")
        case (.some, nil) where args != nil || input != nil || lane != nil || queue != nil:
            throw ValidationError("--args, --input, --lane and --queue go with --task; a job file says them itself")
        default: break
        }
    }

    func run() async throws {
        let client = try admin.client()
        let console = admin.console
        let body = try requestBody()
        let target = query([("unchecked", unchecked ? "true" : nil)])
        if case .object(let fields) = body, fields["jobs"] != nil {
            let batch = try await client.call(
                .POST, "/v1/jobs/batch" + target, as: BatchResponse.self, body: Array(body.jsonText.utf8))
            if admin.json { return try console.json(batch) }
            for job in batch.jobs { report(job.id, inserted: job.inserted, on: console) }
        } else {
            let reply = try await client.send(.POST, "/v1/jobs" + target, body: Array(body.jsonText.utf8))
            let job = try client.decode(JobView.self, from: reply, "/v1/jobs")
            if admin.json { return try console.json(job) }
            // 200 rather than 201: the idempotency key named a job that already existed.
            report(job.id, inserted: reply.status == 201, on: console)
        }
    }

    private func report(_ id: Int64, inserted: Bool, on console: Console) {
        console.out("\(id)")
        if !inserted { console.err("job \(id) already existed: its idempotency key was used before") }
    }

    /// The JSON to send: the file as it is (the server checks it and says what is wrong where), or
    /// the one-stage job the options describe.
    private func requestBody() throws -> JSONValue {
        if let file {
            let data: Data
            do {
                data =
                    file == "-"
                    ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: file))
            } catch {
                throw AdminFailure(.usage, "cannot read \(file): \(error.localizedDescription)")
            }
            do {
                return try JSONValue(parsing: Array(data))
            } catch {
                throw AdminFailure(.usage, "\(file == "-" ? "standard input" : file) is not JSON: \(error)")
            }
        }
        let args = try args.map { try json($0, option: "--args") }
        if let args, case .object = args {
        } else if args != nil {
            throw AdminFailure(.usage, "--args must be a JSON object, such as '{\"ms\": 500}'")
        }
        let stage = TaskStageSubmission(task: task ?? "", args: args, lane: lane)
        let job = JobSubmission(
            stages: [.task(stage)], input: try input.map { try json($0, option: "--input") }, queue: queue)
        return try JSONValue(encoding: job)
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
