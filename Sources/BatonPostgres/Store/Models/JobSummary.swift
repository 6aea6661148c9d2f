import Baton
import Foundation

/// A job in a listing: where it is, not what it carries.
public struct JobSummary: Sendable, Hashable {
    public var id: Int64
    public var queue: String
    public var priority: Int
    public var state: JobState
    public var stage: Int
    public var stageCount: Int
    /// The current stage's task; nil for a group stage.
    public var task: String?
    public var lane: String?
    public var attempt: Int
    public var runAt: Date
    public var createdAt: Date
    public var finishedAt: Date?
    public var lastError: String?
}
