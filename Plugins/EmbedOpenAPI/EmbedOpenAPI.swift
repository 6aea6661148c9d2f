import Foundation
import PackagePlugin

/// Compiles the target's `openapi.yaml` into it as JSON (`EmbeddedOpenAPI.json`), so that the
/// server serves the very document its code was generated from, with no file beside the binary.
@main
struct EmbedOpenAPI: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let document = target.directoryURL.appending(path: "openapi.yaml")
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedOpenAPI.swift")
        return [
            .buildCommand(
                displayName: "Embedding the OpenAPI document",
                executable: try context.tool(named: "EmbedTool").url,
                arguments: ["openapi", output.path, document.path],
                inputFiles: [document],
                outputFiles: [output]
            )
        ]
    }
}
