import ArgumentParser
import Baton
import BatonAPI
import BatonHTTPClient
import Foundation

struct RateLimits: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rate-limits",
        abstract: "Rate limits: how often the stages naming a key may start, across every worker.",
        discussion: """
            A stage names a key with "rate": "partner-api" (Swift: .rate("partner-api")). With a
            limit of RATE per PER and a BURST, at most BURST of them start at once after a quiet
            spell and RATE per PER after that; a stage waiting for a token stays available, its
            attempt not spent. A key with no limit does not limit.

            A key queue:NAME or lane:NAME limits every task stage of that queue or lane that names
            no key (the lane's limit wins over the queue's); a key ending in * is a prefix, giving
            each key it starts a bucket of its own: lane:customer-* limits each customer's lane.
            """,
        subcommands: [List.self, SetLimit.self, Unset.self], defaultSubcommand: List.self)

    struct List: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Every rate limit, with the tokens (starts allowed at once) it has now.")

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            let limits = try await admin.client().call { baton in try await baton.rateLimits() }
            let console = admin.console
            if admin.json { return try console.json(Components.Schemas.RateLimitList(rateLimits: limits)) }
            guard !limits.isEmpty else { return console.err("no rate limits") }
            var table = Table(
                [
                    .init(title: "KEY", minimumWidth: 8), .init(title: "RATE", alignRight: true),
                    .init(title: "BURST", alignRight: true), .init(title: "TOKENS", alignRight: true),
                    .init(title: "FROM"),
                ], shrinkOrder: [0])
            for limit in limits {
                table.append([
                    limit.key, "\(limit.rate)/\(limit.per)", "\(limit.burst)",
                    String(format: "%.1f", limit.tokens), limit.source.rawValue,
                ])
            }
            console.out(table.render(on: console))
        }
    }

    struct SetLimit: AdminCommand {
        static let configuration = CommandConfiguration(
            commandName: "set", abstract: "Limit the starts of the stages naming KEY; in effect at the next claim.")

        @Argument(help: "The key stages name in \"rate\", or queue:NAME or lane:NAME.")
        var key: String

        @Option(help: "Starts allowed per period (1 to 1000000).")
        var rate: Int

        @Option(help: "The period: 1s, 1m, 1h (1ms to 31d).")
        var per: String

        @Option(help: "Starts allowed at once after a quiet spell (default: the rate).")
        var burst: Int?

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            let limit = try await admin.client().call { baton in
                try await baton.setRateLimit(key, rate: rate, per: per, burst: burst)
            }
            if admin.json { return try admin.console.json(limit) }
            admin.console.out(
                "rate limit \(Text.printable(limit.key)): \(limit.rate) per \(limit.per), burst \(limit.burst)")
        }
    }

    struct Unset: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a rate limit: the key's stages start as workers claim them.")

        @Argument(help: "The key.")
        var key: String

        @OptionGroup var local: AdminOptions
        @ParentCommand var root: BatonCommand

        func run() async throws {
            try await admin.client().call { baton in try await baton.deleteRateLimit(key) }
            if !admin.json { admin.console.out("rate limit \(Text.printable(key)): deleted") }
        }
    }
}
