import Baton
import Synchronization

/// Group commit for enqueues: callers that arrive while a batch is being written go together in
/// the next one, one statement and one commit for all of them.
///
/// A caller alone goes at once: there is no timer to wait for. A caller with more than
/// ``largestShared`` jobs writes them at once in a transaction of its own: its commit is already
/// shared by its jobs, and batches of hundreds from several callers are written faster side by
/// side than one after another. Under load, the cost of a write
/// (two round trips with the commit check, the function call, the WAL flush) is shared by every
/// caller that arrived during the one before, which is what brings one-job-per-request HTTP
/// traffic towards batch throughput. Each batch is written by the task of its first caller (no
/// task of its own runs); jobs keep the order their callers arrived in.
///
/// What one caller's jobs do to another's:
/// - **Refused** (a key naming another owner's job, anything PostgreSQL refused for what it
///   said; jobs come checked, ``ValidJob``): the batch was rolled back or never sent, so each caller writes its own
///   jobs again alone, in its own task, and only the one at fault is refused.
/// - **The writer cancelled** before the statement went out (it waited for a connection): nothing
///   was sent; each caller writes alone, in its own task, which is not cancelled.
/// - **Anything else** (a connection lost, the database away): every caller gets that error, as
///   it would have alone. After a lost connection the batch may have committed, so writing it
///   again would enqueue twice.
///
/// `Tests/BatonPostgresTests/EnqueueBatcherTests.swift` holds it to this, with PostgreSQL
/// restarted under concurrent enqueues among them.
package final class EnqueueBatcher: Sendable {
    /// A batch stops taking callers once it holds this many jobs.
    static let maximumJobs = 1000
    /// Callers with more jobs than this write them alone.
    static let largestShared = 100

    /// Writes jobs in one transaction; answers for each apart (``Store/enqueueEach(_:)``).
    package typealias Write = @Sendable ([ValidJob]) async throws -> [Result<EnqueuedJob, JobVanished>]

    /// What a waiting caller is told to do.
    private enum Turn {
        /// Its jobs were written with the batch (or failed with it).
        case done(Result<[EnqueuedJob], any Error>)
        /// Write the next batch: its jobs and those of the callers waiting then.
        case lead
        /// The shared batch was refused: write its jobs alone.
        case alone
    }

    private struct Waiter {
        var jobs: [ValidJob]
        var turn: CheckedContinuation<Turn, Never>
    }

    private struct State {
        var writing = false
        var waiting: [Waiter] = []
    }

    private let state = Mutex(State())
    private let write: Write

    package init(write: @escaping Write) {
        self.write = write
    }

    /// How many callers wait for the batch being written to end (for tests).
    package var waitingCallers: Int { state.withLock { $0.waiting.count } }

    package func enqueue(_ jobs: [ValidJob]) async throws -> [EnqueuedJob] {
        guard jobs.count <= Self.largestShared else { return try await writeAlone(jobs) }
        let turn = await withCheckedContinuation { (turn: CheckedContinuation<Turn, Never>) in
            let lead = state.withLock { state in
                guard state.writing else {
                    state.writing = true
                    return true
                }
                state.waiting.append(Waiter(jobs: jobs, turn: turn))
                return false
            }
            if lead { turn.resume(returning: .lead) }
        }
        switch turn {
        case .done(let result): return try result.get()
        case .alone: return try await writeAlone(jobs)
        case .lead: return try await lead(jobs)
        }
    }

    /// Writes `jobs` and those of the callers waiting now, then hands the next batch to the first
    /// caller that arrived meanwhile.
    private func lead(_ jobs: [ValidJob]) async throws -> [EnqueuedJob] {
        let others = state.withLock { state in
            var count = jobs.count
            let taken = state.waiting.prefix { waiter in
                guard count + waiter.jobs.count <= Self.maximumJobs else { return false }
                count += waiter.jobs.count
                return true
            }
            state.waiting.removeFirst(taken.count)
            return Array(taken)
        }
        let result: Result<[EnqueuedJob], any Error>
        if others.isEmpty {
            result = await Result { try await writeAlone(jobs) }
        } else {
            result = await writeShared(jobs, others)
        }
        let next = state.withLock { state -> Waiter? in
            guard !state.waiting.isEmpty else {
                state.writing = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.turn.resume(returning: .lead)
        return try result.get()
    }

    /// One write for the leader's jobs and every other caller's; each told its part.
    private func writeShared(_ jobs: [ValidJob], _ others: [Waiter]) async -> Result<[EnqueuedJob], any Error> {
        do {
            var enqueued = try await write(others.reduce(into: jobs) { $0 += $1.jobs })[...]
            let own = Self.answer(enqueued.prefix(jobs.count))
            enqueued = enqueued.dropFirst(jobs.count)
            for other in others {
                other.turn.resume(returning: .done(Self.answer(enqueued.prefix(other.jobs.count))))
                enqueued = enqueued.dropFirst(other.jobs.count)
            }
            return own
        } catch  where error.wasNotWritten {
            for other in others { other.turn.resume(returning: .alone) }
            return await Result { try await writeAlone(jobs) }
        } catch {
            for other in others { other.turn.resume(returning: .done(.failure(error))) }
            return .failure(error)
        }
    }
}

extension EnqueueBatcher {
    private func writeAlone(_ jobs: [ValidJob]) async throws -> [EnqueuedJob] {
        try Self.answer(try await write(jobs)[...]).get()
    }

    /// One caller's answer: its jobs, or ``JobVanished`` if one of them vanished. Only the caller
    /// that sent it is told; its other jobs are committed, as they were before group commit.
    private static func answer(_ part: ArraySlice<Result<EnqueuedJob, JobVanished>>) -> Result<[EnqueuedJob], any Error>
    {
        var jobs: [EnqueuedJob] = []
        jobs.reserveCapacity(part.count)
        for result in part {
            switch result {
            case .success(let job): jobs.append(job)
            case .failure(let vanished): return .failure(vanished)
            }
        }
        return .success(jobs)
    }
}

extension Error {
    /// Whether an enqueue that failed so is certain to have written nothing, and may be written
    /// again in parts: refused before it was sent or by PostgreSQL for what it said, or cancelled
    /// while it waited for a connection.
    fileprivate var wasNotWritten: Bool {
        self is BatonError || self is IdempotencyKeyTaken || self is FairKeyNotText || self is CancellationError
            || isRefusalByDatabase
    }
}
