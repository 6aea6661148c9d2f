import Baton
import Crypto
import Foundation
import Synchronization

/// A job to enqueue: a chain and where and when to run it.
public struct NewJob: Sendable {
    public var chain: ChainDefinition
    /// Workers serve named queues; `default` unless set.
    public var queue: String
    /// Lower runs first.
    public var priority: Int
    /// Not before this time; nil: now.
    public var runAt: Date?
    /// Enqueueing the same key again yields the existing job instead of a new one.
    public var idempotencyKey: String?
    /// Which jobs count as this one: while one holds the rule's key, enqueueing another yields it.
    public var unique: Uniqueness?
    public var metadata: JSONValue
    /// The key (a tenant, a customer) its stages take turns under in their queues: in a queue where
    /// jobs name one, claims rotate among the keys with stages ready, so that one key's flood does
    /// not hold back another's trickle (docs/semantics.md#fair-share). nil: the queue's shared turn.
    public var fairKey: String?
    /// Who enqueued it, opaque to Baton (the control plane stores a fingerprint of the caller's
    /// token, so that an `enqueue` token can read its own jobs).
    public var enqueuedBy: String?
    /// An idempotency or unique key may only name a job enqueued by one of these (a caller's
    /// fingerprints under each key): else the enqueue is refused (``IdempotencyKeyTaken``), all of
    /// its batch with it. nil: any job.
    package var keyOwners: [String]?

    public init(
        chain: ChainDefinition, queue: String = "default", priority: Int = 0, runAt: Date? = nil,
        idempotencyKey: String? = nil, metadata: JSONValue = [:], enqueuedBy: String? = nil, unique: Uniqueness? = nil,
        fairKey: String? = nil
    ) {
        self.fairKey = fairKey
        self.chain = chain
        self.queue = queue
        self.priority = priority
        self.runAt = runAt
        self.idempotencyKey = idempotencyKey
        self.metadata = metadata
        self.enqueuedBy = enqueuedBy
        self.unique = unique
    }
}
