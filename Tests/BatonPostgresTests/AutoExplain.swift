import BatonTestSupport
import Foundation
import LocalPostgres
import Testing

/// The plans PostgreSQL made for statements psql sends on one connection (so one plan cache),
/// shown by auto_explain as notices: each one's query text, then its plan, the statements inside
/// Baton's functions included.
enum AutoExplain {
    /// Runs `statements` (a command each: a plan's query text is its command's) after `settings`,
    /// in the test database's schema, and returns one text per plan shown.
    static func plans(in db: TestDatabase, settings: [String] = [], _ statements: [String]) async throws -> [String] {
        var address = try #require(URLComponents(string: db.url))
        address.query = nil
        let script =
            [
                "LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
                "SET auto_explain.log_nested_statements = on", "SET auto_explain.log_level = notice",
                "SET search_path = \(TestDatabase.schema)",
            ] + settings + statements
        let psql = try await ChildProcess(
            try await LocalPostgres.findPsql(),
            ["-XAtq", "-v", "ON_ERROR_STOP=1", "-d", try #require(address.string)] + script.flatMap { ["-c", $0] })
        #expect(try await psql.waitForExit(timeout: .seconds(60)) == 0, "\(psql.standardError)")
        return Array(psql.standardError.components(separatedBy: "NOTICE:").dropFirst())
    }

    /// A plan's query text, its first line.
    static func query(of plan: String) -> String {
        plan.components(separatedBy: "Query Text: ").dropFirst().first?
            .prefix { $0 != "\n" }.trimmingCharacters(in: .whitespaces) ?? plan
    }
}
