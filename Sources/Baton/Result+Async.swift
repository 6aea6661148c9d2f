extension Result where Failure == any Error {
    /// The result of an async throwing call.
    package init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
