import Baton
import BatonAPI
import BatonPostgres
import Foundation

// How the control plane shows what the store returns: the shared wire types (`BatonAPI`), which
// the CLI decodes, made from the store's records.

extension JobView {
    /// A job with every stage: state, attempts, output and errors.
    init(_ job: JobRecord, members: [MemberRecord] = []) {
        self.init(
            id: job.id, queue: job.queue, priority: job.priority, state: job.state, runAt: job.runAt,
            createdAt: job.createdAt, finishedAt: job.finishedAt, metadata: job.metadata, input: job.input,
            output: job.output ?? .null, currentStage: job.stage,
            stages: job.chain.indices.map { index in
                StageView(index, of: job, members: members.filter { $0.stage == index })
            },
            idempotencyKey: job.idempotencyKey, parentID: job.parentID)
    }
}

extension StageView {
    fileprivate init(_ index: Int, of job: JobRecord, members: [MemberRecord]) {
        let spec = job.chain[index]
        let finished = index < job.stage || (index == job.stage && job.state == .completed)
        let result = finished && job.results.indices.contains(index) ? job.results[index] : nil
        let state: StageState
        let attempts: Int
        var startedAt: Date?
        if finished {
            state = .completed
            attempts = result?.attempts ?? 0
            startedAt = result?.startedAt.flatMap(RFC3339.parse)
        } else if index == job.stage {
            state = StageState(job.state)
            attempts = job.attempt
            if job.attempt > 0 { startedAt = job.attemptedAt }
        } else {
            state = .pending
            attempts = 0
        }
        var isGroup: Bool { if case .group = spec.body { true } else { false } }
        self.init(
            index: index, name: spec.name, task: spec.task?.task, lane: spec.lane, state: state, attempts: attempts,
            maxAttempts: spec.task?.retry.maxAttempts, startedAt: startedAt,
            finishedAt: result?.finishedAt.flatMap(RFC3339.parse), output: result?.output ?? .null,
            errors: job.errors.filter { $0.stage == index }.map(AttemptErrorView.init),
            members: isGroup ? members.map(MemberView.init) : nil)
    }
}

extension AttemptErrorView {
    fileprivate init(_ error: JobRecord.AttemptError) {
        self.init(
            attempt: error.attempt, at: RFC3339.parse(error.at) ?? .distantPast, worker: error.worker,
            error: error.error)
    }
}

extension MemberView {
    fileprivate init(_ member: MemberRecord) {
        self.init(
            index: member.index, id: member.id, state: member.state, attempts: member.attempt,
            output: member.output ?? .null, errors: member.errors.map(AttemptErrorView.init))
    }
}

extension JobSummaryView {
    init(_ job: JobSummary) {
        self.init(
            id: job.id, queue: job.queue, priority: job.priority, state: job.state, currentStage: job.stage,
            stageCount: job.stageCount, task: job.task, lane: job.lane, attempts: job.attempt, runAt: job.runAt,
            createdAt: job.createdAt, finishedAt: job.finishedAt, lastError: job.lastError)
    }
}

extension EnqueuedJobView {
    init(_ job: EnqueuedJob) {
        self.init(id: job.id, queue: job.queue, state: job.state, inserted: job.inserted)
    }
}

extension QueueView {
    init(_ queue: QueueStatus, now: Date) {
        var counts = Counts()
        for (state, count) in queue.counts { counts[state] = count }
        self.init(
            name: queue.name, paused: queue.paused, counts: counts, oldestAvailableAt: queue.oldestAvailable,
            oldestAvailableAgeSeconds: queue.oldestAvailable.map { max(0, now.timeIntervalSince($0)) })
    }
}

extension LaneView {
    init(_ lane: LaneStatus) {
        self.init(
            lane: lane.lane,
            head: lane.head.map { head in
                Head(
                    id: head.id, queue: head.queue, state: head.state, stage: head.stage, task: head.task,
                    attempts: head.attempt, runAt: head.runAt, lastError: head.lastError)
            }, waiting: lane.waiting)
    }
}

extension WorkerView {
    init(_ worker: WorkerRecord) {
        self.init(
            id: worker.id, host: worker.host, pid: worker.pid, queues: worker.queues, tasks: worker.tasks,
            startedAt: worker.startedAt, lastHeartbeatAt: worker.heartbeatAt, runningJobs: worker.runningJobs)
    }
}
