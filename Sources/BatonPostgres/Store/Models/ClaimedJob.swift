import Baton
import Crypto
import Foundation
import Synchronization

/// A stage a worker has claimed and is to run.
package struct ClaimedJob: Sendable {
    package var id: Int64
    package var queue: String
    package var stage: Int
    package var attempt: Int
    package var chain: [StageSpec]
    /// JSON text: the input of the current stage.
    package var input: String
    /// The runs before this one, in order: the path taken so far (one run per stage, unless a
    /// `goto` skipped some or a `repeat` ran one again), each with the position it ran at.
    package var earlier: [(stage: Int, output: JSONValue)]
    package var metadata: JSONValue
    /// For a group stage whose members all completed: their outputs (JSON text).
    package var groupOutput: String?
    /// Why this job cannot run at all (its stored chain does not decode); it is discarded.
    package var invalid: String? = nil
    /// Seconds from when the stage became claimable to its claim; nil when it was handed over
    /// without a claim (a lane hand-off claimed while applying an outcome).
    package var waited: Double? = nil
    /// When the statement that claimed it was sent: a cancel heard since may be about this claim
    /// (its notification can arrive before the claim's answer).
    package var claimedSince: ContinuousClock.Instant = .now

    package var spec: StageSpec { chain[stage] }
    /// How many times in a row this stage ran before this run (`repeat`).
    package var runs: Int { earlier.reversed().prefix(while: { $0.stage == stage }).count }
}
