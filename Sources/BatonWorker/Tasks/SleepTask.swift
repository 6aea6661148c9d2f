import Baton

/// `sleep`: waits `{"ms": N}` milliseconds (0 to one day), then returns its input unchanged.
/// Cancellation ends the wait.
enum SleepTask {
    static let name = "sleep"

    @Sendable static func run(args: JSONValue, input: String, context: StageContext) async throws -> String {
        guard let ms = args["ms"]?.numberValue?.integer(as: Int64.self), (0...86_400_000).contains(ms) else {
            throw TaskFailure.permanent("sleep needs args {\"ms\": N} with 0 ≤ N ≤ 86400000")
        }
        try await Task.sleep(for: .milliseconds(ms))
        return input
    }
}
