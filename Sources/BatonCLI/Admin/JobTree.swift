import Baton
import BatonAPI
import Foundation

/// A job drawn for a terminal: a header, then each stage as a branch with its attempts, timings,
/// errors (in full, wrapped) and an output preview; group members under their stage.
struct JobTree {
    let job: JobView
    let console: Console
    let now: Date

    init(_ job: JobView, console: Console, now: Date) {
        self.job = job
        self.console = console
        self.now = now
    }

    func lines() -> [String] {
        var lines = header()
        for stage in job.stages {
            let last = stage.index == job.stages.count - 1
            lines.append(fit((last ? "└─ " : "├─ ") + stageLine(stage)))
            let indent = last ? "     " : "│    "
            lines += details(of: stage).map { fit(indent + $0) }
        }
        if job.state == .completed { lines.append(fit("output: " + Text.preview(job.output, limit: console.width))) }
        return lines
    }

    /// The job's state, why it is not running, and the stages as one line each: what `baton jobs
    /// wait` redraws.
    func progressLines() -> [String] {
        ["job \(job.id) " + console.state(job.state.rawValue)] + waitingLines()
            + job.stages.flatMap { stage in
                [fit("  " + stageLine(stage))] + (progressLine(stage).map { [fit("    " + $0)] } ?? [])
            }
    }

    /// What a stage that has not completed last reported, if it did.
    private func progressLine(_ stage: StageView) -> String? {
        guard let progress = stage.progress, stage.state != .completed else { return nil }
        return Self.bar(progress)
    }

    /// One line per reason the job is not running.
    private func waitingLines() -> [String] {
        job.waitingFor.map { fit(console.paint("not running: ", .yellow) + Text.printable($0.message)) }
    }

    private func header() -> [String] {
        var lines = [
            fit(
                "job \(job.id)  " + console.state(job.state.rawValue) + "  queue \(Text.printable(job.queue))"
                    + "  priority \(job.priority)" + (job.parentId.map { "  member of job \($0)" } ?? ""))
        ]
        var times = "created \(Text.time(job.createdAt)) (\(Text.age(job.createdAt, now: now)) ago)"
        if let finished = job.finishedAt {
            times += "  finished after \(Text.duration(finished.timeIntervalSince(job.createdAt)))"
        } else if job.runAt > now {
            times += "  runs \(Text.time(job.runAt)) (\(Text.age(job.runAt, now: now)))"
        }
        lines.append(fit(times))
        lines += waitingLines()
        // The path taken, when a `goto`, `finish` or `repeat` made it other than the chain's order.
        if let path = job.takenPath {
            lines.append(fit("path: " + path.map { Text.printable($0.description) }.joined(separator: " → ")))
        }
        if let key = job.idempotencyKey { lines.append(fit("idempotency key: " + Text.printable(key))) }
        let weight = job.fairWeightText
        if let key = job.fairKey {
            lines.append(fit("fair key: " + Text.printable(key) + (weight.map { " (weight \($0))" } ?? "")))
        } else if let weight {
            lines.append(fit("fair weight: \(weight)"))
        }
        if job.metadata != [:] { lines.append(fit("metadata: " + Text.preview(job.metadata, limit: console.width))) }
        lines.append(fit("input: " + Text.preview(job.input, limit: console.width)))
        return lines
    }

    private func stageLine(_ stage: StageView) -> String {
        var parts = ["\(stage.index + 1)/\(job.stages.count) " + label(stage), console.state(stage.state.rawValue)]
        switch stage.state {
        case .pending, .skipped: break
        case .completed:
            if stage.runs > 1 { parts.append(Text.count(stage.runs, "run")) }
            parts.append(Text.count(stage.attempts, "attempt"))
        default:
            if stage.attempts > 0 || stage.maxAttempts != nil {
                parts.append("attempt \(stage.attempts)" + (stage.maxAttempts.map { " of \($0)" } ?? ""))
            }
        }
        if let started = stage.startedAt {
            if let finished = stage.finishedAt {
                parts.append(Text.duration(finished.timeIntervalSince(started)))
            } else if stage.state == .running {
                parts.append("for " + Text.span(now.timeIntervalSince(started)))
            }
        }
        if stage.state == .retryable || stage.state == .scheduled, job.runAt > now {
            parts.append("next " + Text.age(job.runAt, now: now))
        }
        if let lane = stage.lane { parts.append("lane " + Text.printable(lane)) }
        if let queue = stage.queue { parts.append("queue " + Text.printable(queue)) }
        return parts.joined(separator: "  ")
    }

