import Baton
import Crypto
import Foundation
import Synchronization

/// What enqueueing a job did.
public struct EnqueuedJob: Sendable, Hashable {
    public var id: Int64
    public var queue: String
    public var state: JobState
    /// False when the idempotency key named an existing job.
    public var inserted: Bool
    public var runAt: Date
    public var createdAt: Date
}
