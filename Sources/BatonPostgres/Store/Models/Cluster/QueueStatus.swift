import Baton
import Foundation

/// One queue as operators see it.
public struct QueueStatus: Sendable, Hashable {
    public var name: String
    /// Jobs per state (absent states: none), as the job lists count them (group members are in
    /// their parent); `completed`: completions over the last day, from the history (group
    /// members' included), not a count of rows.
    public var counts: [JobState: Int]
    /// The due time of the oldest available job: how long the queue has kept work waiting.
    public var oldestAvailable: Date?
    public var paused: Bool
    /// Live workers serving the queue: their last heartbeat is within their lease.
    public var workers: Int

    /// Jobs are available and no live worker serves the queue: nothing will run them until one
    /// starts (`baton_queue_unserved`, the overview's flag).
    public var unserved: Bool { (counts[.available] ?? 0) > 0 && workers == 0 }
    /// Tasks of its oldest available jobs that no live worker serving it runs
    /// (``Store/unservedTasks()``): those jobs wait for a worker that registers them.
    public var unservedTasks: [String]
    /// In a fair queue: its keys with stages waiting and running (``Store/fairShareBacklogs()``).
    public var fairShare: FairShareBacklog?

    package init(
        name: String, counts: [JobState: Int] = [:], oldestAvailable: Date? = nil, paused: Bool = false,
        workers: Int = 0, unservedTasks: [String] = []
    ) {
        self.name = name
        self.counts = counts
        self.oldestAvailable = oldestAvailable
        self.paused = paused
        self.workers = workers
        self.unservedTasks = unservedTasks
    }
}

/// A fair queue's fairness keys: where it takes those of jobs naming none, how many have stages
/// waiting and the ones with the most, and the ones holding the most of its running stages.
public struct FairShareBacklog: Sendable, Hashable {
    public struct Key: Sendable, Hashable {
        public var key: String
        /// Its stages waiting for a worker (available now), or running; or, in ``recentTop``,
        /// claimed.
        public var stages: Int
    }

    /// Where its jobs that name no fairness key take one (``FairKeySource``), if it derives them.
    public var keyFrom: String?
    /// Keys with stages waiting, the shared key `""` of stages without one included.
    public var keys: Int
    /// The ``Store/fairKeysShown`` keys with the most stages waiting, most first.
    public var top: [Key]
    /// Stages of the queue running now.
    public var running: Int
    /// The ``Store/fairKeysShown`` keys with the most of them, most first: who holds the workers'
    /// slots.
    public var runningTop: [Key]
    /// The queue's stages that workers claimed over the last ``Store/recentStartsMinutes``
    /// minutes (the current one included): its pickups, as the history counts them.
    public var recentStarts = 0
    /// The ``Store/fairKeysShown`` keys with the most of those claims, most first, each with its
    /// count as the workers estimated it (``Store/HistoryMinute/fairStarts``): each key's share of
    /// recent starts is its count over ``recentStarts``.
    public var recentTop: [Key] = []

    /// `starts` over ``recentStarts``, from 0 to 1 (an estimate a little over the pickups counted
    /// is shown as all of them).
    public func share(ofRecentStarts starts: Int) -> Double {
        recentStarts > 0 ? min(1, Double(starts) / Double(recentStarts)) : 0
    }
}
