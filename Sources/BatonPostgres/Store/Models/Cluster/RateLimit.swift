import Baton
import Foundation

/// At most `rate` starts per `per`, and `burst` at once after a quiet spell, of the stages naming
/// `key` (`"rate": "partner-api"`), across every worker.
public struct RateLimit: Sendable, Hashable {
    public var key: String
    public var rate: Int
    public var per: Duration
    public var burst: Int
    /// Tokens in the bucket now (refilled to this instant): how many may start at once.
    public var tokens: Double
    public var source: SettingSource
    public var updatedAt: Date

    /// Rates, bursts and periods an operator may set.
    public static let rates = 1...1_000_000
    public static let periods = Duration.milliseconds(1)...Duration.seconds(31 * 86_400)

    /// Whether `key` limits a whole queue (`queue:NAME`) or lane (`lane:NAME`), or a prefix of
    /// them (`lane:customer-*`): the key of every task stage there that names none itself.
    public static func isScoped(_ key: String) -> Bool {
        key.hasPrefix("queue:") || key.hasPrefix("lane:")
    }

    public init(
        key: String, rate: Int, per: Duration, burst: Int? = nil, tokens: Double? = nil,
        source: SettingSource = .api, updatedAt: Date = Date()
    ) {
        self.key = key
        self.rate = rate
        self.per = per
        self.burst = burst ?? rate
        self.tokens = tokens ?? Double(burst ?? rate)
        self.source = source
        self.updatedAt = updatedAt
    }
}
