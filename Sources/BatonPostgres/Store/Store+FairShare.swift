import Baton
import Foundation
import PostgresNIO

/// Fair share (migration 28): what an operator sees of a fair queue's keys, and where a queue
/// takes the keys of jobs that name none.
extension Store {
    /// How many keys ``fairShareBacklogs()`` names per queue.
    package static let fairKeysShown = 5
    /// How far back ``FairShareBacklog/recentStarts`` counts: this minute and the four before.
    package static let recentStartsMinutes = 5

    /// Each fair queue (`GET /v1/queues`, the overview, `baton_fair_key_*`), in one statement:
    /// where it takes the keys of jobs naming none, its keys with stages waiting and the
    /// ``fairKeysShown`` with the most, the keys holding the most of its running stages now, and
    /// the stages claimed over the last ``recentStartsMinutes`` minutes with the keys that took
    /// the most of them (`queue_minutes`, five rows a queue).
    /// Waiting stages are counted in `ready`, the claim's table, through `ready_keys`, as the
    /// per-state counts are (a stage that left `available` by another way than a claim, a cancel,
    /// counts until rotation drops its row, within seconds); running ones through `jobs_running`,
    /// as many as the workers' slots.
    package func fairShareBacklogs() async throws -> [String: FairShareBacklog] {
        // The ``fairKeysShown`` keys (`k`) with the most stages (`n`) of a ranked group `g`, as JSON.
        let top = """
            coalesce(json_agg(json_build_array(g.k, g.n) ORDER BY g.rank)
                     FILTER (WHERE g.rank <= \(Self.fairKeysShown)), '[]')::text
            """
        let rows = try await pool.read(
            """
            SELECT f.queue, f.key_from, w.keys, w.top, r.running, r.top, s.started, s.top
            FROM \(unescaped: schema).fair_queues f
            CROSS JOIN LATERAL (
                SELECT count(*)::int AS keys, \(unescaped: top) AS top
                FROM (SELECT r.fair_key AS k, count(*)::int AS n,
                             row_number() OVER (ORDER BY count(*) DESC, r.fair_key) AS rank
                      FROM \(unescaped: schema).ready r
                      WHERE r.queue = f.queue AND r.fair_key IS NOT NULL GROUP BY r.fair_key) g) w
            CROSS JOIN LATERAL (
                SELECT coalesce(sum(g.n), 0)::int AS running, \(unescaped: top) AS top
                FROM (SELECT coalesce(j.fair_key, '') AS k, count(*)::int AS n,
                             row_number() OVER (ORDER BY count(*) DESC, coalesce(j.fair_key, '')) AS rank
                      FROM \(unescaped: schema).jobs j
                      WHERE j.state = 'running' AND j.queue = f.queue GROUP BY 1) g) r
            CROSS JOIN LATERAL (
                SELECT coalesce(sum(\(unescaped: Self.waitBuckets.map { "m.\($0.column)" }.joined(separator: " + "))), 0)::int
                           AS started,
                       coalesce((
                           SELECT json_agg(json_build_array(g.k, g.n) ORDER BY g.n DESC, g.k)
                           FROM (SELECT e.key AS k, sum(e.value::bigint)::int AS n
                                 FROM unnest(array_agg(m.fair_starts)) x(starts)
                                 CROSS JOIN LATERAL jsonb_each_text(x.starts) e
                                 GROUP BY e.key ORDER BY n DESC, e.key LIMIT \(Self.fairKeysShown)) g), '[]')::text AS top
                FROM \(unescaped: schema).queue_minutes m
                WHERE m.queue = f.queue
                  AND m.minute >= date_trunc('minute', now()) - \(Self.recentStartsMinutes - 1) * interval '1 minute') s
            """, logger: logger)
        func keys(_ text: String) throws -> [FairShareBacklog.Key] {
            try (JSONValue(parsing: text).arrayValue ?? []).map { pair in
                let fields = pair.arrayValue ?? []
                guard fields.count == 2, let key = fields[0].stringValue else {
                    throw BatonError.invalidChain(path: "fair_share", reason: "unreadable key row")
                }
                return FairShareBacklog.Key(key: key, stages: try fields[1].decode(as: Int.self))
            }
        }
        var backlogs: [String: FairShareBacklog] = [:]
        for row in rows {
            let (queue, from, waiting, top, running, runningTop, started, startedTop) = try row.decode(
                (String, String?, Int, String, Int, String, Int, String).self)
            backlogs[queue] = FairShareBacklog(
                keyFrom: from, keys: waiting, top: try keys(top), running: running, runningTop: try keys(runningTop),
                recentStarts: started, recentTop: try keys(startedTop))
        }
        return backlogs
    }

