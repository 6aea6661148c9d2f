import Logging
import ServiceLifecycle

/// Runs `services` in a `ServiceGroup` while `body` runs, then shuts them down gracefully (as
/// SIGTERM would) and waits for them to stop; `body`'s error, if any, is thrown after that, so that
/// a failing test never leaves a service running. The one harness of the test targets: a worker in
/// process, the control plane with or without one.
public func withRunningServices<T: Sendable>(
    _ services: [any Service], logger: Logger, _ body: @Sendable () async throws -> T
) async throws -> T {
    let group = ServiceGroup(services: services, logger: logger)
    return try await withThrowingTaskGroup(of: T?.self) { running in
        running.addTask {
            try await group.run()
            return nil
        }
        return try await run(body) {
            await group.triggerGracefulShutdown()
            try await running.waitForAll()
        }
    }
}

/// Runs `body`, then `cleanup` whether `body` threw or not; `body`'s error is the one thrown.
func run<T>(_ body: () async throws -> T, thenAlways cleanup: () async throws -> Void) async throws -> T {
    let result: Result<T, any Error>
    do {
        result = .success(try await body())
    } catch {
        result = .failure(error)
    }
    try await cleanup()
    return try result.get()
}
