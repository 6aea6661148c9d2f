import Baton
import Foundation

/// A lane: the jobs holding it, its width, and how many wait behind.
public struct LaneStatus: Sendable, Hashable {
    public struct Head: Sendable, Hashable {
        public var id: Int64
        public var queue: String
        public var state: JobState
        public var stage: Int
        public var task: String?
        public var attempt: Int
        /// When it runs (again): for a retrying head, when the lane may move.
        public var runAt: Date
        public var lastError: String?
    }

    public var lane: String
    /// A holder waiting to retry (it blocks its place), else the oldest holder. Nil only for an
    /// instant while the lane changes hands.
    public var head: Head?
    /// How many of its stages hold it now (at most `width`, unless it was narrowed since).
    public var held: Int
    /// How many may hold it at once: its setting, its longest prefix's, or 1.
    public var width: Int
    public var waiting: Int
}
