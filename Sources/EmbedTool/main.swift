import Baton
import BatonYAML
import Foundation
import Yams

// Files compiled into Baton's targets, so that the `baton` binary runs where only it was copied.
//
//   EmbedTool migrations OUTPUT.swift FILE.sql…   `EmbeddedMigrations.all` (numbered steps) and
//                                                 `.functions` (files under functions/): (file name, SQL), in order
//   EmbedTool openapi OUTPUT.swift openapi.yaml   `EmbeddedOpenAPI.json`: the document as JSON text
//   EmbedTool dashboard OUTPUT.swift FILE…        `EmbeddedDashboard.files`: file name → text
let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2, ["migrations", "openapi", "dashboard"].contains(arguments[0]) else {
    FileHandle.standardError.write(Data("usage: EmbedTool migrations|openapi|dashboard OUTPUT FILE…\n".utf8))
    exit(2)
}
let (mode, output, files) = (arguments[0], arguments[1], arguments.dropFirst(2).map(URL.init(fileURLWithPath:)))

/// `text` as a Swift raw string literal.
func literal(_ text: String) -> String {
    var hashes = "#"
    while text.contains("\"\"\"" + hashes) || text.contains("\"" + hashes) { hashes += "#" }
    return "\(hashes)\"\"\"\n\(text)\n\"\"\"\(hashes)"
}

var swift: String
switch mode {
case "migrations":
    func entries(_ urls: [URL]) throws -> String {
        var entries = ""
        for url in urls {
            let sql = try String(contentsOf: url, encoding: .utf8)
            entries += "        (\n            \(String(reflecting: url.lastPathComponent)),\n"
            entries += "            \(literal(sql))\n        ),\n"
        }
        return entries
    }
    let functions = files.filter { $0.deletingLastPathComponent().lastPathComponent == "functions" }
    let steps = files.filter { !functions.contains($0) }
    swift = "// Generated from migrations/ by the EmbedMigrations plugin. Do not edit.\n"
    swift += "enum EmbeddedMigrations {\n"
    swift += "    static let all: [(file: String, sql: String)] = [\n\(try entries(steps))    ]\n"
    swift += "    static let functions: [(file: String, sql: String)] = [\n\(try entries(functions))    ]\n"
    swift += "}\n"
case "dashboard":
    swift = "// Generated from Dashboard/Resources/ by the EmbedDashboard plugin. Do not edit.\n"
    swift += "enum EmbeddedDashboard {\n    static let files: [String: String] = [\n"
    for url in files {
        let text = try String(contentsOf: url, encoding: .utf8)
        swift += "        \(String(reflecting: url.lastPathComponent)): \(literal(text)),\n"
    }
    swift += "    ]\n}\n"
default:
    let yaml = try String(contentsOf: files[0], encoding: .utf8)
    guard let node = try Yams.compose(yaml: yaml) else { throw YamlError.representer(problem: "an empty document") }
    swift = "// Generated from openapi.yaml by the EmbedOpenAPI plugin. Do not edit.\n"
    swift += "package enum EmbeddedOpenAPI {\n    /// The OpenAPI document, as JSON text.\n"
    swift += "    package static let json = \(literal(try JSONValue(yaml: node).jsonText))\n}\n"
}
try swift.write(toFile: output, atomically: true, encoding: .utf8)
