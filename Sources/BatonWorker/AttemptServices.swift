import Baton
import BatonPostgres

/// What the worker provides to one attempt's ``StageContext``: its reports go to the
/// ``ProgressWriter``; its checkpoint, the job's input (for a stage after the first) and its
/// signals' tokens come from the database, each read only when the task asks.
struct AttemptServices: StageServices {
    let writer: ProgressWriter
    let tokens: SignalTokens
    let job: ClaimedJob

    func report(_ progress: StageProgress) {
        writer.submit(.init(jobID: job.id, stage: job.stage, attempt: job.attempt, progress: progress))
    }

    func savedCheckpoint() async throws -> JSONValue? {
        try await writer.store.checkpoint(job: job.id, stage: job.stage)
    }

    func signalToken(for signal: String) async throws -> String {
        try await tokens.token(job: job.id, signal: signal)
    }

    func jobInput() async throws -> JSONValue {
        // The first stage's input is the job's; a later stage's is the stage before's output.
        if job.stage == 0 { return try JSONValue(parsing: job.input) }
        return try await writer.store.jobInput(job.id)
    }

    func memberIndex() async throws -> Int? {
        try await writer.store.memberIndex(job.id)
    }
}
