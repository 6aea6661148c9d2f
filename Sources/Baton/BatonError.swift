/// Errors Baton reports to its users; switch on the case.
public enum BatonError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The chain breaks a rule; `path` is the JSON path of the field at fault.
    case invalidChain(path: String, reason: String)
    /// No task of this name is registered (on this worker, or on any live worker).
    case unknownTask(String)
    /// No job has this id.
    case jobNotFound(Int64)
    /// The job ended without completing.
    case jobFailed(id: Int64, state: JobState, error: StageError?)
    /// The job's output could not be decoded as the chain's output type.
    case outputMismatch(id: Int64, reason: String)
    /// A stage's checkpoint is larger than ``StageProgress/checkpointLimit`` bytes of JSON.
    case checkpointTooLarge(bytes: Int)

    public var description: String {
        switch self {
        case .invalidChain(let path, let reason): "invalid chain at \(path): \(reason)"
        case .unknownTask(let name): "unknown task \"\(name)\""
        case .jobNotFound(let id): "job \(id) not found"
        case .jobFailed(let id, let state, let error): "job \(id) \(state.rawValue)" + (error.map { ": \($0)" } ?? "")
        case .outputMismatch(let id, let reason): "job \(id) output does not decode: \(reason)"
        case .checkpointTooLarge(let bytes):
            "a checkpoint of \(bytes) bytes is over the limit of \(StageProgress.checkpointLimit)"
        }
    }
}

/// A job's state; see DESIGN.md for the transitions.
public enum JobState: String, Sendable, Hashable, Codable, CaseIterable {
    case scheduled, available, running, retryable, waiting, completed, discarded, cancelled

    /// Completed, discarded or cancelled: nothing more will happen to the job.
    public var isFinished: Bool {
        switch self {
        case .completed, .discarded, .cancelled: true
        default: false
        }
    }
}
