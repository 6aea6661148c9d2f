import Baton
import Crypto
import Foundation
import Synchronization

/// Which jobs count as the same, beyond an idempotency key: "one pending sync per customer". While
/// a job holds the rule's key (it has not finished, or it finished in one of ``finished``),
/// enqueueing another with the same key answers the existing job (``EnqueuedJob/inserted`` false),
/// not an error. The database enforces it: a unique index over the key, partial on the states in
/// which a job holds it, so no race between enqueuers lets two in.
public struct Uniqueness: Sendable, Hashable {
    /// Your key (`sync-customer-7`); nil: the first stage's task and args (the same task with the
    /// same args, compared as JSON, is the same job). Always within the job's queue.
    public var key: String?
    /// Jobs enqueued within the same window of this length (windows counted from the Unix epoch)
    /// are the same; nil: whenever.
    public var window: Duration?
    /// Final states in which a job still holds the key (`completed`: "once a day, even if it
    /// succeeded"); unfinished ones always do.
    public var finished: Set<JobState>

    public init(key: String? = nil, window: Duration? = nil, finished: Set<JobState> = []) {
        self.key = key
        self.window = window
        self.finished = finished
    }

    /// The states in which a job holds the key.
    var states: [JobState] {
        [.scheduled, .available, .running, .retryable, .waiting]
            + [.completed, .discarded, .cancelled].filter(finished.contains)
    }

    /// The key as stored for `job`, enqueued at `now`: its queue, the rule's key or a digest of the
    /// first task and its args, and the window's number.
    func storedKey(for job: NewJob, at now: Date) -> String {
        var key = job.queue + "\u{1F}"
        if let own = self.key {
            key += "k:" + own
        } else {
            let first = job.chain.stages.first
            let subject = (first?.kind ?? "") + "\u{1F}" + (first?.task?.args.jsonText ?? "")
            key += "t:" + SHA256.hash(data: Data(subject.utf8)).map { String(format: "%02x", $0) }.joined()
        }
        if let window, window > .zero {
            let seconds = Double(window.components.seconds) + Double(window.components.attoseconds) / 1e18
            key +=
                "\u{1F}w:\(DurationFormat.format(window)):\(Int64((now.timeIntervalSince1970 / seconds).rounded(.down)))"
        }
        return key
    }

    /// What makes a rule unusable, with the path of the field at fault.
    package func check(path: String) throws(BatonError) {
        if let key {
            guard (1...255).contains(key.unicodeScalars.count), !key.unicodeScalars.contains("\u{0}") else {
                throw .invalidChain(path: "\(path).key", reason: "a unique key is 1 to 255 characters, without NUL")
            }
        }
        if let window, window <= .zero {
            throw .invalidChain(path: "\(path).window", reason: "must be longer than zero")
        }
        guard finished.isSubset(of: [.completed, .discarded, .cancelled]) else {
            throw .invalidChain(
                path: "\(path).finished", reason: "only completed, discarded and cancelled are final states")
        }
    }
}
