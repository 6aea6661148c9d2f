import AsyncHTTPClient
import Baton
import BatonServerTestSupport
import NIOHTTP1
import Testing

@testable import BatonServer

/// Each role against each endpoint, as the issue states them: admin everything; enqueue posts
/// jobs and reads its own; read every GET; health and readiness open; metrics and the document to
/// any token.
@Suite(.timeLimit(.minutes(2)))
struct AuthTests {
    enum Expect { case open, roles(Set<String>) }

    static let table: [(HTTPMethod, String, Expect)] = [
        (.POST, "/v1/jobs", .roles(["admin", "enqueue"])),
        (.POST, "/v1/jobs/batch", .roles(["admin", "enqueue"])),
        (.POST, "/v1/jobs/bulk", .roles(["admin"])),
        (.GET, "/v1/jobs", .roles(["admin", "read", "enqueue"])),
        (.GET, "/v1/jobs/{id}", .roles(["admin", "read", "enqueue"])),
        (.POST, "/v1/jobs/{id}/cancel", .roles(["admin"])),
        (.POST, "/v1/jobs/{id}/retry", .roles(["admin"])),
        (.POST, "/v1/jobs/{id}/skip", .roles(["admin"])),
        (.POST, "/v1/jobs/{id}/signals/{name}", .roles(["admin"])),
        (.DELETE, "/v1/jobs/{id}", .roles(["admin"])),
        (.GET, "/v1/queues", .roles(["admin", "read"])),
        (.POST, "/v1/queues/{name}/pause", .roles(["admin"])),
        (.POST, "/v1/queues/{name}/resume", .roles(["admin"])),
        (.PUT, "/v1/queues/{name}/fair-key", .roles(["admin"])),
        (.DELETE, "/v1/queues/{name}/fair-key", .roles(["admin"])),
        (.GET, "/v1/lanes", .roles(["admin", "read"])),
        (.GET, "/v1/lane-settings", .roles(["admin", "read"])),
        // Set before it is deleted: the admin's delete finds the admin's setting.
        (.PUT, "/v1/lane-settings/{lane}", .roles(["admin"])),
        (.DELETE, "/v1/lane-settings/{lane}", .roles(["admin"])),
        (.GET, "/v1/rate-limits", .roles(["admin", "read"])),
        (.PUT, "/v1/rate-limits/{key}", .roles(["admin"])),
        (.DELETE, "/v1/rate-limits/{key}", .roles(["admin"])),
        (.GET, "/v1/workers", .roles(["admin", "read"])),
        (.GET, "/v1/audit", .roles(["admin"])),
        (.GET, "/v1/schedules", .roles(["admin", "read"])),
        (.GET, "/v1/schedules/{name}", .roles(["admin", "read"])),
        (.PUT, "/v1/schedules/{name}", .roles(["admin"])),
        (.POST, "/v1/schedules/{name}/pause", .roles(["admin"])),
        (.POST, "/v1/schedules/{name}/resume", .roles(["admin"])),
        (.POST, "/v1/schedules/{name}/run", .roles(["admin"])),
        // Last: the admin's delete leaves no schedule for the rows after it.
        (.DELETE, "/v1/schedules/{name}", .roles(["admin"])),
        (.GET, "/healthz", .open), (.GET, "/readyz", .open),
        (.GET, "/metrics", .roles(["admin", "enqueue", "read"])),
        (.GET, "/openapi.json", .roles(["admin", "enqueue", "read"])),
    ]

    static let schedule: JSONValue = ["cron": "@daily", "job": ["stages": [["task": "noop"]]]]

    @Test func eachRoleAgainstEachEndpoint() async throws {
        // The document states the same: its x-baton-roles are what the middleware enforces.
        #expect(Self.table.count == APIDocument.shared.operations.count)
        for (method, template, expect) in Self.table {
            let operation = APIDocument.shared.operations.values.first {
                $0.path == template && $0.method.rawValue == method.rawValue
            }
            let documented = Set(operation?.roles.map(\.rawValue) ?? [])
            switch expect {
            case .open: #expect(operation != nil && documented.isEmpty, "\(method) \(template)")
            case .roles(let roles): #expect(documented == roles, "\(method) \(template)")
            }
        }
        try await withServer { server async throws in
            // The schedule the routes on one schedule act on.
            #expect(try await server.call(.PUT, "/v1/schedules/q-auth", body: Self.schedule).status == 200)
            let tokens: [(String?, String?)] = [
                (nil, nil), ("not-a-token", nil), (Token.admin, "admin"), (Token.enqueue, "enqueue"),
                (Token.read, "read"),
            ]
            // A job of the caller's own for each call, for the routes on one job, so that the role
            // decides: enqueued in one batch (one call per row and token doubled the test's calls,
            // which a loaded machine made take minutes).
            let enqueued = try await server.call(
                .POST, "/v1/jobs/batch", token: Token.enqueue,
                body: [
                    "jobs": .array(
                        Array(repeating: ["stages": [["task": "noop"]]], count: Self.table.count * tokens.count))
                ])
            let ids = (enqueued["jobs"]?.items ?? []).compactMap { $0["id"]?.int64 }
            try #require(ids.count == Self.table.count * tokens.count, "\(enqueued.text)")
            var next = 0
            for (method, template, expect) in Self.table {
                for (token, role) in tokens {
                    let id = ids[next]
                    next += 1
                    var path = template.replacingOccurrences(of: "{id}", with: "\(id)")
                        .replacingOccurrences(of: "{name}", with: "q-auth").replacingOccurrences(
                            of: "{lane}", with: "q-auth"
                        ).replacingOccurrences(of: "{key}", with: "q-auth")
                    // A queue no job is in: paused only when asked to be anyway.
                    if template == "/v1/queues/{name}/pause" { path += "?unchecked=true" }
                    let body: JSONValue? =
                        switch (method, template) {
                        case (.POST, "/v1/jobs/batch"): ["jobs": [["stages": [["task": "noop"]]]]]
                        case (.POST, "/v1/jobs"): ["stages": [["task": "noop"]]]
                        // A dry run: counting changes nothing for the next rows.
                        case (.POST, "/v1/jobs/bulk"): ["action": "cancel", "dry_run": true, "filter": [:]]
                        case (.PUT, "/v1/schedules/{name}"): Self.schedule
                        case (.PUT, "/v1/lane-settings/{lane}"): ["width": 2]
                        case (.PUT, "/v1/rate-limits/{key}"): ["rate": 5, "per": "1s"]
                        case (.PUT, "/v1/queues/{name}/fair-key"): ["from": "metadata.tenant"]
                        case (.POST, "/v1/jobs/{id}/signals/{name}"): ["approved": true]
                        case (.POST, "/v1/jobs/{id}/skip"): ["reason": "auth test"]
                        default: nil
                        }
                    let reply = try await server.call(method, path, token: token, body: body)
                    let what = "\(method) \(template) as \(role ?? token ?? "nobody")"
                    switch expect {
                    case .open:
                        #expect(reply.status == 200, "\(what): \(reply.text)")
                    case .roles(let allowed):
                        if let role {
                            if allowed.contains(role) {
                                #expect(![401, 403].contains(reply.status), "\(what): \(reply.text)")
                                #expect(reply.status < 400 || reply.status == 409, "\(what): \(reply.text)")
                            } else {
                                #expect(reply.status == 403, "\(what): \(reply.text)")
                            }
                        } else {
                            #expect(reply.status == 401, "\(what): \(reply.text)")
                            #expect(reply.headers.first(name: "WWW-Authenticate") == "Bearer")
                        }
                    }
                }
            }
        }
    }

