import Baton
import Foundation
import PostgresNIO

/// Rate limits: a token bucket per key, spent by `claim_for` as it claims the stages naming it.
extension Store {
    /// Every rate limit, by key, its bucket refilled to now (read only: the claim refills it).
    package func rateLimits() async throws -> [RateLimit] {
        let rows = try await pool.read(
            """
            SELECT key, rate, per_ms, burst,
                   least(burst, tokens + extract(epoch FROM now() - refilled_at) * 1000.0 * rate / per_ms)::float8,
                   source, updated_at
            FROM \(unescaped: schema).rate_limits ORDER BY key
            """, logger: logger)
        return try rows.map { row in
            let (key, rate, perMs, burst, tokens, source, updated) = try row.decode(
                (String, Int, Int64, Int, Double, String, Date).self)
            return RateLimit(
                key: key, rate: rate, per: .milliseconds(perMs), burst: burst, tokens: tokens,
                source: SettingSource(rawValue: source) ?? .api, updatedAt: updated)
        }
    }

    /// Sets the limit of `limit.key` (its bucket starts full; a change keeps the tokens it has, up
    /// to the new burst), or deletes it (`limit` nil for `key`). In effect at the next claim.
    package func setRateLimit(_ limit: RateLimit) async throws {
        try Self.check(limit)
        _ = try await pool.rows(
            """
            INSERT INTO \(unescaped: schema).rate_limits AS r (key, rate, per_ms, burst, tokens, source)
            VALUES (\(limit.key), \(limit.rate)::int, \(limit.per.milliseconds), \(limit.burst)::int,
                    \(Double(limit.burst)), \(limit.source.rawValue))
            ON CONFLICT (key) DO UPDATE SET
                rate = excluded.rate, per_ms = excluded.per_ms, burst = excluded.burst, source = excluded.source,
                tokens = least(excluded.burst, r.tokens + extract(epoch FROM now() - r.refilled_at) * 1000.0 * r.rate / r.per_ms),
                refilled_at = now(), updated_at = now()
            """, logger: logger)
    }

    /// Deletes the limit of `key`: its stages start as workers claim them. False if it had none.
    @discardableResult
    package func deleteRateLimit(_ key: String) async throws -> Bool {
        let rows = try await pool.rows(
            "DELETE FROM \(unescaped: schema).rate_limits WHERE key = \(key) RETURNING key", logger: logger)
        return !rows.isEmpty
    }

    /// Makes the rate limits owned by the settings file exactly `limits`, in one transaction.
    package func syncSettingsRateLimits(_ limits: [RateLimit]) async throws {
        for limit in limits { try Self.check(limit) }
        try await pool.withTransaction(logger: logger) { connection in
            for limit in limits {
                _ = try await connection.rows(
                    """
                    INSERT INTO \(unescaped: self.schema).rate_limits AS r (key, rate, per_ms, burst, tokens, source)
                    VALUES (\(limit.key), \(limit.rate)::int, \(limit.per.milliseconds), \(limit.burst)::int,
                            \(Double(limit.burst)), 'settings')
                    ON CONFLICT (key) DO UPDATE SET
                        rate = excluded.rate, per_ms = excluded.per_ms, burst = excluded.burst, source = 'settings',
                        tokens = least(excluded.burst, r.tokens), updated_at = now()
                    """, logger: self.logger)
            }
            _ = try await connection.rows(
                """
                DELETE FROM \(unescaped: self.schema).rate_limits
                WHERE source = 'settings' AND key <> ALL(\(limits.map(\.key)))
                """, logger: self.logger)
        }
    }

    private static func check(_ limit: RateLimit) throws {
        try ChainDefinition.checkName(limit.key, path: "key", what: "rate limit key")
        guard RateLimit.rates.contains(limit.rate) else {
            throw BatonError.invalidChain(path: "rate", reason: "a rate is 1 to 1000000 starts per period")
        }
        guard RateLimit.rates.contains(limit.burst) else {
            throw BatonError.invalidChain(path: "burst", reason: "a burst is 1 to 1000000 starts")
        }
        guard RateLimit.periods.contains(limit.per) else {
            throw BatonError.invalidChain(path: "per", reason: "a period is 1ms to 31d")
        }
    }
}
