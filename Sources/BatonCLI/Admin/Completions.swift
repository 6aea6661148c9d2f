import ArgumentParser
import BatonAPI
import Foundation

/// Value completions for the shells' completion scripts (`baton --generate-completion-script`).
enum Completions {
    /// `--state`: the job states, after those already typed (`running,ret` → `running,retryable`).
    static let states = CompletionKind.custom { _, _, typed in
        let done = typed.split(separator: ",", omittingEmptySubsequences: false)
        let prefix = done.dropLast().map { $0 + "," }.joined()
        let partial = done.last.map(String.init) ?? ""
        return Components.Schemas.JobState.allCases.map(\.rawValue)
            .filter { $0.hasPrefix(partial) && !done.dropLast().contains(Substring($0)) }
            .map { prefix + $0 }
    }

    /// `--queue` and a queue's name: the queues the control plane knows (`GET /v1/queues`), asked
    /// with the `--url` and `--token` of the command line being completed, else the defaults.
    /// Nothing when it cannot be asked within two seconds.
    static let queues = CompletionKind.custom { words, _, typed in
        // Parsed, not `AdminOptions()`: a property wrapper left unparsed traps when read.
        guard var options = try? AdminOptions.parse([]) else { return [] }
        for (index, word) in words.enumerated().dropLast() {
            if word == "--url" { options.url = words[index + 1] }
            if word == "--token" { options.token = words[index + 1] }
        }
        guard let client = try? options.client() else { return [] }
        let names = try? await withThrowingTaskGroup(of: [String]?.self) { group in
            group.addTask { try await client.http.queues().map(\.name) }
            group.addTask {
                try await Task.sleep(for: .seconds(2))
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
        return (names ?? []).filter { $0.hasPrefix(typed) }
    }
}
