import Baton
import BatonTestSupport
import Foundation
import Testing

/// Processes started against a schema older than the binary.
@Suite struct SchemaVersionTests {
    /// `baton worker` and `baton serve` refuse to start on a schema that is not migrated (or is
    /// older than they need): exit 1 at once, saying to run `baton migrate`; nothing is created.
    @Test(arguments: [["worker"], ["serve", "--port", "0"]])
    func aProcessRefusesAnOlderSchema(command: [String]) async throws {
        try await TestDatabase.with { db async throws in
            let schema = "old_" + db.configuration.schema
            let url = db.url.replacingOccurrences(
                of: "schema=\(db.configuration.schema)", with: "schema=\(schema)")
            let process = try await ChildProcess(
                try ChildProcess.builtBinary("baton"), command + ["--database-url", url],
                environment: SettingsTests.clean.merging(["BATON_API_TOKEN": "schema-test-token-0123456789"]) {
                    _, new in new
                })
            defer { if process.isRunning { process.signal(SIGKILL) } }
            let status = try await process.waitForExit(timeout: .seconds(30))
            #expect(status != 0)
            #expect(process.standardError.contains("is at version 0"), "\(process.standardError)")
            #expect(process.standardError.contains("run `baton migrate`"), "\(process.standardError)")
            let tables = try await db.values(
                "SELECT count(*)::int FROM information_schema.tables WHERE table_schema = \(schema)", as: Int.self)
            #expect(tables == [0])
        }
    }
}
