import Baton
import BatonPostgres
import Logging
import PostgresNIO
import Synchronization

/// Writes decided outcomes to the database in batches: whatever has arrived is flushed in one
/// statement as soon as the previous flush is done, so a busy worker writes large batches and an
/// idle one writes at once. Submitters wait for their outcome to be committed (which holds their
/// slot: back-pressure), then learn whether it took effect.
final class Completer: Sendable {
    private struct Pending {
        var outcome: Outcome
        var done: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var buffer: [Pending] = []
        var finished = false
    }

    let store: Store
    let workerID: String
    let logger: Logger
    /// Called after each commit with what it made available and finished.
    let afterCommit: @Sendable (AppliedOutcomes) -> Void
    private let state = Mutex(State())
    private let signal = Signal()

    init(store: Store, workerID: String, logger: Logger, afterCommit: @escaping @Sendable (AppliedOutcomes) -> Void) {
        self.store = store
        self.workerID = workerID
        self.logger = logger
        self.afterCommit = afterCommit
    }

    /// Queues `outcome` and returns once it is committed: true if it took effect, false if the job
    /// was no longer this worker's to finish (cancelled, or rescued after a lost lease).
    func submit(_ outcome: Outcome) async -> Bool {
        await withCheckedContinuation { continuation in
            let accepted = state.withLock { state -> Bool in
                guard !state.finished else { return false }
                state.buffer.append(Pending(outcome: outcome, done: continuation))
                return true
            }
            if accepted { signal.signal() } else { continuation.resume(returning: false) }
        }
    }

    /// Flushes until `finish()` is called and the buffer is empty.
    func run() async {
        while true {
            let batch = state.withLock { state -> [Pending]? in
                if state.buffer.isEmpty { return state.finished ? nil : [] }
                defer { state.buffer.removeAll(keepingCapacity: true) }
                return state.buffer
            }
            guard let batch else { return }
            if batch.isEmpty {
                await signal.wait()
                continue
            }
            await flush(batch)
        }
    }

    /// Stops accepting outcomes; `run()` returns after writing what it holds.
    func finish() {
        state.withLock { $0.finished = true }
        signal.signal()
    }

    private func flush(_ batch: [Pending]) async {
        var backoff = Duration.milliseconds(50)
        while true {
            do {
                let result = try await store.apply(batch.map(\.outcome), worker: workerID)
                afterCommit(result)
                for pending in batch { pending.done.resume(returning: result.applied.contains(pending.outcome.jobID)) }
                return
            } catch let error as PSQLError where error.serverInfo != nil {
                // The database refused the batch itself: apply one by one, so that one bad
                // outcome cannot hold back the others.
                logger.error("outcome batch refused", metadata: ["error": "\(String(reflecting: error))"])
                for pending in batch { pending.done.resume(returning: await applyAlone(pending.outcome)) }
                return
            } catch {
                if Task.isCancelled {
                    for pending in batch { pending.done.resume(returning: false) }
                    return
                }
                // The connection is gone: keep the batch and retry until the database is back.
                logger.warning(
                    "cannot write outcomes; retrying",
                    metadata: ["error": "\(String(reflecting: error))", "jobs": "\(batch.count)"])
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(2))
            }
        }
    }

    private func applyAlone(_ outcome: Outcome) async -> Bool {
        do {
            let result = try await store.apply([outcome], worker: workerID)
            afterCommit(result)
            return result.applied.contains(outcome.jobID)
        } catch {
            // Still refused: record it as a permanent failure so the job does not stay running.
            var discard = outcome
            discard.transition = .discard(error: "could not record the stage's outcome: \(error)")
            let result = try? await store.apply([discard], worker: workerID)
            if let result { afterCommit(result) }
            logger.error("outcome refused", metadata: ["job": "\(outcome.jobID)", "error": "\(error)"])
            return false
        }
    }
}
