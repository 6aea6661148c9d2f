import Baton
import BatonAPI
import Foundation
import Hummingbird

/// `/ui/jobs/ID`: the chain drawn left to right (a group as fan-out and fan-in, lanes named, each
/// stage coloured by its state, the current one marked), why it is not running, every attempt
/// with its error in full, and the input, metadata, each stage's args and outputs as JSON. Admins cancel, retry and
/// delete it here. A job that has not finished refreshes itself as its stages advance.
extension Dashboard {
    struct JobView: Sendable {
        struct Reason: Sendable {
            var message: String
            var link: String?
        }

        struct Node: Sendable {
            struct Member: Sendable {
                var label: String
                var link: String
                var state: String
            }

            var label: String
            var lane: String?
            var state: String
            var current: Bool
            var arrow: Bool
            var members: [Member]
            var isGroup: Bool
            /// "150,000 members: 149,990 completed, 10 running", when not all are listed.
            var memberCounts: String?
        }

        struct Stage: Sendable {
            /// A point on the stage's timeline: a failed attempt (with its error in full), or the
            /// attempt that is running or completed it.
            struct Attempt: Sendable {
                /// `failed`, `running` or `completed`, also its CSS class.
                var outcome: String
                /// "Attempt 2 failed at …", "Attempt 3 completed in 12 ms, started …".
                var summary: String
                var worker: String?
                var error: String?
                /// The failure's code and details, when the task gave them.
                var code: String?
                var details: String?
                /// What its task logged (``StageLog`` in the worker).
                var log: String? = nil
            }

            var number: Int
            var label: String
            var task: String?
            /// The signal an await stage waits for.
            var signal: String?
            /// An admin may deliver it here.
            var canSignal: Bool
            var lane: String?
            var laneLink: String?
            /// The stage's own queue, when it names one (not `queue`: a stage without one must not
            /// show the job's).
            var ownQueue: String?
            var state: String
            var attempts: String
            /// Runs, for a stage that repeated.
            var runs: Int?
            var started: String?
            var took: String?
            /// What the task is configured with; none for a group or empty args.
            var args: String?
            /// Not `output`: a stage without one must not show the job's.
            var stageOutput: String?
            var timeline: [Attempt]
            var members: [Node.Member]
            var memberCounts: String?
            /// "Members", or "The first 100 members" when not all are listed.
            var membersHeading: String
            var progress: Progress?
        }

        /// What the stage's task last reported.
        struct Progress: Sendable {
            /// The fraction for `<progress value>` ("0.4"); none: the bar is indeterminate.
            var value: String?
            /// "40%".
            var percent: String?
            var message: String?
            /// Shown while the stage has not completed.
            var live: Bool
            var attempt: Int
            var updated: String
            var checkpoint: String?
        }

        var id: String
        var state: String
        var finished: Bool
        var queue: String
        var queueLink: String
        var priority: Int
        var created: String
        var createdAt: String
        var ended: String?
        var runAt: String?
        /// What `runAt` is: when the job runs, or, for an await stage, the deadline of its signal.
        var runAtLabel: String
        var idempotencyKey: String?
        /// The key its stages take turns under in fair queues.
        var fairKey: String?
        /// Its stages' weight under that key, when not the default.
        var fairWeight: String?
        var parent: String?
        var waiting: [Reason]
        var chain: [Node]
        /// The path taken when a `goto`, `finish` or `repeat` made it other than the chain's order
        /// (`count ×3 → last`).
        var path: String?
        var stages: [Stage]
        var input: String
        var metadata: String?
        var output: String?
        var canCancel: Bool
        var canRetry: Bool
        /// A scheduled or retryable job: its stage can run now instead of at its due time.
        var canRetryNow: Bool
        /// Not running nor finished: it can be discarded with a reason, its lane moving on.
        var canSkip: Bool
        var canDelete: Bool
    }

    func job(_ request: Request, id text: String) async throws -> Response {
        let session = try await session(request, section: .jobs)
        guard let id = Int64(text), id > 0 else { throw DashboardError.refused(.notFound, "There is no job \(text).") }
        let job = try await asCaller(session, ["getJob"]) {
            try await api.getJob(.init(path: .init(id: id))).ok.body.json
        }
        let view = Self.view(job, now: Date())
        return page("job", title: "Job \(job.id)", section: .jobs, session: session, notice: Self.notice(request), view)
    }

