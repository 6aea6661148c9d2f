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
        let result: Result<T, any Error>
        do {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        await group.triggerGracefulShutdown()
        try await running.waitForAll()
        return try result.get()
    }
}
