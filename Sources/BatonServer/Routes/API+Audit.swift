import BatonAPI
import BatonPostgres

extension API {
    /// `GET /v1/audit`: who changed what, newest first, `limit` at a time.
    func listAuditEvents(_ input: Operations.ListAuditEvents.Input) async throws -> Operations.ListAuditEvents.Output {
        let query = input.query
        // What the document says and the generated decoding does not check.
        for (name, value, longest) in [
            ("actor", query.actor, 200), ("action", query.action, 200), ("target", query.target, 300),
        ] {
            if let value, !(1...longest).contains(value.unicodeScalars.count) {
                throw Problem.invalid(name, "\(name) is text of 1 to \(longest) characters")
            }
        }
        var filter = AuditFilter(
            actor: query.actor, action: query.action, target: query.target,
            limit: try Self.limit(query.limit, default: 50))
        filter.before = try Cursor.id(query.cursor, kind: "audit")
        let limit = filter.limit
        filter.limit += 1
        let events = try await store.auditEvents(filter)
        let page = events.prefix(limit)
        let next = events.count > limit ? Cursor.encode("audit:\(page.last!.id)") : nil
        return .ok(.init(body: .json(.init(events: page.map(Components.Schemas.AuditEvent.init), nextCursor: next))))
    }
}

extension Components.Schemas.AuditEvent {
    init(_ event: AuditEvent) {
        self.init(
            id: event.id, at: event.at, actor: event.actor, requestId: event.requestID, action: event.action,
            target: event.target, details: event.details)
    }
}
