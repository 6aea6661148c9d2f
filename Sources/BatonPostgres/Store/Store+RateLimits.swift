import Baton
import Foundation
import PostgresNIO

/// Rate limits: a token bucket per key, spent by `claim_for` as it claims the stages naming it.
/// A key `queue:NAME` or `lane:NAME` (or a prefix of either) is named for the task stages of that
/// queue or lane that name no key themselves (`stage_rate_key`).
extension Store {
    /// Every rate limit set, by key (the buckets a prefix made for its keys aside), its bucket
    /// (`rate_tokens`, else where `rate_limits` starts it) refilled to now (read only: the claim
    /// refills it).
    package func rateLimits() async throws -> [RateLimit] {
        let rows = try await pool.read(
            """
            SELECT r.key, r.rate, r.per_ms, r.burst,
                   least(r.burst, coalesce(t.tokens, r.tokens)
                       + extract(epoch FROM now() - coalesce(t.refilled_at, r.refilled_at)) * 1000.0 * r.rate / r.per_ms
                   )::float8,
                   r.source, r.updated_at
            FROM \(unescaped: schema).rate_limits r
            LEFT JOIN \(unescaped: schema).rate_tokens t ON t.key = r.key
            WHERE r.source <> 'prefix' ORDER BY r.key
            """, logger: logger)
        return try rows.map { row in
            let (key, rate, perMs, burst, tokens, source, updated) = try row.decode(
                (String, Int, Int64, Int, Double, String, Date).self)
            return RateLimit(
                key: key, rate: rate, per: .milliseconds(perMs), burst: burst,
                tokens: key.hasSuffix("*") ? Double(burst) : tokens, source: SettingSource(rawValue: source) ?? .api,
                updatedAt: updated)
        }
    }

    /// Sets the limit of `limit.key` (its bucket starts full; a change keeps the tokens it has, up
    /// to the new burst). A key ending in `*` is a prefix: each key it starts without a limit of its
    /// own gets a bucket of its own with this limit; the buckets it made before start afresh. In
    /// effect at the next claim.
    package func setRateLimit(_ limit: RateLimit, by actor: AuditActor? = nil) async throws {
        try Self.check(limit)
        try await audited(actor) { connection in
            // The limit before, for the record only: no read without an actor.
            guard actor != nil else { return (try await self.setRateLimit(limit, on: connection), []) }
            let before = try await connection.execute(
                """
                SELECT rate, per_ms, burst FROM \(unescaped: self.schema).rate_limits
                WHERE key = \(limit.key) AND source <> 'prefix'
                """, logger: self.logger
            ).first?.decode((Int, Int64, Int).self)
            try await self.setRateLimit(limit, on: connection)
            // Recorded when the limit changed: setting it again to what it was changes nothing.
            if let before, before == (limit.rate, limit.per.milliseconds, limit.burst) { return ((), []) }
            let change = AuditChange(
                "setRateLimit", "rate-limit:\(limit.key)",
                [
                    "rate": .number(JSONNumber(limit.rate)), "per_ms": .number(JSONNumber(limit.per.milliseconds)),
                    "burst": .number(JSONNumber(limit.burst)),
                ])
            return ((), [change])
        }
    }

    private func setRateLimit(_ limit: RateLimit, on connection: PostgresConnection) async throws {
        try await forgetPrefixBuckets(under: limit.key, on: connection)
        // The bucket where it stands (`rate_tokens`, under the key's lock as a claim reads it) is
        // where the changed limit's starts, in `rate_limits`; its row goes, so that the next claim
        // starts from there.
        _ = try await connection.execute(
            "SELECT \(unescaped: schema).lock_rate_keys(ARRAY[\(limit.key)])", logger: logger)
        let rows = try await connection.execute(
            """
            WITH t AS (SELECT tokens, refilled_at FROM \(unescaped: schema).rate_tokens WHERE key = \(limit.key))
            INSERT INTO \(unescaped: schema).rate_limits AS r (key, rate, per_ms, burst, tokens, source)
            VALUES (\(limit.key), \(limit.rate)::int, \(limit.per.milliseconds), \(limit.burst)::int,
                    \(Double(limit.burst)), \(limit.source.rawValue))
            ON CONFLICT (key) DO UPDATE SET
                rate = excluded.rate, per_ms = excluded.per_ms, burst = excluded.burst, source = excluded.source,
                tokens = least(excluded.burst, coalesce((SELECT t.tokens FROM t), r.tokens)
                    + extract(epoch FROM now() - coalesce((SELECT t.refilled_at FROM t), r.refilled_at))
                      * 1000.0 * r.rate / r.per_ms),
                refilled_at = now(), updated_at = now()
            RETURNING xmax = 0
            """, logger: logger)
        _ = try await connection.execute(
            "DELETE FROM \(unescaped: schema).rate_tokens WHERE key = \(limit.key)", logger: logger)
        // `xmax = 0`: the row was inserted, not updated. A new limit on a queue or lane binds its
        // stages already waiting (a changed one binds the same stages).
        if try rows.first?.decode(Bool.self) == true { try await rekeyStages(under: limit.key, on: connection) }
    }

