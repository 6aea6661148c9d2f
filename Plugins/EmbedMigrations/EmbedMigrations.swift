import Foundation
import PackagePlugin

/// Compiles `migrations/*.sql` (numbered schema steps) and `migrations/functions/*.sql` (one
/// function each) into the target, so the `baton` binary carries its schema and `migrations/`
/// stays the one source of truth.
///
/// SwiftPM lists the directory when it plans a build and keeps the plan until a manifest changes:
/// after adding a migration file to an existing checkout, `touch Package.swift` (a fresh clone is
/// always planned anew). Edits to existing files are picked up as usual.
@main
struct EmbedMigrations: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let directory = context.package.directoryURL.appending(path: "migrations")
        func sqlFiles(_ directory: URL) throws -> [URL] {
            try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "sql" }
                .sorted { $0.lastPathComponent < $1.lastPathComponent }
        }
        let files = try sqlFiles(directory) + sqlFiles(directory.appending(path: "functions"))
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) migrations",
                executable: try context.tool(named: "EmbedTool").url,
                arguments: ["migrations", output.path] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output]
            )
        ]
    }
}
