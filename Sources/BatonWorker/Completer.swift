import Baton
import BatonPostgres
import Logging
import ServiceLifecycle
import Synchronization

/// Writes decided outcomes to the database in batches: whatever has arrived is flushed in one
/// statement as soon as a flusher is free, so a busy worker writes large batches and an idle one
/// writes at once. Two flushers: while one batch is being written, what arrives meanwhile goes
/// out in a second, so that an outcome waits for at most one batch before its own (a lane hands
/// over as fast as its outcomes commit; the lane locks in `apply_outcomes_for` serialise what must
/// be). A third flusher only splits the batches further, and a single one makes each lane wait a
/// batch longer (docs/benchmarks.md#one-two-or-three-outcome-flushers-for-lanes). A job has
/// at most one outcome in flight, so the two batches never share a job; should they deadlock over
/// a group's parent (one failing a member whose sibling the other completes), PostgreSQL aborts
/// one, which is written again like any batch that could not be.
///
/// A submitter either waits for its outcome to commit (a hop must, before the next stage starts)
/// or goes on at once, freeing its slot while the batch is written; past `limit` buffered outcomes
/// every submitter waits (back-pressure).
///
/// On graceful shutdown it writes what it holds and returns (the ``StageRunner``, shut down before
/// it, has no stage left to submit), trying for at most ``finishing`` while the database does not
/// take them: what it could not write is logged with the jobs' ids, and those stages run again
/// once the lease has passed (``Rescuer``). Cancelled, it leaves the rest to the lease likewise.
final class Completer: Service, Sendable {
    /// What became of an outcome its submitter waited for.
    enum Committed: Equatable {
        /// It took effect: a hop's next stage is this worker's to run.
        case applied
        /// A hop took effect as an advance: the next stage's queue is rate limited as a whole, so
        /// it starts with a token, which only a claim takes.
        case handedOn
        /// The job was no longer this worker's to finish (cancelled, or rescued after a lost lease).
        case notApplied

        init(_ job: Int64, in result: AppliedOutcomes) {
            if !result.applied.contains(job) {
                self = .notApplied
            } else {
                self = result.handedOn.contains(job) ? .handedOn : .applied
            }
        }
    }

    private struct Pending {
        var outcome: Outcome
        var done: CheckedContinuation<Committed, Never>?
    }

    private struct State {
        var buffer: [Pending] = []
        var finished = false
        /// When, after `finish()`, a write the database does not take is given up.
        var giveUpAt: ContinuousClock.Instant?
        /// Submitters held back while the buffer is over its limit.
        var held: [CheckedContinuation<Void, Never>] = []
        /// The jobs of the batch each flusher is writing.
        var writing: [[Int64]]
    }

    let store: Store
    let workerID: String
    /// The tasks this worker runs (nil: any): a promoted lane holder of another task is not taken.
    let tasks: [String]?
    let logger: Logger
    let limit: Int
    /// How long, once shutting down, outcomes the database does not take are tried again.
    let finishing: Duration
    /// Reserves free slots in a queue for lane holders this worker may claim while applying
    /// outcomes, and hands them over (with the count reserved) afterwards.
    let reserve: @Sendable (_ queue: String, _ count: Int) -> Int
    let deliver: @Sendable (_ queue: String, _ jobs: [ClaimedJob], _ reserved: Int) -> Void
    /// Called after each commit with what it made available and finished.
    let afterCommit: @Sendable (AppliedOutcomes) -> Void
    private let state: Mutex<State>
    /// One per flusher: each outcome wakes them all, and the first free one takes the buffer.
    private let signals: [WakeUp]

