/// The tests' one way to wait for something that happens elsewhere (another task, a process, the
/// database): asks every 20 ms until `condition` holds, up to `timeout`, then throws naming `what`.
public func eventually(
    timeout: Duration = .seconds(30), _ what: String = "condition", _ condition: () async throws -> Bool
) async throws {
    _ = try await eventually(timeout: timeout, what) { try await condition() ? true : nil }
}

/// Asks every 20 ms until `value` gives one, up to `timeout`, and returns it; then throws naming
/// `what`.
public func eventually<T>(
    timeout: Duration = .seconds(30), _ what: String = "a value", value: () async throws -> T?
) async throws -> T {
    let deadline = ContinuousClock.now + timeout
    while true {
        if let value = try await value() { return value }
        guard ContinuousClock.now < deadline else {
            throw TestFailure("timed out after \(timeout) waiting for \(what)")
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}
