/// What a running stage asks of the worker that runs it, through its ``StageContext``: where its
/// progress goes, the checkpoint an earlier attempt saved, its signals' tokens, the job's input.
/// A worker provides them from its database; a context made for a test, from memory.
package protocol StageServices: Sendable {
    /// Takes the attempt's latest report (already merged over the one before).
    func report(_ progress: StageProgress)
    /// The checkpoint an earlier attempt at this stage saved, if any.
    func savedCheckpoint() async throws -> JSONValue?
    /// The one-time token of the job's signal `signal`.
    func signalToken(for signal: String) async throws -> String
    /// The job's input: what its first stage was given.
    func jobInput() async throws -> JSONValue
    /// The job's place in its group or map (0-based), nil for a job that is no member.
    func memberIndex() async throws -> Int?
}

/// A test's stage services: the checkpoint and job input it was given, reports kept by the
/// context alone, `test-token-` and the signal's name as tokens.
struct TestStageServices: StageServices {
    let saved: JSONValue?
    let input: JSONValue

    func report(_ progress: StageProgress) {}

    func savedCheckpoint() async throws -> JSONValue? { saved }

    func signalToken(for signal: String) async throws -> String { "test-token-\(signal)" }

    func jobInput() async throws -> JSONValue { input }

    func memberIndex() async throws -> Int? { nil }
}