    init(
        store: Store, workerID: String, tasks: [String]? = nil, logger: Logger, limit: Int = 10_000,
        finishing: Duration = .seconds(1),
        reserve: @escaping @Sendable (_ queue: String, _ count: Int) -> Int = { _, _ in 0 },
        deliver: @escaping @Sendable (_ queue: String, _ jobs: [ClaimedJob], _ reserved: Int) -> Void = { _, _, _ in },
        flushers: Int = 2, afterCommit: @escaping @Sendable (AppliedOutcomes) -> Void
    ) {
        self.state = Mutex(State(writing: Array(repeating: [], count: flushers)))
        self.signals = (0..<flushers).map { _ in WakeUp() }
        self.store = store
        self.workerID = workerID
        self.tasks = tasks
        self.logger = logger
        self.limit = limit
        self.finishing = finishing
        self.reserve = reserve
        self.deliver = deliver
        self.afterCommit = afterCommit
    }

    /// Jobs whose outcome is buffered or being written: still this worker's in the database.
    var pendingJobs: [Int64] {
        state.withLock { state in state.buffer.map(\.outcome.jobID) + state.writing.joined() }
    }

    /// Slots reserved for the lane holders `outcomes` may hand on, per queue.
    private func reserveSlots(for outcomes: [Outcome]) -> [String: Int] {
        var wanted: [String: Int] = [:]
        for outcome in outcomes where outcome.mayReleaseLane {
            if let queue = outcome.queue { wanted[queue, default: 0] += 1 }
        }
        var reserved: [String: Int] = [:]
        for (queue, count) in wanted {
            let got = reserve(queue, count)
            if got > 0 { reserved[queue] = got }
        }
        return reserved
    }

    private func handOver(_ claimed: [ClaimedJob], reserved: [String: Int]) {
        let byQueue = Dictionary(grouping: claimed, by: \.queue)
        for (queue, count) in reserved {
            deliver(queue, byQueue[queue] ?? [], count)
        }
    }

    /// Queues `outcome` and returns once it is committed, with what became of it.
    func submitAndWait(_ outcome: Outcome) async -> Committed {
        await withCheckedContinuation { continuation in
            let accepted = state.withLock { state -> Bool in
                guard !state.finished else { return false }
                state.buffer.append(Pending(outcome: outcome, done: continuation))
                return true
            }
            if accepted { wake() } else { continuation.resume(returning: .notApplied) }
        }
    }

    /// Queues `outcome`; returns at once unless the buffer is over its limit.
    func submit(_ outcome: Outcome) async {
        let full = state.withLock { state -> Bool in
            state.buffer.append(Pending(outcome: outcome, done: nil))
            return state.buffer.count > limit
        }
        wake()
        if full {
            await withCheckedContinuation { continuation in
                let release = state.withLock { state -> Bool in
                    if state.buffer.count <= limit || state.finished { return true }
                    state.held.append(continuation)
                    return false
                }
                if release { continuation.resume() }
            }
        }
    }

    private func wake() {
        for signal in signals { signal.signal() }
    }

