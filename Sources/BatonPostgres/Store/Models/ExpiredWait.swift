import Baton
import Crypto
import Foundation
import Synchronization

/// A running stage whose worker stopped sending heartbeats.
/// A wait for a signal that ran out (`expire_waits`): its attempt failed with `error`; the stage
/// waits again until `nextAt`, or, nil, the job was discarded.
package struct ExpiredWait: Sendable {
    package var jobID: Int64
    package var queue: String
    package var stage: Int
    package var attempt: Int
    package var chain: [StageSpec]
    package var metadata: JSONValue
    package var error: String
    package var nextAt: Date?
}
