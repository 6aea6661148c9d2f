import ArgumentParser
import Baton
import BatonAPI
import BatonHTTPClient
import Foundation

extension Jobs {
    struct Signal: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Deliver a signal to a job's await stage; its JSON payload becomes that stage's output.",
            discussion: """
                baton jobs signal 42 payment-confirmed '{"amount": 12.50}' (or - to read the payload from
                standard input; default: null). A job waiting for the signal goes on; one whose chain has not
                reached the stage keeps it for then; a signal delivered before changes nothing. Exits 1 when
                the job refuses it (finished, past the stage, or awaiting no such signal).
                """)

        @Argument(help: "The job's id.")
        var id: JobID

        @Argument(help: "The signal's name, as the await stage names it.")
        var name: String

        @Argument(help: "The payload: JSON, or - for standard input (default: null).")
        var payload: String?

        @Option(help: "The signal's one-time token, instead of an API token.")
        var signalToken: String?

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            let text: String
            switch payload {
            case "-": text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            case let given?: text = given
            case nil: text = "null"
            }
            let value: JSONValue
            do {
                value = try JSONValue(parsing: text, duplicateKeys: .refuse)
            } catch {
                throw AdminFailure(
                    .usage, "the payload is not JSON (\(error)); quote it for the shell: '{\"approved\": true}'")
            }
            let receipt = try await admin.client().call { [signalToken] baton in
                try await baton.signal(id.value, name, payload: value, token: signalToken)
            }
            let console = admin.console
            if admin.json { return try console.json(receipt) }
            switch receipt.outcome {
            case .resumed: console.out("job \(id.value) received signal \(Text.printable(name)) and goes on")
            case .kept:
                console.out(
                    "job \(id.value) keeps signal \(Text.printable(name)) for when its chain reaches the stage "
                        + "(it is \(receipt.state.rawValue) now)")
            case .duplicate:
                console.out("job \(id.value) had signal \(Text.printable(name)) already: nothing changed")
            }
        }
    }
}
