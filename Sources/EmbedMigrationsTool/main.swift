import Foundation

// Usage: EmbedMigrationsTool OUTPUT.swift FILE.sql…
// Writes `EmbeddedMigrations.all`: (file name, SQL text) in file-name order.
let arguments = CommandLine.arguments.dropFirst()
guard let output = arguments.first else {
    FileHandle.standardError.write(Data("usage: EmbedMigrationsTool OUTPUT FILE.sql…\n".utf8))
    exit(2)
}
var swift = "// Generated from migrations/*.sql by the EmbedMigrations plugin. Do not edit.\n"
swift += "enum EmbeddedMigrations {\n    static let all: [(file: String, sql: String)] = [\n"
for path in arguments.dropFirst() {
    let url = URL(fileURLWithPath: path)
    let sql = try String(contentsOf: url, encoding: .utf8)
    var hashes = "#"
    while sql.contains("\"\"\"" + hashes) || sql.contains("\"" + hashes) { hashes += "#" }
    swift += "        (\n            \(String(reflecting: url.lastPathComponent)),\n"
    swift += "            \(hashes)\"\"\"\n\(sql)\n\"\"\"\(hashes)\n        ),\n"
}
swift += "    ]\n}\n"
try swift.write(toFile: output, atomically: true, encoding: .utf8)