    /// The fairness key ("" for none) of each job of `claims` claimed in a fair queue, by primary
    /// key; claims of other queues are not looked up, and jobs gone are left out. What a worker's
    /// history looks up for a sample of the stages it claimed (``HistoryMinute/fairStarts``): the
    /// claim itself does not say, so that it stays as it is for queues that are not fair. One
    /// statement: `fair_queues` is asked first (a handful of rows), so a worker serving no fair
    /// queue pays a probe of it per queue, not one of `jobs` per claim sampled.
    package func fairKeys(ofClaims claims: [(job: Int64, queue: String)]) async throws -> [Int64: String] {
        guard !claims.isEmpty else { return [:] }
        let rows = try await pool.read(
            """
            SELECT c.id, (SELECT coalesce(j.fair_key, '') FROM \(unescaped: schema).jobs j WHERE j.id = c.id)
            FROM unnest(\(claims.map(\.job))::bigint[], \(claims.map(\.queue))::text[]) AS c(id, queue)
            WHERE EXISTS (SELECT 1 FROM \(unescaped: schema).fair_queues f WHERE f.queue = c.queue)
            """, logger: logger)
        var keys: [Int64: String] = [:]
        for row in rows {
            let (id, key) = try row.decode((Int64, String?).self)
            keys[id] = key
        }
        return keys
    }

    /// Makes `queue` fair and its jobs that name no key take the one `from` says (a
    /// ``FairKeySource``), or, with nil, name their own again (the queue stays fair). In effect
    /// for the jobs enqueued from the next statement on; jobs enqueued before keep theirs.
    package func setFairKeySource(_ from: FairKeySource?, queue: String, by actor: AuditActor? = nil) async throws {
        try ChainDefinition.checkName(queue, path: "name", what: "queue name")
        try await audited(actor) { connection in
            guard try await self.setFairKeySource(from, queue: queue, source: .api, on: connection) else {
                return ((), [])
            }
            let details: JSONValue = from.map { ["from": .string($0.path)] } ?? [:]
            return (
                (), [AuditChange(from == nil ? "clearFairKeySource" : "setFairKeySource", "queue:\(queue)", details)]
            )
        }
    }
}

extension Store {
    /// Makes the fairness-key sources owned by the settings file (`fair_keys:`) exactly `sources`:
    /// saves each, clears the file's others, in one transaction.
    package func syncSettingsFairKeySources(_ sources: [(queue: String, from: FairKeySource)]) async throws {
        for (queue, _) in sources { try ChainDefinition.checkName(queue, path: "fair_keys", what: "queue name") }
        try await pool.withTransaction(logger: logger) { connection in
            for (queue, from) in sources {
                try await self.setFairKeySource(from, queue: queue, source: .settings, on: connection)
            }
            // Those the file set and no longer lists: cleared (the queues stay fair).
            try await connection.execute(
                """
                UPDATE \(unescaped: self.schema).fair_queues SET key_from = NULL, key_from_source = NULL
                WHERE key_from_source = 'settings' AND queue <> ALL (\(sources.map(\.queue)))
                """, logger: self.logger)
        }
    }

    /// Sets (or with nil clears) where `queue` takes the keys of jobs naming none, and who set it;
    /// returns whether that changed anything. (Clearing it on a queue that is not fair leaves it so.)
    @discardableResult
    private func setFairKeySource(
        _ from: FairKeySource?, queue: String, source: SettingSource, on connection: PostgresConnection
    ) async throws -> Bool {
        let rows = try await connection.execute(
            from.map { from in
                """
                INSERT INTO \(unescaped: schema).fair_queues AS f (queue, key_from, key_from_source)
                VALUES (\(queue), \(from.path), \(source.rawValue))
                ON CONFLICT (queue) DO UPDATE SET key_from = excluded.key_from, key_from_source = excluded.key_from_source
                WHERE (f.key_from, f.key_from_source) IS DISTINCT FROM (excluded.key_from, excluded.key_from_source)
                RETURNING queue
                """
            }
                ?? """
                UPDATE \(unescaped: schema).fair_queues SET key_from = NULL, key_from_source = NULL
                WHERE queue = \(queue) AND key_from IS NOT NULL RETURNING queue
                """, logger: logger)
        return !rows.isEmpty
    }
}

/// Where a queue takes the fairness key of a job that names none: a dotted path in the job's
/// metadata or input, `metadata.tenant` or `input.customer.id`; written so or as a template,
/// `{{metadata.tenant}}`. The value there must be text; a job with nothing there shares the key
/// `""` of the stages without one.
public struct FairKeySource: Sendable, Hashable, CustomStringConvertible {
    /// `metadata.tenant`.
    public let path: String

    /// Reads `text`; refuses (naming `field`) anything but `metadata.` or `input.` followed by
    /// names of ASCII letters, digits, `_` and `-`, joined by dots, at most 200 characters in all
    /// (inside `{{ }}`, spaces around it).
    public init(parsing text: String, field: String = "from") throws(BatonError) {
        var path = text
        if path.hasPrefix("{{") && path.hasSuffix("}}") {
            path = String(path.dropFirst(2).dropLast(2)).trimmingCharacters(in: [" "])
        }
        let parts = path.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 2, ["metadata", "input"].contains(parts[0]), text.unicodeScalars.count <= 200,
            parts.dropFirst().allSatisfy({ part in
                !part.isEmpty
                    && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
            })
        else {
            throw .invalidChain(
                path: field,
                reason: "a fairness key comes from a field of the job's metadata or input, such as metadata.tenant "
                    + "or input.customer.id; \(text.debugDescription) is not one")
        }
        self.path = path
    }

    public var description: String { path }
}
