import Synchronization

/// How far a running stage has got, as its task last said (``StageContext/progress(_:_:)``).
public struct StageProgress: Sendable, Hashable {
    /// Done so far, from 0 to 1; nil when the task cannot tell.
    public var fraction: Double?
    /// A short line for people (`page 4 of 10`), at most ``StageProgress/messageLimit`` characters.
    public var message: String?
    /// Where an attempt at this stage may resume from; kept until a report gives another.
    public var checkpoint: JSONValue?

    public init(fraction: Double? = nil, message: String? = nil, checkpoint: JSONValue? = nil) {
        self.fraction = fraction.map { $0.isNaN ? 0 : min(1, max(0, $0)) }
        self.message = message.map { String($0.prefix(Self.messageLimit)) }
        self.checkpoint = checkpoint
    }

    /// A message is cut to this many characters.
    public static let messageLimit = 200
    /// The largest checkpoint a task may save, as JSON text: a place to resume from, not a store.
    public static let checkpointLimit = 256 * 1024

    /// This report over an earlier one: a report without a checkpoint keeps the earlier checkpoint.
    package func merged(over earlier: StageProgress?) -> StageProgress {
        var merged = self
        if merged.checkpoint == nil { merged.checkpoint = earlier?.checkpoint }
        return merged
    }
}

/// The latest report of one attempt, shared by the copies of its ``StageContext``.
final class AttemptProgress: Sendable {
    let services: any StageServices
    private let latest = Mutex<StageProgress?>(nil)

    init(services: any StageServices) {
        self.services = services
    }

    var last: StageProgress? { latest.withLock { $0 } }

    func report(_ progress: StageProgress) {
        let merged = latest.withLock { latest in
            latest = progress.merged(over: latest)
            return latest!
        }
        services.report(merged)
    }
}