    /// An enqueue token reads the jobs it enqueued, not another's (which look like no job at all).
    @Test func anEnqueueTokenReadsItsOwnJobsOnly() async throws {
        try await withServer { server async throws in
            let mine = try await server.enqueue(["stages": [["task": "noop"]]], token: Token.enqueue)
            let theirs = try await server.enqueue(["stages": [["task": "noop"]]], token: Token.otherEnqueue)
            #expect(try await server.call(.GET, "/v1/jobs/\(mine)", token: Token.enqueue).status == 200)
            #expect(try await server.call(.GET, "/v1/jobs/\(theirs)", token: Token.enqueue).status == 404)
            #expect(try await server.call(.GET, "/v1/jobs/\(theirs)", token: Token.read).status == 200)
            // Its listing holds its own jobs; a read token's, everyone's.
            let listed = try await server.call(.GET, "/v1/jobs", token: Token.enqueue)["jobs"]?.items
            #expect(listed?.map { $0["id"]?.int64 } == [mine])
            let all = try await server.call(.GET, "/v1/jobs", token: Token.read)["jobs"]?.items
            #expect(all?.map { $0["id"]?.int64 } == [theirs, mine])
            // Nor can it learn the other's job through its idempotency key.
            let key = ["stages": [["task": "noop"]], "idempotency_key": "shared-key"] as JSONValue
            #expect(try await server.call(.POST, "/v1/jobs", token: Token.otherEnqueue, body: key).status == 201)
            let clash = try await server.call(.POST, "/v1/jobs", token: Token.enqueue, body: key)
            #expect(clash.status == 409)
            #expect(clash["type"] == "urn:baton:problem:idempotency-key-taken")
        }
    }

    @Test func metricsCanBeOpenedForScrapersWithoutTokens() async throws {
        try await withServer(worker: nil, configure: { $0.metricsRequireToken = false }) { server async throws in
            #expect(try await server.call(.GET, "/metrics", token: nil).status == 200)
            #expect(try await server.call(.GET, "/v1/queues", token: nil).status == 401)
        }
    }

    @Test func tokensParseFromTheEnvironment() throws {
        let tokens = try #require(
            try APITokens.fromEnvironment([
                "BATON_API_TOKENS": "admin:aaaaaaaaaaaaaaa1, read:bbbbbbbbbbbbbbb2,enqueue:ccccccccccccccc3"
            ]))
        #expect(tokens.caller(token: "aaaaaaaaaaaaaaa1")?.role == .admin)
        #expect(tokens.caller(token: "bbbbbbbbbbbbbbb2")?.role == .read)
        #expect(tokens.caller(token: "ccccccccccccccc3")?.role == .enqueue)
        #expect(tokens.caller(token: "aaaaaaaaaaaaaaa") == nil)
        #expect(tokens.caller(token: "")?.role == nil)
        #expect(
            tokens.caller(token: "aaaaaaaaaaaaaaa1")?.fingerprint
                != tokens.caller(token: "ccccccccccccccc3")?.fingerprint)
        #expect(
            try APITokens.fromEnvironment(["BATON_API_TOKEN": "only-admin-token-1"])?.caller(
                token: "only-admin-token-1")?.role
                == .admin)
        #expect(try APITokens.fromEnvironment([:]) == nil)
        #expect(throws: (any Error).self) { try APITokens.parse("root:aaaaaaaaaaaaaaa1") }
        #expect(throws: (any Error).self) { try APITokens.parse("aaaaaaaaaaaaaaa1") }
        #expect(throws: (any Error).self) { try APITokens.parse("admin:short") }
        #expect(throws: (any Error).self) { try APITokens.parse(" , ") }
        #expect(throws: (any Error).self) { try APITokens.fromEnvironment(["BATON_API_TOKEN": "short"]) }
    }
}
