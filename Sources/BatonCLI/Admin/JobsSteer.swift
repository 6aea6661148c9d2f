import ArgumentParser
import Baton
import BatonAPI
import BatonHTTPClient
import Foundation

extension Jobs {
    struct Cancel: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cancel jobs, running ones included (their worker stops the stage).")

        @Argument(help: "The jobs' ids.")
        var ids: [JobID]

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            try await steer(ids, admin) { client, id in
                let job = try await client.call { baton in try await baton.cancel(id) }
                return (job, "cancelled job \(id)")
            }
        }
    }

    struct Retry: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Start discarded or cancelled jobs again at the stage that failed.")

        @Argument(help: "The jobs' ids.")
        var ids: [JobID]

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            try await steer(ids, admin) { client, id in
                let job = try await client.call { baton in try await baton.retry(id) }
                return (job, "retrying job \(id) at stage \(job.currentStage + 1)/\(job.stages.count)")
            }
        }
    }

    struct Delete: AdminCommand {
        static let configuration = CommandConfiguration(abstract: "Delete finished jobs.")

        @Argument(help: "The jobs' ids.")
        var ids: [JobID]

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            try await steer(ids, admin) { client, id in
                try await client.call { baton in try await baton.delete(id) }
                return (Deleted(id: id), "deleted job \(id)")
            }
        }
    }
}

/// Does `action` to each job in turn, going on past failures: each success is a line (with
/// `--json`, the API's answer as one JSON line), each failure a message on standard error; the
/// command fails with the first failure's status.
private func steer(
    _ ids: [JobID], _ admin: AdminOptions,
    _ action: (AdminClient, Int64) async throws -> (json: any Encodable, text: String)
) async throws {
    let client = try admin.client()
    let console = admin.console
    var first: AdminFailure?
    for id in ids.map(\.value) {
        do {
            let (json, text) = try await action(client, id)
            if admin.json { try console.json(json) } else { console.out(text) }
        } catch let failure as AdminFailure where failure.status != .unreachable && failure.status != .unauthorized {
            console.err("baton: job \(id): \(failure.message)")
            first = first ?? failure
        }
    }
    // Each failure has been told; only the status is left to give.
    if let first { throw ExitCode(first.status.rawValue) }
}

/// What `baton jobs delete --json` prints for a deleted job (the API answers 204, no body).
private struct Deleted: Encodable {
    var id: Int64
    var deleted = true
}
