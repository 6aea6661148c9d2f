import Foundation
import Testing

/// The shape of the tree, as a newcomer meets it: checks a script could make, made here so that
/// the tree cannot drift from them.
@Suite struct HouseTests {
    static let root = DocumentationTests.root

    /// The schema is one file and the functions, plus what came after the first release: one
    /// baseline (`_schema.sql`), every other numbered file later than it.
    @Test func theSchemaIsOneFileAndItsFunctions() throws {
        let numbered = try FileManager.default.contentsOfDirectory(atPath: Self.root.appending(path: "migrations").path)
            .filter { $0.first?.isNumber == true && $0.hasSuffix(".sql") }.sorted()
        let baselines = numbered.filter { $0.hasSuffix("_schema.sql") }
        #expect(baselines.count == 1 && numbered.first == baselines.first, "\(numbered)")
    }

    /// No folder of sources holds more than 20 Swift files side by side: past that, a reader
    /// cannot find a responsibility by its file name.
    @Test func noFolderOfSourcesIsCrowded() throws {
        var crowded: [String] = []
        let sources = Self.root.appending(path: "Sources")
        let enumerator = FileManager.default.enumerator(atPath: sources.path)
        var counts: [String: Int] = [:]
        while let path = enumerator?.nextObject() as? String {
            if path.hasSuffix(".swift") { counts[(path as NSString).deletingLastPathComponent, default: 0] += 1 }
        }
        for (folder, count) in counts where count > 20 { crowded.append("Sources/\(folder): \(count)") }
        #expect(crowded.isEmpty, "\(crowded.sorted())")
    }

    /// The server and the worker ask the store's errors what they are (``StoreError``);
    /// PostgresNIO's error type stays below the store.
    @Test func theServerAndTheWorkerDoNotSeePostgresNIOsErrors() throws {
        var found: [String] = []
        for target in ["BatonServer", "BatonWorker"] {
            let enumerator = FileManager.default.enumerator(atPath: Self.root.appending(path: "Sources/\(target)").path)
            while let path = enumerator?.nextObject() as? String {
                guard path.hasSuffix(".swift") else { continue }
                let text = try String(
                    contentsOf: Self.root.appending(path: "Sources/\(target)/\(path)"), encoding: .utf8)
                if text.contains("PSQLError") { found.append("\(target)/\(path)") }
            }
        }
        #expect(found.isEmpty, "\(found)")
    }

    /// The store knows no task: a task's checks of its args come from the task registry.
    @Test func theStoreKnowsNoTask() throws {
        let package = try String(contentsOf: Self.root.appending(path: "Package.swift"), encoding: .utf8)
        let target = try #require(package.range(of: "name: \"BatonPostgres\""))
        let dependencies = package[target.upperBound...].prefix { $0 != "]" }
        #expect(!dependencies.contains("BatonHTTPTask"))
    }
}