    /// After a limit on a whole queue or lane appeared or went: its waiting stages that name no
    /// key take the key they resolve to now.
    private func rekeyStages(under key: String, on connection: PostgresConnection) async throws {
        guard RateLimit.isScoped(key) else { return }
        try await connection.execute("SELECT \(unescaped: schema).rekey_scoped_stages(\(key))", logger: logger)
    }

    /// Deletes the buckets a prefix made for its keys (`key`, a prefix: each is made afresh, from
    /// the longest prefix then set, by the next claim that needs it).
    private func forgetPrefixBuckets(under key: String, on connection: PostgresConnection) async throws {
        guard key.hasSuffix("*") else { return }
        _ = try await connection.execute(
            """
            DELETE FROM \(unescaped: schema).rate_limits
            WHERE source = 'prefix' AND starts_with(key, \(String(key.dropLast())))
            """, logger: logger)
        try await forgetOrphanedBuckets(on: connection)
    }

    /// Deletes the buckets (`rate_tokens`) of keys that have no limit any more: one made again
    /// for such a key starts full, not where the old one stood.
    private func forgetOrphanedBuckets(on connection: PostgresConnection) async throws {
        _ = try await connection.execute(
            """
            DELETE FROM \(unescaped: schema).rate_tokens t
            WHERE NOT EXISTS (SELECT 1 FROM \(unescaped: schema).rate_limits r WHERE r.key = t.key)
            """, logger: logger)
    }

    /// Deletes the limit of `key`: its stages start as workers claim them. False if it had none.
    @discardableResult
    package func deleteRateLimit(_ key: String, by actor: AuditActor? = nil) async throws -> Bool {
        try await audited(actor) { connection in
            try await self.forgetPrefixBuckets(under: key, on: connection)
            let rows = try await connection.execute(
                "DELETE FROM \(unescaped: self.schema).rate_limits WHERE key = \(key) RETURNING key",
                logger: self.logger)
            if !rows.isEmpty { try await self.rekeyStages(under: key, on: connection) }
            try await self.forgetOrphanedBuckets(on: connection)
            return (!rows.isEmpty, rows.isEmpty ? [] : [AuditChange("deleteRateLimit", "rate-limit:\(key)")])
        }
    }

    /// Makes the rate limits owned by the settings file exactly `limits`, in one transaction.
    package func syncSettingsRateLimits(_ limits: [RateLimit]) async throws {
        for limit in limits { try Self.check(limit) }
        try await pool.withTransaction(logger: logger) { connection in
            // Prefixes may have changed: their keys' buckets are made afresh.
            _ = try await connection.execute(
                "DELETE FROM \(unescaped: self.schema).rate_limits WHERE source = 'prefix'", logger: self.logger)
            for limit in limits {
                var owned = limit
                owned.source = .settings
                try await self.setRateLimit(owned, on: connection)
            }
            let deleted = try await connection.execute(
                """
                DELETE FROM \(unescaped: self.schema).rate_limits
                WHERE source = 'settings' AND key <> ALL(\(limits.map(\.key)))
                RETURNING key
                """, logger: self.logger)
            for row in deleted { try await self.rekeyStages(under: try row.decode(String.self), on: connection) }
            try await self.forgetOrphanedBuckets(on: connection)
        }
    }

    private static func check(_ limit: RateLimit) throws {
        try ChainDefinition.checkName(limit.key, path: "key", what: "rate limit key")
        guard limit.key != "queue:", limit.key != "lane:" else {
            throw BatonError.invalidChain(
                path: "key", reason: "\"\(limit.key)\" names no queue or lane: add its name (or a prefix ending in *)")
        }
        guard RateLimit.rates.contains(limit.rate) else {
            throw BatonError.invalidChain(path: "rate", reason: "a rate is 1 to 1000000 starts per period")
        }
        guard RateLimit.rates.contains(limit.burst) else {
            throw BatonError.invalidChain(path: "burst", reason: "a burst is 1 to 1000000 starts")
        }
        guard RateLimit.periods.contains(limit.per) else {
            throw BatonError.invalidChain(path: "per", reason: "a period is 1ms to 31d, such as 1s, 1m or 1h")
        }
    }
}
