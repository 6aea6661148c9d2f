import Foundation
import PackagePlugin

/// Compiles the dashboard's templates and assets (`Dashboard/Resources/` of the target) into it
/// (`EmbeddedDashboard.files`), so the `baton` binary serves its web UI with no file beside it.
///
/// As with the migrations, SwiftPM lists the directory when it plans a build: after adding a file
/// to an existing checkout, `touch Package.swift`. Edits to existing files are picked up as usual.
@main
struct EmbedDashboard: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let directory = target.directoryURL.appending(path: "Dashboard/Resources")
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedDashboard.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) dashboard files",
                executable: try context.tool(named: "EmbedTool").url,
                arguments: ["dashboard", output.path] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output]
            )
        ]
    }
}
