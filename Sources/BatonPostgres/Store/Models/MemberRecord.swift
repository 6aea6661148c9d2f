import Baton
import Foundation

/// A group member as its parent shows it.
public struct MemberRecord: Sendable {
    /// The parent's stage this member belongs to, and its place in the group.
    public var stage: Int
    public var index: Int
    public var id: Int64
    public var state: JobState
    public var attempt: Int
    public var output: JSONValue?
    /// What its task logged during the attempt that completed it.
    public var log: String? = nil
    public var errors: [JobRecord.AttemptError]
    /// Its current (or last) stage's task, and lane if it names one.
    public var task: String? = nil
    public var lane: String? = nil
}
