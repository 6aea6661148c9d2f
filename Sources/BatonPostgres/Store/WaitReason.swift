import Baton
import Foundation

/// Why a job that has not finished is not running now: what `GET /v1/jobs/{id}` answers as
/// `waiting_for`, `baton jobs show` prints and the dashboard shows. A job may have several (a
/// scheduled job in a paused queue); an available job with none is simply next in line.
public struct WaitReason: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Its queue is paused.
        case queuePaused = "queue-paused"
        /// No live worker serves its queue: a misspelled queue, or every worker is gone.
        case noWorker = "no-worker"
        /// Live workers serve its queue, but none runs its current stage's task.
        case noWorkerForTask = "no-worker-for-task"
        /// Live workers serve its queue, but none reads a feature its chain uses (workers of an
        /// earlier version, during a rolling upgrade).
        case noWorkerForFeature = "no-worker-for-feature"
        /// It is scheduled for later (``until``).
        case scheduled
        /// An attempt failed; the next is due at ``until``.
        case retry
        /// It waits in its stage's lane behind the lane's head (``job``).
        case lane
        /// Its group stage waits for its members, each a job with reasons of its own.
        case members
        /// Its await stage waits for a signal from outside, until ``until``.
        case signal
        /// Its task snoozed: it runs again at ``until``, no attempt spent.
        case snoozed
        /// Its stage's rate limit key has no token; the next comes at ``until``.
        case rateLimited = "rate-limited"
        /// Its queue takes several fairness keys' stages in turns, and its key waits for its turns.
        case fairShare = "fair-share"
    }

    public var kind: Kind
    /// One sentence for people.
    public var message: String
    /// When it may run: the scheduled time, the next attempt, a retrying lane head's next attempt;
    /// for a signal, when the wait runs out.
    public var until: Date?
    /// The job it waits for: the lane's head.
    public var job: Int64?

    public init(kind: Kind, message: String, until: Date? = nil, job: Int64? = nil) {
        self.kind = kind
        self.message = message
        self.until = until
        self.job = job
    }
}

/// What the database knows around one job, from which its ``WaitReason``s follow: read with the
/// job in one statement (`Store.job`), or from the control plane's cache of live workers when
/// it answers an enqueue.
package struct WaitFacts: Sendable, Hashable {
    /// A holder of the lane: one waiting to retry if any, else the oldest.
    package struct LaneHead: Sendable, Hashable {
        package var id: Int64
        package var state: JobState
        package var runAt: Date
        /// How many hold the lane (more than one in a wider lane).
        package var held = 1
    }

    package var queuePaused: Bool
    /// Live workers (heartbeat within their lease) that serve the job's queue.
    package var queueWorkers: Int
    /// Of those, the ones that run the job's current task.
    package var taskWorkers: Int
    /// The chain features the job uses, and how many of the queue's live workers read them all.
    package var features: [String] = []
    package var featureWorkers = 0
    /// The job holding the lane the job waits in, if known.
    package var laneHead: LaneHead? = nil
    /// Jobs waiting in that lane ahead of this one.
    package var laneAhead = 0
    /// For a lane holder waiting to retry, the jobs waiting in its lane meanwhile.
    package var laneBehind = 0
    /// Group members of the current stage that have not finished.
    package var pendingMembers: Int? = nil
    /// Its task snoozed (the job is `retryable` without a failure).
    package var snoozed = false
    /// The rate limit of its stage's key, when it is available and has one.
    package var rateLimit: RateLimitFacts? = nil
    /// Its turns in a fair queue, when it is available in one.
    package var fairShare: FairShareFacts? = nil

    package struct FairShareFacts: Sendable, Hashable {
        /// Keys with stages waiting in the queue, its own included, up to ``FairShareFacts/countedKeys`` + 1.
        package var keys: Int
        /// Its key's stages waiting there, itself included, up to ``FairShareFacts/countedStages`` + 1.
        package var stages: Int
        /// Where the queue takes the key of a job that names none (``FairKeySource``), if it does.
        package var keyFrom: String? = nil
        /// How far the look-ups count: a job's page stays cheap under a flood of any size.
        package static let countedKeys = 100
        package static let countedStages = 10_000
    }

    package struct RateLimitFacts: Sendable, Hashable {
        package var key: String
        package var rate: Int
        package var per: Duration
        /// In the bucket now.
        package var tokens: Double
        /// Until the next whole token (when `tokens` < 1).
        package var nextIn: Duration
    }

    package init(
        queuePaused: Bool, queueWorkers: Int, taskWorkers: Int, laneHead: LaneHead? = nil, laneAhead: Int = 0,
        laneBehind: Int = 0, pendingMembers: Int? = nil, snoozed: Bool = false, rateLimit: RateLimitFacts? = nil
    ) {
        self.queuePaused = queuePaused
        self.queueWorkers = queueWorkers
        self.taskWorkers = taskWorkers
        self.laneHead = laneHead
        self.laneAhead = laneAhead
        self.laneBehind = laneBehind
        self.pendingMembers = pendingMembers
        self.snoozed = snoozed
        self.rateLimit = rateLimit
    }
}