    func run() async {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                for flusher in self.signals.indices {
                    group.addTask { await self.flushUntilFinished(flusher) }
                }
            }
        } onGracefulShutdown: {
            self.finish()
        }
    }

    /// Flushes until `finish()` is called and the buffer is empty, or until cancelled (then what
    /// is left unwritten is left to the lease: the rescuer retries those stages).
    private func flushUntilFinished(_ flusher: Int) async {
        while !Task.isCancelled {
            let batch = state.withLock { state -> [Pending]? in
                state.writing[flusher] = []
                if state.buffer.isEmpty { return state.finished ? nil : [] }
                defer { state.buffer.removeAll(keepingCapacity: true) }
                state.writing[flusher] = state.buffer.map(\.outcome.jobID)
                return state.buffer
            }
            guard let batch else { return }
            if batch.isEmpty {
                await signals[flusher].wait()
                continue
            }
            let held = state.withLock { state in
                defer { state.held.removeAll() }
                return state.held
            }
            for submitter in held { submitter.resume() }
            await flush(batch, flusher: flusher)
        }
        let abandoned = state.withLock { state in
            state.finished = true
            defer {
                state.buffer.removeAll()
                state.held.removeAll()
            }
            return (state.buffer, state.held)
        }
        abandon(abandoned.0, reason: "the worker stopped")
        for submitter in abandoned.1 { submitter.resume() }
    }

    /// Gives up on outcomes that could not be written: they are said with their jobs, whose
    /// stages run again after the lease.
    private func abandon(_ batch: [Pending], reason: String) {
        guard !batch.isEmpty else { return }
        logger.error(
            "outcomes not written; their stages run again after the lease",
            metadata: ["jobs": "\(batch.map(\.outcome.jobID))", "reason": "\(reason)"])
        for pending in batch { pending.done?.resume(returning: .notApplied) }
    }

    /// Stops accepting outcomes; `run()` returns after writing what it holds.
    private func finish() {
        let held = state.withLock { state in
            state.finished = true
            state.giveUpAt = .now + finishing
            defer { state.held.removeAll() }
            return state.held
        }
        for submitter in held { submitter.resume() }
        wake()
    }

    private func flush(_ batch: [Pending], flusher: Int) async {
        var backoff = Duration.milliseconds(50)
        while true {
            let outcomes = batch.map(\.outcome)
            let reserved = reserveSlots(for: outcomes)
            do {
                let result = try await store.apply(outcomes, worker: workerID, slots: reserved, tasks: tasks)
                handOver(result.claimed, reserved: reserved)
                afterCommit(result)
                for pending in batch {
                    let committed = Committed(pending.outcome.jobID, in: result)
                    if let done = pending.done {
                        done.resume(returning: committed)
                    } else if committed == .notApplied {
                        logger.notice(
                            "outcome not applied: the job is no longer this worker's",
                            metadata: ["job": "\(pending.outcome.jobID)", "stage": "\(pending.outcome.stage)"])
                    }
                }
                return
            } catch  where error.isRefusalByDatabase {
                handOver([], reserved: reserved)
                // The database refused the batch itself: apply one by one, so that one bad
                // outcome cannot hold back the others.
                logger.error(
                    "outcome batch refused",
                    metadata: ["error": "\(error.logDescription)", "jobs": "\(batch.map(\.outcome.jobID))"])
                for pending in batch {
                    let applied = await applyAlone(pending.outcome)
                    pending.done?.resume(returning: applied)
                }
                return
            } catch {
                handOver([], reserved: reserved)
                if Task.isCancelled {
                    abandon(batch, reason: "cancelled: \(error.logDescription)")
                    return
                }
                if let giveUpAt = state.withLock({ $0.giveUpAt }), ContinuousClock.now >= giveUpAt {
                    abandon(batch, reason: "shutting down: \(error.logDescription)")
                    return
                }
                // The connection is gone: keep the batch and retry until the database is back
                // (or, shutting down, until `finishing` is over: `finish()` wakes the wait).
                logger.warning(
                    "cannot write outcomes; retrying",
                    metadata: ["error": "\(error.logDescription)", "jobs": "\(batch.count)"])
                await signals[flusher].wait(timeout: backoff)
                backoff = min(backoff * 2, .seconds(2))
            }
        }
    }

    /// Applies one outcome, retrying while the database is away; an outcome the database refuses
    /// is recorded as a permanent failure instead, so that its job does not stay running.
    private func applyAlone(_ outcome: Outcome) async -> Committed {
        var backoff = Duration.milliseconds(50)
        var attempt = outcome
        while !Task.isCancelled {
            do {
                let result = try await store.apply([attempt], worker: workerID)
                afterCommit(result)
                guard attempt.transition == outcome.transition else { return .notApplied }
                return Committed(outcome.jobID, in: result)
            } catch  where error.isRefusalByDatabase {
                logger.error(
                    "outcome refused", metadata: ["job": "\(outcome.jobID)", "error": "\(error.logDescription)"])
                guard attempt.transition == outcome.transition else { return .notApplied }
                // Only the SQLSTATE: the refused text itself may be what cannot be stored.
                let state = error.sqlState ?? "?"
                attempt.transition = .discard(
                    error: "could not record the stage's outcome: PostgreSQL refused it (SQLSTATE \(state))")
            } catch {
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(2))
            }
        }
        return .notApplied
    }
}
