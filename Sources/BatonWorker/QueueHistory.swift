import BatonPostgres
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The worker's share of the per-minute history the dashboard charts (`queue_minutes`): jobs it
/// completed or discarded and how long the stages it claimed had waited, per queue and minute,
/// gathered in memory and written every ``period`` in one statement (and once more when the
/// worker stops). Counted when the worker decides an outcome, as its metrics are; a worker killed
/// outright loses its last few seconds of history, never a job.
///
/// In a fair queue, each key's share of those pickups (``Store/HistoryMinute/fairStarts``): the
/// claim does not say a stage's key, so the worker keeps a uniform sample of the jobs it claimed
/// in each queue and minute (at most ``sampleSize``, reservoir sampling) and, when it writes,
/// looks up the keys of those claimed in fair queues in one statement by primary key; each key's
/// count is its share of the sample times the pickups. Queues that are not fair record nothing,
/// and their samples cost a probe of `fair_queues`, not of `jobs`. A sample whose look-up fails
/// is kept for the next write, unless a newer one of its minute took its place.
final class QueueHistory: Service, Sendable {
    private struct Key: Hashable {
        var queue: String
        var minute: Date
    }

    /// Jobs claimed, a uniform sample of them.
    private struct Sample {
        var seen = 0
        var ids: [Int64] = []

        mutating func add(_ job: Int64) {
            seen += 1
            if ids.count < QueueHistory.sampleSize {
                ids.append(job)
            } else {
                let slot = Int.random(in: 0..<seen)
                if slot < QueueHistory.sampleSize { ids[slot] = job }
            }
        }
    }

    /// What was gathered since the last write, under one lock: a pickup counts and samples at once.
    private struct Gathered {
        var minutes: [Key: Store.HistoryMinute] = [:]
        var samples: [Key: Sample] = [:]
    }

    /// The jobs sampled per queue and minute: a share read from 1,000 is within about 3 % of the
    /// true one (95 % of the time), and the look-up stays one short statement every period.
    static let sampleSize = 1_000

    let store: Store
    let logger: Logger
    let period: Duration
    private let gathered = Mutex(Gathered())

    init(store: Store, logger: Logger, period: Duration = .seconds(5)) {
        self.store = store
        self.logger = logger
        self.period = period
    }

    func completed(queue: String) { add(queue) { $0.completed += 1 } }

    func discarded(queue: String) { add(queue) { $0.discarded += 1 } }

    func pickedUp(queue: String, waited: Double, job: Int64) {
        let bucket = Store.waitBuckets.firstIndex { waited <= $0.bound } ?? Store.waitBuckets.count - 1
        add(queue, sampling: job) { $0.waits[bucket] += 1 }
    }

    /// Counts into `queue`'s minute, and samples the job claimed, if any.
    private func add(_ queue: String, sampling job: Int64? = nil, _ change: (inout Store.HistoryMinute) -> Void) {
        let now = Date().timeIntervalSince1970
        let minute = Date(timeIntervalSince1970: (now / 60).rounded(.down) * 60)
        let key = Key(queue: queue, minute: minute)
        gathered.withLock { gathered in
            change(&gathered.minutes[key, default: Store.HistoryMinute(queue: queue, minute: minute)])
            if let job { gathered.samples[key, default: Sample()].add(job) }
        }
    }

    func run() async {
        await cancelWhenGracefulShutdown {
            // Not written once shutdown has begun (its statements would fail as cancelled): the
            // write below, after this loop, is the last.
            while (try? await Task.sleep(for: self.period)) != nil {
                await self.write()
            }
        }
        await write()
    }

    /// Writes what was gathered; kept for the next round if the database is away.
    func write() async {
        var taken = gathered.withLock { gathered in
            defer { gathered = Gathered() }
            return gathered
        }
        await estimateFairStarts(&taken.minutes, from: taken.samples)
        let minutes = Array(taken.minutes.values)
        guard !minutes.isEmpty else { return }
        do {
            try await store.recordHistory(minutes)
        } catch {
            logger.debug("cannot write queue history; keeping it", metadata: ["error": "\(error.logDescription)"])
            gathered.withLock { gathered in
                for minute in minutes {
                    let key = Key(queue: minute.queue, minute: minute.minute)
                    var merged =
                        gathered.minutes[key] ?? Store.HistoryMinute(queue: minute.queue, minute: minute.minute)
                    merged.completed += minute.completed
                    merged.discarded += minute.discarded
                    merged.waits = zip(merged.waits, minute.waits).map(+)
                    merged.fairStarts.merge(minute.fairStarts, uniquingKeysWith: +)
                    gathered.minutes[key] = merged
                }
            }
        }
    }

    /// Each fair queue's pickups per key, estimated from `samples` (see the type's comment).
    private func estimateFairStarts(_ minutes: inout [Key: Store.HistoryMinute], from samples: [Key: Sample]) async {
        guard !samples.isEmpty else { return }
        let keys: [Int64: String]
        do {
            keys = try await store.fairKeys(
                ofClaims: samples.flatMap { minute, sample in sample.ids.map { ($0, minute.queue) } })
        } catch {
            logger.debug(
                "cannot look up the fairness keys of claims; keeping the sample",
                metadata: ["error": "\(error.logDescription)"])
            gathered.withLock { gathered in
                for (minute, sample) in samples where gathered.samples[minute]?.ids.isEmpty ?? true {
                    gathered.samples[minute] = sample
                }
            }
            return
        }
        guard !keys.isEmpty else { return }
        for (minute, sample) in samples {
            var counts: [String: Int] = [:]
            for id in sample.ids { if let key = keys[id] { counts[key, default: 0] += 1 } }
            guard !counts.isEmpty else { continue }
            let scale = Double(sample.seen) / Double(sample.ids.count)
            let kept = counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(Store.fairStartKeysKept)
            for (key, count) in kept {
                minutes[minute]?.fairStarts[key, default: 0] += Int((Double(count) * scale).rounded())
            }
        }
    }
}
