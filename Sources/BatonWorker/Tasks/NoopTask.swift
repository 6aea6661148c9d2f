import Baton

/// `noop`: returns its input unchanged. Useful to measure the engine and to pass data along.
enum NoopTask {
    static let name = "noop"

    @Sendable static func run(args: JSONValue, input: String, context: StageContext) async throws -> String {
        input
    }
}
