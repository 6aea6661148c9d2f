import Baton
import Crypto
import Foundation
import Synchronization

/// What the database did with a batch of outcomes.
package struct AppliedOutcomes: Sendable {
    /// Jobs whose transition took effect; the others were no longer this worker's to finish.
    package var applied: Set<Int64> = []
    /// Hops applied as advances: the next stage's queue is rate limited as a whole, so the stage
    /// waits for a claim (which takes a token) and the worker must not run it.
    package var handedOn: Set<Int64> = []
    /// Queues with newly available jobs.
    package var woken: Set<String> = []
    /// Finished jobs someone awaits.
    package var finished: [Int64] = []
    /// Lane holders promoted by this batch and claimed for the worker at once.
    package var claimed: [ClaimedJob] = []
}
