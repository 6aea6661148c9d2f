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

    @Flag(help: "Do not cut lines to the terminal's width (or COLUMNS).")
    var wide = false

    var console: Console { Console(noColor: noColor, wide: wide) }

    /// These options, with what they leave unset taken from `global`.
    func over(_ global: AdminOptions) -> AdminOptions {
        var merged = self
        merged.url = url ?? global.url
        merged.token = token ?? global.token
        merged.json = json || global.json
        merged.noColor = noColor || global.noColor
        merged.wide = wide || global.wide
        return merged
    }
}
