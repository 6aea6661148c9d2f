import Baton
import Foundation
import PostgresNIO

/// Who makes a change, as the audit trail records it: a token's name (never its secret) and the
/// request's id. The control plane names every change it makes; a Swift caller of ``BatonClient``
/// may name itself to have its changes recorded too.
public struct AuditActor: Sendable, Hashable {
    public var name: String
    public var requestID: String?

    public init(name: String, requestID: String? = nil) {
        self.name = name
        self.requestID = requestID
    }
}

/// One change recorded in the audit trail.
public struct AuditEvent: Sendable, Hashable {
    public var id: Int64
    public var at: Date
    public var actor: String
    public var requestID: String?
    /// The operation: `cancelJob`, `bulkJobs`, `pauseQueue`, `putSchedule`…
    public var action: String
    /// What it acted on: `job:42`, `jobs`, `queue:billing`, `schedule:nightly`, `lane:l`,
    /// `rate-limit:k`.
    public var target: String
    /// What changed.
    public var details: JSONValue
}

/// Which audit events a listing returns: newest first, `limit` at a time below `before`.
public struct AuditFilter: Sendable, Hashable {
    public var actor: String?
    public var action: String?
    public var target: String?
    public var before: Int64?
    public var limit: Int

    public init(
        actor: String? = nil, action: String? = nil, target: String? = nil, before: Int64? = nil, limit: Int = 50
    ) {
        self.actor = actor
        self.action = action
        self.target = target
        self.before = before
        self.limit = limit
    }
}

/// What a change did, to be recorded with its actor.
package struct AuditChange: Sendable {
    package var action: String
    package var target: String
    package var details: JSONValue

    package init(_ action: String, _ target: String, _ details: JSONValue = [:]) {
        self.action = action
        self.target = target
        self.details = details
    }
}

extension Store {
    /// Runs `change` in a transaction and records what it reports it changed (nothing: no event)
    /// in the audit trail, in the same transaction: the change and its record commit together or
    /// not at all. Without an actor the change runs alone.
    package func audited<Result: Sendable>(
        _ actor: AuditActor?,
        _ change: @escaping @Sendable (PostgresConnection) async throws -> (Result, [AuditChange])
    ) async throws -> Result {
        try await pool.withTransaction(logger: logger) { connection in
            let (result, changes) = try await change(connection)
            if let actor, !changes.isEmpty {
                try await connection.execute(
                    """
                    INSERT INTO \(unescaped: self.schema).audit_events (actor, request_id, action, target, details)
                    SELECT \(actor.name), \(actor.requestID), *
                    FROM unnest(\(changes.map(\.action))::text[], \(changes.map(\.target))::text[],
                                \(changes.map(\.details.jsonText))::json[])
                    """, logger: self.logger)
            }
            return result
        }
    }

    /// Audit events, newest first (`filter.limit` of them, below `filter.before`).
    package func auditEvents(_ filter: AuditFilter) async throws -> [AuditEvent] {
        let rows = try await pool.read(
            """
            SELECT id, at, actor, request_id, action, target, details::text
            FROM \(unescaped: schema).audit_events
            WHERE (\(filter.before)::bigint IS NULL OR id < \(filter.before))
              AND (\(filter.actor)::text IS NULL OR actor = \(filter.actor))
              AND (\(filter.action)::text IS NULL OR action = \(filter.action))
              AND (\(filter.target)::text IS NULL OR target = \(filter.target))
            ORDER BY id DESC LIMIT \(filter.limit)
            """, logger: logger)
        return try rows.map { row in
            let (id, at, actor, requestID, action, target, details) = try row.decode(
                (Int64, Date, String, String?, String, String, String).self)
            return AuditEvent(
                id: id, at: at, actor: actor, requestID: requestID, action: action, target: target,
                details: (try? JSONValue(parsing: details)) ?? [:])
        }
    }

    /// Deletes up to `limit` audit events older than `retention`; returns how many.
    package func pruneAudit(retention: Duration, limit: Int) async throws -> Int {
        try await pool.execute(
            """
            DELETE FROM \(unescaped: schema).audit_events
            WHERE id IN (SELECT id FROM \(unescaped: schema).audit_events
                         WHERE at < now() - \(retention.milliseconds) * interval '1 millisecond'
                         ORDER BY at LIMIT \(limit))
            RETURNING 1
            """, logger: logger
        ).count
    }
}
