import Baton
import Crypto
import Foundation
import Synchronization

package struct LostStage: Sendable {
    package var jobID: Int64
    package var workerID: String
    package var queue: String
    package var metadata: JSONValue
    package var stage: Int
    package var attempt: Int
    package var chain: [StageSpec]
}
