import ArgumentParser
import Baton
import BatonAPI
import BatonHTTPClient
import Foundation

extension Jobs {
    struct Wait: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Wait for a job to finish; print its output.",
            discussion: """
                On a terminal, each stage's progress is shown live on standard error. Exits 0 when the
                job completed (its output on standard output), 1 when it was discarded or cancelled,
                124 when --timeout ran out first (the job goes on).
                """)

        @Argument(help: "The job's id.")
        var id: JobID

        @Option(help: "Give up after this long (e.g. 30s, 10m); default: wait as long as it takes.")
        var timeout: Duration?

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            let client = try admin.client()
            let console = admin.console
            let deadline = timeout.map { ContinuousClock.now + $0 }
            var progress = WaitProgress(console: console)
            var job: JobView
            while true {
                // On a terminal a short long-poll, to redraw; else as long as the server holds one.
                var wait: Duration = console.interactiveErrors ? .milliseconds(500) : .seconds(60)
                if let deadline { wait = max(.zero, min(wait, deadline - ContinuousClock.now)) }
                job = try await client.call { [wait] baton in
                    try await baton.job(id.value, wait: wait)
                }
                progress.show(job)
                if job.state.isFinished { break }
                if let deadline, ContinuousClock.now >= deadline {
                    progress.end()
                    if admin.json { try console.json(job) }
                    var failure = AdminFailure(
                        .stillRunning,
                        "job \(id.value) has not finished after \(DurationFormat.format(timeout!)): it is \(job.state.rawValue)"
                            + " at stage \(job.currentStage + 1)/\(job.stages.count)"
                            + job.waitingFor.map { "; " + Text.printable($0.message) }.joined())
                    failure.answered = admin.json
                    throw failure
                }
            }
            progress.end()
            if admin.json { try console.json(job) }
            switch job.state {
            case .completed:
                if !admin.json { console.out(Self.pretty(job.output)) }
            default:
                let stage = job.stages[job.currentStage]
                let cause = stage.errors.last?.error ?? stage.members?.lazy.compactMap(\.errors.last?.error).first
                var failure = AdminFailure(
                    .failed,
                    "job \(id.value) was \(job.state.rawValue) at stage \(job.currentStage + 1)/\(job.stages.count)"
                        + (stage.task.map { " (\($0))" } ?? "")
                        + (cause.map { ": " + Text.printable($0) } ?? ""))
                failure.answered = admin.json
                throw failure
            }
        }

        static func pretty(_ value: JSONValue) -> String { value.prettyText }
    }
}

/// Live per-stage progress on standard error, redrawn in place; only on a terminal.
private struct WaitProgress {
    let console: Console
    var drawn = 0
    var last: [String] = []

    init(console: Console) { self.console = console }

    mutating func show(_ job: JobView) {
        guard console.interactiveErrors else {
            // Not a terminal: say once on standard error why the job is not running, and again
            // only when that changes.
            let reasons = job.waitingFor.map { "job \(job.id) is not running: " + Text.printable($0.message) }
            if reasons != last { reasons.forEach(console.err) }
            last = reasons
            return
        }
        let lines = JobTree(job, console: console, now: Date()).progressLines()
        guard lines != last else { return }
        // Up over what was drawn, clear to the end of the screen, draw anew.
        let erase = drawn > 0 ? "\u{1B}[\(drawn)F\u{1B}[J" : ""
        try? FileHandle.standardError.write(contentsOf: Data((erase + lines.joined(separator: "\n") + "\n").utf8))
        drawn = lines.count
        last = lines
    }

    mutating func end() { drawn = 0 }
}
