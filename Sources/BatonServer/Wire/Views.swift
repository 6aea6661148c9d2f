import Baton
import BatonAPI
import BatonPostgres
import Foundation

// What the store returns, as the OpenAPI document's types show it.

extension Components.Schemas.Job {
    /// A job with every stage: state, attempts, output and errors.
    init(_ job: JobRecord, members: [MemberRecord] = []) {
        self.init(
            id: job.id, queue: job.queue, priority: job.priority, state: .init(job.state), runAt: job.runAt,
            createdAt: job.createdAt, finishedAt: job.finishedAt, metadata: job.metadata, input: job.input,
            output: job.output ?? .null, currentStage: job.stage,
            path: job.path.map { stage, run in
                .init(
                    stage: stage, name: job.chain.indices.contains(stage) ? job.chain[stage].name : nil,
                    attempts: run.attempts, startedAt: run.startedAt.flatMap(RFC3339.parse),
                    finishedAt: run.finishedAt.flatMap(RFC3339.parse), output: run.output)
            },
            stages: job.chain.indices.map { index in
                .init(index, of: job, members: members.filter { $0.stage == index })
            },
            idempotencyKey: job.idempotencyKey, fairKey: job.fairKey, fairWeight: job.fairWeight,
            parentId: job.parentID,
            waitingFor: job.waitingFor.map(Components.Schemas.WaitReason.init))
    }
}

extension Components.Schemas.WaitReason {
    init(_ reason: BatonPostgres.WaitReason) {
        self.init(
            reason: .init(rawValue: reason.kind.rawValue)!, message: reason.message, until: reason.until,
            job: reason.job)
    }
}

extension Components.Schemas.JobState {
    init(_ state: JobState) { self.init(rawValue: state.rawValue)! }
}

extension Components.Schemas.Stage {
    /// Where stage `index` stands: `pending` until the chain reaches it, then the job's state
    /// while it is the current stage, `completed` once passed (its last run shown), `skipped` when
    /// a `goto` or `finish` passed over it.
    fileprivate init(_ index: Int, of job: JobRecord, members: [MemberRecord]) {
        let spec = job.chain[index]
        let runs = job.path.filter { $0.stage == index }.map(\.result)
        let current = index == job.stage && job.state != .completed
        let result = current ? nil : runs.last
        let state: Components.Schemas.StageState
        let attempts: Int
        var startedAt: Date?
        if current {
            state = .init(rawValue: job.state.rawValue)!
            attempts = job.attempt
            if job.attempt > 0 { startedAt = job.attemptedAt }
        } else if let result {
            state = .completed
            attempts = result.attempts
            startedAt = result.startedAt.flatMap(RFC3339.parse)
        } else if index < job.stage || job.state == .completed {
            state = .skipped
            attempts = 0
        } else {
            state = .pending
            attempts = 0
        }
        var isGroup: Bool {
            switch spec.body {
            case .group, .map: true
            case .task, .await, .chain: false
            }
        }
        self.init(
            index: index, name: spec.name, task: spec.task?.task, args: spec.task?.args, _await: spec.awaited?.signal,
            map: spec.map.map { "{{\($0.path)}}" }, concurrency: spec.map?.concurrency,
            failures: spec.map.map { if case .continue = $0.failures { ._continue } else { .all } },
            stopAfter: spec.map.flatMap { if case .continue(let stop) = $0.failures { stop } else { nil } },
            lane: spec.lane, queue: spec.task?.queue, rate: spec.task?.rate, state: state,
            attempts: attempts, runs: runs.count,
            maxAttempts: spec.task?.retry.maxAttempts ?? spec.awaited?.maxAttempts, startedAt: startedAt,
            finishedAt: result?.finishedAt.flatMap(RFC3339.parse), output: result?.output ?? .null, log: result?.log,
            errors: job.errors.filter { $0.stage == index }.map(Components.Schemas.AttemptError.init),
            members: isGroup ? members.map(Components.Schemas.Member.init) : nil,
            memberCounts: job.memberCounts[index].map { counts in
                .init(additionalProperties: Dictionary(uniqueKeysWithValues: counts.map { ($0.rawValue, $1) }))
            },
            unstarted: job.unstartedElements[index],
            progress: job.progress.first { $0.stage == index }.map(Components.Schemas.StageProgress.init))
    }
}

extension Components.Schemas.StageProgress {
    fileprivate init(_ report: JobRecord.Progress) {
        self.init(
            fraction: report.progress.fraction, message: report.progress.message,
            checkpoint: report.progress.checkpoint, attempt: report.attempt, updatedAt: report.updatedAt)
    }
}