    /// What the stage's task last reported: `[████░░░░░░] 40% page 4 of 10`, and whether a
    /// checkpoint waits for the next attempt.
    static func bar(_ progress: StageProgressView) -> String {
        var text = ""
        if let fraction = progress.fraction {
            let filled = Int((fraction * 10).rounded(.down))
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: 10 - filled)
            text = "[\(bar)] \(Int((fraction * 100).rounded(.down)))%"
        }
        if let message = progress.message { text += (text.isEmpty ? "" : " ") + Text.printable(message) }
        if progress.checkpoint != nil { text += (text.isEmpty ? "" : " ") + "(checkpoint saved)" }
        return text
    }

    private func label(_ stage: StageView) -> String {
        if let signal = stage._await {
            return Text.printable((stage.name.map { "\($0) " } ?? "") + "(await signal \(signal))")
        }
        return switch (stage.name, stage.task) {
        case (let name?, let task?) where name != task: Text.printable("\(name) (\(task))")
        case (_, let task?): Text.printable(task)
        case (let name, nil):
            Text.printable(name ?? stage.mapLabel ?? "group") + " [\(memberSummary(stage))]"
        }
    }

    /// "3 members", or every member by state when there are more than are listed (a map's first
    /// 100): "150 members: 140 completed, 10 running".
    private func memberSummary(_ stage: StageView) -> String {
        let listed = stage.members?.count ?? 0
        let unstarted = stage.unstarted.map { "; \(Text.count($0, "element")) not started yet" } ?? ""
        guard let counts = stage.memberCounts?.additionalProperties, counts.values.reduce(0, +) > listed else {
            return Text.count(listed, "member") + unstarted
        }
        let states = counts.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }
            .map { "\($0.value) \($0.key)" }
        return Text.count(counts.values.reduce(0, +), "member") + ": " + states.joined(separator: ", ") + unstarted
    }

    private func details(of stage: StageView) -> [String] {
        var lines = progressLine(stage).map { [$0] } ?? []
        if let args = stage.args, args != [:] { lines.append("args " + Text.preview(args, limit: console.width)) }
        lines += stage.errors.flatMap(errorLines)
        if let members = stage.members {
            for (offset, member) in members.enumerated() {
                let last = offset == members.count - 1
                var line =
                    (last ? "└─ " : "├─ ") + "member \(member.index + 1)"
                    + (member.task.map { " " + Text.printable($0) } ?? "")
                    + (member.lane.map { " (lane \(Text.printable($0)))" } ?? "") + "  job \(member.id)  "
                line += console.state(member.state.rawValue) + "  " + Text.count(member.attempts, "attempt")
                if member.state == .completed { line += "  → " + Text.preview(member.output, limit: console.width) }
                lines.append(line)
                lines += member.errors.flatMap(errorLines).map { (last ? "     " : "│    ") + $0 }
            }
            let total = stage.memberCounts?.additionalProperties.values.reduce(0, +) ?? members.count
            if total > members.count {
                let (first, failed) = stage.listedMembers
                lines.append(
                    "   (the first \(first) of \(total) shown"
                        + (failed > 0 ? ", and \(failed) that failed after them)" : ")"))
            }
        }
        if stage.state == .completed, stage.members == nil {
            lines.append("→ " + Text.preview(stage.output, limit: console.width))
        }
        return lines
    }

    /// An attempt's error in full: wrapped, never cut.
    private func errorLines(_ error: AttemptErrorView) -> [String] {
        let head =
            "✗ attempt \(error.attempt)  \(Text.time(error.at))"
            + (error.worker.map { "  " + Text.printable($0) } ?? "")
            + (error.code.map { "  [" + Text.printable($0) + "]" } ?? "")
        let width = max(20, console.width - 12)
        return [console.paint(head, .red)] + wrap(Text.printable(error.error), width: width).map { "  " + $0 }
            + (error.details.map { ["  details " + Text.preview($0, limit: width)] } ?? [])
    }

    private func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            var word = Substring(word)
            while word.count > width {
                if !line.isEmpty {
                    lines.append(line)
                    line = ""
                }
                lines.append(String(word.prefix(width)))
                word = word.dropFirst(width)
            }
            if line.isEmpty {
                line = String(word)
            } else if line.count + 1 + word.count <= width {
                line += " " + word
            } else {
                lines.append(line)
                line = String(word)
            }
        }
        if !line.isEmpty || lines.isEmpty { lines.append(line) }
        return lines
    }

    /// Cut to the console's width, counting only visible characters (colour codes take none).
    private func fit(_ line: String) -> String {
        func isVisible(_ characters: some Sequence<Character>) -> [Bool] {
            var inEscape = false
            return characters.map { character in
                if character == "\u{1B}" { inEscape = true }
                defer { if inEscape, character == "m" { inEscape = false } }
                return !inEscape
            }
        }
        let characters = Array(line)
        let visible = isVisible(characters)
        guard visible.filter({ $0 }).count > console.width else { return line }
        var result = ""
        var shown = 0
        for (character, isShown) in zip(characters, visible) {
            if isShown {
                guard shown < console.width - 1 else { break }
                shown += 1
            }
            result.append(character)
        }
        return result + "…" + (console.color ? "\u{1B}[0m" : "")
    }
}
