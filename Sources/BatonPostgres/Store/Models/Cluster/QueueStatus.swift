import Baton
import Foundation

/// One queue as operators see it.
public struct QueueStatus: Sendable, Hashable {
    public var name: String
    /// Jobs per state (absent states: none).
    public var counts: [JobState: Int]
    /// The due time of the oldest available job: how long the queue has kept work waiting.
    public var oldestAvailable: Date?
    public var paused: Bool

    package init(name: String, counts: [JobState: Int] = [:], oldestAvailable: Date? = nil, paused: Bool = false) {
        self.name = name
        self.counts = counts
        self.oldestAvailable = oldestAvailable
        self.paused = paused
    }
}