    /// `POST /ui/jobs/ID/cancel`, `/retry`, `/skip` (with a `reason`) or `/delete`, then back to
    /// the job (or, once deleted, the list).
    func act(_ request: Request, id text: String, action: String) async throws -> Response {
        let session = try await session(request)
        let form = try await postedForm(request, session: session)
        guard let id = Int64(text), id > 0 else { throw DashboardError.refused(.notFound, "There is no job \(text).") }
        if action == "signal" { return try await signal(form, to: id, session: session) }
        if action == "skip" {
            let reason = (form["reason"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            guard !reason.isEmpty else { throw DashboardError.refused(.badRequest, "Say why the job is skipped.") }
            try await asCaller(session, ["skipJob"]) {
                _ = try await api.skipJob(.init(path: .init(id: id), body: .json(.init(reason: reason)))).ok
            }
            return Self.redirect("/ui/jobs/\(id)?done=skip&what=\(id)")
        }
        try await asCaller(session, [Self.operation(of: action)]) { try await perform(action, on: id) }
        return Self.redirect(
            action == "delete" ? "/ui/jobs?done=delete&what=\(id)" : "/ui/jobs/\(id)?done=\(action)&what=\(id)")
    }

    /// `POST /ui/jobs/ID/signal` (`name`, `payload` as JSON, empty for null): delivers the signal
    /// an await stage waits for, as `POST /v1/jobs/{id}/signals/{name}` does.
    private func signal(_ form: DashboardForm, to id: Int64, session: DashboardSessions.Session) async throws
        -> Response
    {
        let name = form["name"] ?? ""
        let text = form["payload"].map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
        let payload: JSONValue
        do {
            payload = text.isEmpty ? .null : try JSONValue(parsing: text)
        } catch {
            throw DashboardError.refused(.badRequest, "The payload is not JSON: \(error)")
        }
        let receipt = try await asCaller(session, ["deliverSignal"]) {
            try await api.deliverSignal(
                .init(path: .init(id: id, name: name), query: .init(), body: .json(payload))
            ).ok.body.json
        }
        return Self.redirect("/ui/jobs/\(id)?done=signal-\(receipt.outcome.rawValue)&what=\(id)")
    }

    /// Waiting at an await stage: its `run_at` is when the wait for the signal runs out.
    static func awaitsSignal(_ job: Components.Schemas.Job) -> Bool {
        job.state == .waiting && job.stages.indices.contains(job.currentStage)
            && job.stages[job.currentStage]._await != nil
    }

    /// What `skip_job` takes: not running nor finished, not a group member, not a group stage
    /// waiting for its members.
    static func canSkip(_ job: Components.Schemas.Job) -> Bool {
        guard job.parentId == nil else { return false }
        switch job.state {
        case .scheduled, .available, .retryable: return true
        case .waiting:
            return job.stages.indices.contains(job.currentStage) && job.stages[job.currentStage].members == nil
        default: return false
        }
    }

    /// Each failed attempt of `stage`, then the one running or that completed it.
    static func timeline(_ stage: Components.Schemas.Stage) -> [JobView.Stage.Attempt] {
        var points = stage.errors.map {
            JobView.Stage.Attempt(
                outcome: "failed", summary: "Attempt \($0.attempt) failed at \(DashboardText.time($0.at))",
                worker: $0.worker, error: $0.error, code: $0.code, details: $0.details.map { DashboardText.json($0) },
                log: $0.log)
        }
        guard let start = stage.startedAt, stage.members == nil else { return points }
        let started = DashboardText.time(start)
        switch (stage.state, stage.finishedAt) {
        case (.running, _):
            points.append(.init(outcome: "running", summary: "Attempt \(stage.attempts) running since \(started)"))
        case (.completed, let end?):
            let took = DashboardText.span(end.timeIntervalSince(start))
            points.append(
                .init(
                    outcome: "completed", summary: "Attempt \(stage.attempts) completed in \(took), started \(started)",
                    log: stage.log))
        default: break
        }
        return points
    }

    static func view(_ job: Components.Schemas.Job, now: Date) -> JobView {
        let finished = ["completed", "discarded", "cancelled"].contains(job.state.rawValue)
        func label(_ stage: Components.Schemas.Stage) -> String {
            stage.name ?? stage.task ?? stage._await.map { "await \($0)" } ?? stage.mapLabel
                ?? "group"
        }
        func members(_ stage: Components.Schemas.Stage) -> [JobView.Node.Member] {
            (stage.members ?? []).map {
                JobView.Node.Member(
                    label: "member \($0.index + 1)" + ($0.task.map { ": \($0)" } ?? "")
                        + ($0.lane.map { " (lane \($0))" } ?? ""),
                    link: "/ui/jobs/\($0.id)", state: $0.state.rawValue)
            }
        }
        /// Every member counted by state, for a stage that has more than are listed.
        func memberCounts(_ stage: Components.Schemas.Stage) -> String? {
            guard let counts = stage.memberCounts?.additionalProperties,
                counts.values.reduce(0, +) > (stage.members?.count ?? 0) || stage.unstarted != nil
            else { return nil }
            let total = counts.values.reduce(0, +)
            let states = counts.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }
                .map { "\($0.value) \($0.key)" }
            return "\(total) members: " + states.joined(separator: ", ")
                + (stage.unstarted.map { "; \($0) elements not started yet" } ?? "")
        }
        /// "The first 100 members", and how many that failed after them are listed too.
        func partialHeading(_ stage: Components.Schemas.Stage) -> String {
            let (first, failed) = stage.listedMembers
            return "The first \(first) members" + (failed > 0 ? ", and \(failed) that failed after them" : "")
        }
        let chain = job.stages.map { stage in
            JobView.Node(
                label: label(stage), lane: stage.lane, state: stage.state.rawValue,
                current: stage.index == job.currentStage && !finished, arrow: stage.index > 0, members: members(stage),
                isGroup: stage.members != nil, memberCounts: memberCounts(stage))
        }
        let stages = job.stages.map { stage in
            JobView.Stage(
                number: stage.index + 1, label: label(stage), task: stage.task, signal: stage._await,
                canSignal: stage._await != nil && stage.state != .completed && !finished, lane: stage.lane,
                laneLink: stage.lane.map { "/ui/jobs?lane=" + query($0) }, ownQueue: stage.queue,
                state: stage.state.rawValue,
                attempts: stage.maxAttempts.map { "\(stage.attempts) of \($0)" } ?? "\(stage.attempts)",
                runs: stage.runs > 1 ? stage.runs : nil,
                started: stage.startedAt.map { DashboardText.time($0) },
                took: stage.startedAt.flatMap { start in
                    stage.finishedAt.map { DashboardText.span($0.timeIntervalSince(start)) }
                },
                args: stage.args.flatMap { $0 == [:] ? nil : DashboardText.json($0) },
                stageOutput: stage.state == .completed ? DashboardText.json(stage.output) : nil,
                timeline: timeline(stage), members: members(stage), memberCounts: memberCounts(stage),
                membersHeading: memberCounts(stage) == nil ? "Members" : partialHeading(stage),
                progress: stage.progress.map { progress in
                    JobView.Progress(
                        value: progress.fraction.map { "\($0)" },
                        percent: progress.fraction.map { "\(Int(($0 * 100).rounded(.down)))%" },
                        message: progress.message, live: stage.state != .completed, attempt: progress.attempt,
                        updated: DashboardText.time(progress.updatedAt),
                        checkpoint: progress.checkpoint.map { DashboardText.json($0) })
                })
        }
        return JobView(
            id: "\(job.id)", state: job.state.rawValue, finished: finished, queue: job.queue,
            queueLink: "/ui/jobs?queue=" + query(job.queue), priority: job.priority,
            created: DashboardText.relative(job.createdAt, now: now), createdAt: DashboardText.time(job.createdAt),
            ended: job.finishedAt.map { DashboardText.time($0) },
            runAt: job.runAt > now && !finished
                ? DashboardText.time(job.runAt) + " (" + DashboardText.relative(job.runAt, now: now) + ")" : nil,
            runAtLabel: awaitsSignal(job) ? "Signal due by" : "Runs",
            idempotencyKey: job.idempotencyKey, fairKey: job.fairKey,
            fairWeight: job.fairWeightText,
            parent: job.parentId.map { "/ui/jobs/\($0)" },
            waiting: job.waitingFor.map { reason in
                JobView.Reason(message: reason.message, link: reason.job.map { "/ui/jobs/\($0)" })
            }, chain: chain, path: job.takenPath.map { $0.map(\.description).joined(separator: " → ") },
            stages: stages, input: DashboardText.json(job.input),
            metadata: job.metadata == [:] ? nil : DashboardText.json(job.metadata),
            output: job.state == .completed ? DashboardText.json(job.output) : nil, canCancel: !finished,
            canRetry: (job.state == .discarded || job.state == .cancelled) && job.parentId == nil,
            canRetryNow: job.state == .scheduled || job.state == .retryable,
            canSkip: canSkip(job),
            canDelete: finished && job.parentId == nil)
    }
}
