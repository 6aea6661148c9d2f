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
    /// Its stages' weight under their key (``fairKey``, or the shared one) in a fair queue: a key
    /// whose jobs weigh 2 takes twice the turns of one whose jobs weigh 1 while both have stages
    /// ready (a paying tier's share). ``weights`` bounds it; nil: 1.
    public var fairWeight: Double?
    /// The weights a job may have: from a thousandth to a thousand.
    public static let weights = 0.001...1000.0
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
        fairKey: String? = nil, fairWeight: Double? = nil
    ) {
        self.fairKey = fairKey
        self.fairWeight = fairWeight
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
