import Baton
import BatonPostgres
import Logging
import ServiceLifecycle
import Synchronization

/// Writes what running stages report (``StageContext/progress(_:_:checkpoint:)``) to the
/// database: the latest report of each job is kept in memory and all of them are written every
/// ``period`` in one statement, so a task may report as often as it likes and a job costs at most
/// one write a second. Before an attempt's outcome is submitted, ``settle(_:)`` writes that job's
/// last report (and waits for one on its way), so the next attempt finds the checkpoint its
/// predecessor saved last.
final class ProgressWriter: Service, Sendable {
    private struct State {
        /// The latest unwritten report of each job.
        var pending: [Int64: Store.ProgressReport] = [:]
        /// Jobs whose report a statement is writing now.
        var writing: Set<Int64> = []
        /// Who waits for a job's write to end.
        var waiting: [Int64: [CheckedContinuation<Void, Never>]] = [:]
    }

    let store: Store
    let workerID: String
    let period: Duration
    let logger: Logger
    private let state = Mutex(State())

    init(store: Store, workerID: String, period: Duration = .seconds(1), logger: Logger) {
        self.store = store
        self.workerID = workerID
        self.period = period
        self.logger = logger
    }

    func run() async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: self.period)
                await self.writePending()
            }
        }
        await writePending()
    }

    /// Writes the last report of `job`'s attempt now, if one is unwritten, after any write of it
    /// already under way; tries once (a report it cannot write stays for the next round, which
    /// writes it only if the attempt still runs). A job that never reported costs a look-up under
    /// a lock.
    func settle(_ job: Int64) async {
        while true {
            enum Next {
                case done
                case wait
                case write(Store.ProgressReport)
            }
            let next = state.withLock { state -> Next in
                if state.writing.contains(job) { return .wait }
                guard let report = state.pending.removeValue(forKey: job) else { return .done }
                state.writing.insert(job)
                return .write(report)
            }
            switch next {
            case .done:
                return
            case .wait:
                await withCheckedContinuation { continuation in
                    let waits = state.withLock { state in
                        guard state.writing.contains(job) else { return false }
                        state.waiting[job, default: []].append(continuation)
                        return true
                    }
                    if !waits { continuation.resume() }
                }
            case .write(let report):
                await write([report])
                return
            }
        }
    }

    /// Forgets what `job` reported and not yet written: its stage was cancelled.
    func forget(_ job: Int64) {
        _ = state.withLock { $0.pending.removeValue(forKey: job) }
    }

    /// Keeps `report` as its job's latest, to write with the next round.
    func submit(_ report: Store.ProgressReport) {
        state.withLock { $0.pending[report.jobID] = report }
    }

    /// Writes every pending report in one statement.
    func writePending() async {
        let reports = state.withLock { state in
            let reports = state.pending.values.filter { !state.writing.contains($0.jobID) }
            for report in reports {
                state.pending[report.jobID] = nil
                state.writing.insert(report.jobID)
            }
            return reports
        }
        await write(reports)
    }

    /// Writes `reports` (marked as writing) and wakes who waits for them. A report that cannot be
    /// written is kept for the next round unless a newer one came meanwhile: progress is worth a
    /// retry, not a stall.
    private func write(_ reports: [Store.ProgressReport]) async {
        guard !reports.isEmpty else { return }
        var failed = false
        do {
            try await store.recordProgress(reports, worker: workerID)
        } catch {
            failed = true
            logger.debug("cannot write progress; keeping it", metadata: ["error": "\(error.logDescription)"])
        }
        let waiters = state.withLock { state in
            var waiters: [CheckedContinuation<Void, Never>] = []
            for report in reports {
                state.writing.remove(report.jobID)
                if failed, state.pending[report.jobID] == nil { state.pending[report.jobID] = report }
                waiters += state.waiting.removeValue(forKey: report.jobID) ?? []
            }
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