extension WaitReason {
    /// The reasons `job` is not running, most lasting first: what blocks it until someone acts
    /// (a paused queue, no worker), then what ends by itself (a schedule, a retry, a lane).
    package static func reasons(for job: JobRecord, facts: WaitFacts) -> [WaitReason] {
        switch job.state {
        case .scheduled, .available, .retryable, .waiting: break
        case .running, .completed, .discarded, .cancelled: return []
        }
        if job.state == .waiting, let pending = facts.pendingMembers, pending > 0 {
            let members = pending == 1 ? "1 group member has" : "\(pending) group members have"
            return [WaitReason(kind: .members, message: "\(members) not finished")]
        }
        if job.state == .waiting, job.lane == nil, let awaited = job.chain[safe: job.stage]?.awaited {
            return [
                WaitReason(
                    kind: .signal,
                    message: "awaits signal \(quoted(awaited.signal)) until \(RFC3339.format(job.runAt))",
                    until: job.runAt)
            ]
        }
        let queue = quoted(job.queue)
        var reasons: [WaitReason] = []
        if facts.queuePaused {
            reasons.append(WaitReason(kind: .queuePaused, message: "queue \(queue) is paused"))
        }
        if facts.queueWorkers == 0 {
            reasons.append(WaitReason(kind: .noWorker, message: "no live worker serves queue \(queue)"))
        } else if facts.taskWorkers == 0, let task = job.currentTask {
            reasons.append(
                WaitReason(
                    kind: .noWorkerForTask,
                    message: "no live worker serving queue \(queue) runs task \(quoted(task))"))
        } else if !facts.features.isEmpty, facts.featureWorkers == 0 {
            let features = facts.features.map(quoted).joined(separator: ", ")
            reasons.append(
                WaitReason(
                    kind: .noWorkerForFeature,
                    message: "no live worker serving queue \(queue) reads its chain (it uses \(features)); "
                        + "workers of an earlier version are to be upgraded"))
        }
        switch job.state {
        case .scheduled:
            reasons.append(
                WaitReason(kind: .scheduled, message: "scheduled for \(RFC3339.format(job.runAt))", until: job.runAt))
        case .retryable where facts.snoozed:
            reasons.append(
                WaitReason(
                    kind: .snoozed,
                    message: "its task snoozed; it runs again at \(RFC3339.format(job.runAt)) (no attempt spent)",
                    until: job.runAt))
        case .retryable:
            let error = job.lastError.map { ": \(firstLine($0))" } ?? ""
            reasons.append(
                WaitReason(
                    kind: .retry,
                    message: "attempt \(job.attempt) failed\(error); the next is due at \(RFC3339.format(job.runAt))"
                        + holding(job.lane, behind: facts.laneBehind),
                    until: job.runAt))
        case .waiting where job.lane != nil:
            reasons.append(laneReason(job.lane ?? "", facts: facts))
        case .available:
            if let fair = facts.fairShare, fair.keys > 1 {
                reasons.append(fairShareReason(job, fair))
            }
            if let limit = facts.rateLimit, limit.tokens < 1 {
                let next = Date().addingTimeInterval(Double(limit.nextIn.milliseconds) / 1000)
                reasons.append(
                    WaitReason(
                        kind: .rateLimited,
                        message: "waits for a token of rate limit \(quoted(limit.key)) (\(limit.rate) per "
                            + "\(DurationFormat.format(limit.per))); the next comes at \(RFC3339.format(next))",
                        until: next))
            }
        default: break
        }
        return reasons
    }

