import Baton
import Crypto
import Foundation
import Synchronization

/// A decided transition for one claimed stage, ready to be applied.
package struct Outcome: Sendable {
    package var jobID: Int64
    package var stage: Int
    package var attempt: Int
    package var transition: Transition
    /// The job's queue and the lane its stage held, if any: where the outcome may hand a lane on
    /// (a hint for slot reservation; the database decides).
    package var queue: String?
    package var heldLane: String?
    /// What the task logged during the attempt, kept with it (its entry in the job's results or
    /// errors); nil: nothing.
    package var log: String?

    package init(
        jobID: Int64, stage: Int, attempt: Int, transition: Transition, queue: String? = nil, heldLane: String? = nil,
        log: String? = nil
    ) {
        self.jobID = jobID
        self.stage = stage
        self.attempt = attempt
        self.transition = transition
        self.queue = queue
        self.heldLane = heldLane
        self.log = log
    }

    /// Whether applying this may let another job take the lane.
    package var mayReleaseLane: Bool {
        guard heldLane != nil else { return false }
        switch transition {
        case .retry, .release: return false
        default: return true
        }
    }
}