extension Components.Schemas.AttemptError {
    fileprivate init(_ error: JobRecord.AttemptError) {
        self.init(
            attempt: error.attempt, at: RFC3339.parse(error.at) ?? .distantPast, worker: error.worker,
            error: error.error, code: error.code, log: error.log, details: error.details)
    }
}

extension Components.Schemas.Member {
    fileprivate init(_ member: MemberRecord) {
        self.init(
            index: member.index, id: member.id, state: .init(member.state), attempts: member.attempt,
            output: member.output ?? .null, log: member.log,
            errors: member.errors.map(Components.Schemas.AttemptError.init),
            task: member.task, lane: member.lane)
    }
}

extension Components.Schemas.JobSummary {
    init(_ job: JobSummary) {
        self.init(
            id: job.id, queue: job.queue, priority: job.priority, state: .init(job.state), currentStage: job.stage,
            stageCount: job.stageCount, task: job.task, lane: job.lane, attempts: job.attempt, runAt: job.runAt,
            createdAt: job.createdAt, finishedAt: job.finishedAt, lastError: job.lastError)
    }
}

extension Components.Schemas.EnqueuedJob {
    init(_ job: EnqueuedJob, waitingFor: [BatonPostgres.WaitReason] = []) {
        self.init(
            id: job.id, queue: job.queue, state: .init(job.state), inserted: job.inserted,
            waitingFor: waitingFor.isEmpty ? nil : waitingFor.map(Components.Schemas.WaitReason.init))
    }
}

extension Components.Schemas.Queue {
    init(_ queue: QueueStatus, now: Date) {
        func count(_ state: JobState) -> Int { queue.counts[state] ?? 0 }
        self.init(
            name: queue.name, paused: queue.paused,
            counts: .init(
                scheduled: count(.scheduled), available: count(.available), running: count(.running),
                retryable: count(.retryable), waiting: count(.waiting), completed: count(.completed),
                discarded: count(.discarded), cancelled: count(.cancelled)),
            oldestAvailableAt: queue.oldestAvailable,
            oldestAvailableAgeSeconds: queue.oldestAvailable.map { max(0, now.timeIntervalSince($0)) },
            workers: queue.workers, unserved: queue.unserved, unservedTasks: queue.unservedTasks,
            fairShare: queue.fairShare.map { fair in
                .init(
                    keys: fair.keys, top: fair.top.map { .init(key: $0.key, stages: $0.stages) }, running: fair.running,
                    runningTop: fair.runningTop.map { .init(key: $0.key, stages: $0.stages) },
                    recentMinutes: Store.recentStartsMinutes, recentStarts: fair.recentStarts,
                    recentTop: fair.recentTop.map {
                        .init(key: $0.key, starts: $0.stages, share: fair.share(ofRecentStarts: $0.stages))
                    })
            }, fairKeyFrom: queue.fairShare?.keyFrom)
    }
}

extension Components.Schemas.Lane {
    init(_ lane: LaneStatus) {
        self.init(
            lane: lane.lane,
            head: lane.head.map { head in
                .init(
                    id: head.id, queue: head.queue, state: .init(head.state), stage: head.stage, task: head.task,
                    attempts: head.attempt, runAt: head.runAt, lastError: head.lastError)
            }, blocked: lane.head?.state == .retryable, held: lane.held, width: lane.width, waiting: lane.waiting)
    }
}

extension Components.Schemas.LaneSetting {
    init(_ setting: BatonPostgres.LaneSetting) {
        self.init(
            lane: setting.lane, width: setting.width, source: setting.source == .api ? .api : .settings,
            updatedAt: setting.updatedAt)
    }
}

extension Components.Schemas.Worker {
    init(_ worker: WorkerRecord) {
        self.init(
            id: worker.id, host: worker.host, pid: worker.pid, queues: worker.queues, tasks: worker.tasks,
            startedAt: worker.startedAt, lastHeartbeatAt: worker.heartbeatAt, runningJobs: worker.runningJobs,
            alive: worker.alive)
    }
}

extension Components.Schemas.RateLimit {
    init(_ limit: BatonPostgres.RateLimit) {
        self.init(
            key: limit.key, rate: limit.rate, per: DurationFormat.format(limit.per), burst: limit.burst,
            tokens: limit.tokens, source: limit.source == .api ? .api : .settings, updatedAt: limit.updatedAt)
    }
}