    /// Waiting for its key's turns among others'.
    private static func fairShareReason(_ job: JobRecord, _ fair: WaitFacts.FairShareFacts) -> WaitReason {
        typealias Counted = WaitFacts.FairShareFacts
        let keys = fair.keys > Counted.countedKeys ? "more than \(Counted.countedKeys)" : "\(fair.keys)"
        let stages = fair.stages > Counted.countedStages ? "more than \(Counted.countedStages)" : "\(fair.stages)"
        let key =
            job.fairKey.map { "its key \(quoted($0))" }
            ?? (fair.keyFrom.map { "it has no key at \($0), so the key \"\" of stages without one" }
                ?? "the key \"\" of stages without one")
        return WaitReason(
            kind: .fairShare,
            message: "queue \(quoted(job.queue)) takes the stages of \(keys) keys in turns (fair share); \(key) has "
                + "\(stages) stages waiting, this one among them")
    }

    /// What a lane holder waiting to retry keeps waiting, and how to let it go.
    private static func holding(_ lane: String?, behind: Int) -> String {
        guard let lane, behind > 0 else { return "" }
        let jobs = behind == 1 ? "1 job waits" : "\(behind) jobs wait"
        return "; it keeps its place in lane \(quoted(lane)), where \(jobs) behind it (retry it to run it now, "
            + "skip it to let them go)"
    }

    private static func laneReason(_ lane: String, facts: WaitFacts) -> WaitReason {
        let more = facts.laneAhead > 0 ? " and \(facts.laneAhead) more waiting ahead" : ""
        guard let head = facts.laneHead else {
            return WaitReason(kind: .lane, message: "waits for its turn in lane \(quoted(lane))\(more)")
        }
        let others = head.held > 1 ? " and \(head.held - 1) more holding it" : ""
        switch head.state {
        case .retryable:
            return WaitReason(
                kind: .lane,
                message: "waits in lane \(quoted(lane)) behind job \(head.id)\(others)\(more); job \(head.id) failed "
                    + "and retries at \(RFC3339.format(head.runAt)) (its place moves on when it succeeds, is "
                    + "discarded or cancelled)",
                until: head.runAt, job: head.id)
        default:
            return WaitReason(
                kind: .lane,
                message: "waits in lane \(quoted(lane)) behind job \(head.id) (\(head.state))\(others)\(more)",
                job: head.id)
        }
    }

    private static func quoted(_ name: String) -> String { "\"\(name)\"" }

    private static func firstLine(_ text: String) -> String {
        let line = text.prefix(while: { $0 != "\n" })
        return line.count > 200 ? line.prefix(200) + "…" : String(line)
    }
}

extension Array {
    fileprivate subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}

extension JobRecord {
    /// The task of the current stage; nil for a group stage.
    package var currentTask: String? {
        guard chain.indices.contains(stage), case .task(let task) = chain[stage].body else { return nil }
        return task.task
    }
}

/// The workers the control plane has seen and the paused queues (``Store/workersServing(within:)``).
package struct WorkersServing: Sendable {
    package struct Worker: Sendable {
        package var queues: [String]
        package var tasks: Set<String>
        /// Its last heartbeat is within its lease.
        package var live: Bool
    }

    package var workers: [Worker]
    package var paused: Set<String>

    /// The tasks these workers serve, live or seen within the window.
    package var tasks: Set<String> { workers.reduce(into: []) { $0.formUnion($1.tasks) } }

    /// The ``WaitFacts`` of a new job in `queue` whose first task is `task` (nil: a group), as far
    /// as they are known without reading the job: not its lane's head.
    package func facts(queue: String, task: String?) -> WaitFacts {
        let serving = workers.filter { $0.live && $0.queues.contains(queue) }
        return WaitFacts(
            queuePaused: paused.contains(queue), queueWorkers: serving.count,
            taskWorkers: task.map { task in serving.filter { $0.tasks.contains(task) }.count } ?? serving.count)
    }
}
