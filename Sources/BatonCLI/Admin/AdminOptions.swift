import ArgumentParser
import Foundation

/// A command that talks to the control plane. Its options may come after it
/// (`baton jobs list --json`) or, as global options, before it (`baton --json jobs list`).
protocol AdminCommand: AsyncParsableCommand {
    /// The options given after the command.
    var local: AdminOptions { get }
    /// The root command, holding the options given before the command.
    var root: BatonCommand { get }
}

extension AdminCommand {
    var admin: AdminOptions { local.over(root.admin) }
}

/// What every command that talks to the control plane takes.
struct AdminOptions: ParsableArguments {
    @Option(help: "The control plane's address (default: $BATON_URL, else http://127.0.0.1:8080).")
    var url: String?

    @Option(help: "Bearer token (default: $BATON_TOKEN, else $BATON_API_TOKEN).")
    var token: String?

    @Flag(help: "Print the API's JSON instead of text.")
    var json = false

    @Flag(help: "No colours, even on a terminal (NO_COLOR does the same).")
    var noColor = false

    func client() throws -> AdminClient {
        let environment = ProcessInfo.processInfo.environment
        func nonEmpty(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        return try AdminClient(
            base: url ?? nonEmpty("BATON_URL") ?? "http://127.0.0.1:8080",
            token: token ?? nonEmpty("BATON_TOKEN") ?? nonEmpty("BATON_API_TOKEN"))
    }

    var console: Console { Console(noColor: noColor) }

    /// These options, with what they leave unset taken from `global`.
    func over(_ global: AdminOptions) -> AdminOptions {
        var merged = self
        merged.url = url ?? global.url
        merged.token = token ?? global.token
        merged.json = json || global.json
        merged.noColor = noColor || global.noColor
        return merged
    }
}

/// A path segment or query value, percent-encoded.
func escaped(_ text: String) -> String {
    text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
}

/// RFC 3986's unreserved characters: ASCII only, so that a name in any script is encoded.
private let unreserved = CharacterSet(
    charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

/// `?a=1&b=2` from the pairs whose value is set.
func query(_ items: [(String, String?)]) -> String {
    let set = items.compactMap { name, value in value.map { "\(name)=\(escaped($0))" } }
    return set.isEmpty ? "" : "?" + set.joined(separator: "&")
}
