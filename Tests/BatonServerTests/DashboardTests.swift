import AsyncHTTPClient
import Baton
import BatonPostgres
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import Mustache
import NIOCore
import NIOHTTP1
import Testing

@testable import BatonServer

/// The dashboard over plain HTTP: sessions, CSRF, roles, escaping and headers, as a browser would
/// meet them (`DashboardBrowserTests` drives a real one).
@Suite(.timeLimit(.minutes(2)))
struct DashboardTests {
    /// One answer of the dashboard; redirects are not followed.
    struct Page {
        var status: Int
        var headers: HTTPHeaders
        var html: String
        var location: String? { headers.first(name: "Location") }
    }

    /// A browser's view of one server: its session cookie, sent with every request.
    struct Visitor {
        let base: String
        var cookie: String?

        static let client = HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))

        func get(_ path: String) async throws -> Page { try await send(.GET, path) }

        func post(_ path: String, _ form: [(String, String)], origin: String? = nil) async throws -> Page {
            let body = form.map { "\($0.0)=\(DashboardTests.encode($0.1))" }.joined(separator: "&")
            return try await send(.POST, path, body: body, origin: origin ?? base)
        }

        func send(_ method: HTTPMethod, _ path: String, body: String? = nil, origin: String? = nil) async throws -> Page
        {
            var request = HTTPClientRequest(url: base + path)
            request.method = method
            if let cookie { request.headers.add(name: "Cookie", value: cookie) }
            if let origin { request.headers.add(name: "Origin", value: origin) }
            if let body {
                request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
                request.body = .bytes(ByteBuffer(string: body))
            }
            let response = try await Self.client.execute(request, timeout: .seconds(30))
            let html = String(buffer: try await response.body.collect(upTo: 16 << 20))
            return Page(status: Int(response.status.code), headers: response.headers, html: html)
        }

        /// Signs in with `token`; the visitor keeps the session cookie.
        mutating func signIn(_ token: String) async throws {
            let answer = try await post("/ui/login", [("token", token), ("next", "/ui")])
            try #require(answer.status == 303, "\(answer.status) \(answer.html)")
            let setCookie = try #require(answer.headers.first(name: "Set-Cookie"))
            cookie = String(setCookie.prefix { $0 != ";" })
        }

        /// The CSRF token the page's forms carry.
        func csrf(on path: String = "/ui/jobs") async throws -> String {
            let html = try await get(path).html
            let marker = "name=\"csrf\" value=\""
            guard let start = html.range(of: marker) else { throw TestFailure("no CSRF token on \(path)") }
            return String(html[start.upperBound...].prefix { $0 != "\"" })
        }
    }

    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    }

    @Test func templatesOnlyWriteEscapedValues() {
        for (name, text) in EmbeddedDashboard.files where name.hasSuffix(".mustache") {
            #expect(!text.contains("{{{") && !text.contains("{{&"), "\(name) writes a value unescaped")
        }
        #expect(!(EmbeddedDashboard.files["dashboard.js"] ?? "").contains("innerHTML"))
    }

    /// A view reflected once renders as the view itself does: fields, nested views, arrays, flags,
    /// numbers, transforms, and a nil optional climbing to the enclosing view.
    @Test func reflectedViewsRenderAsTheViewsThemselves() throws {
        struct Item {
            var name: String
            var note: String?
        }
        struct Page {
            var title: String
            var items: [Item]
            var none: [Item]
            var flag: Bool
            var count: Int
            var missing: String?
            var note: String?
        }
        let page = Page(
            title: "<t>", items: [Item(name: "a", note: "n1"), Item(name: "b", note: nil)], none: [], flag: true,
            count: 3, missing: nil, note: "outer")
        let template = try MustacheTemplate(
            string: "{{title}}|{{#items}}{{name}}:{{note}};{{/items}}|{{#flag}}yes{{/flag}}|{{count}}|"
                + "{{^missing}}none{{/missing}}|{{^empty(items)}}some{{/empty(items)}}|{{^none}}empty{{/none}}")
        let direct = template.render(page)
        #expect(direct == "&lt;t&gt;|a:n1;b:outer;|yes|3|none|some|empty")
        #expect(template.render(ReflectedView(page)) == direct)
    }

    /// Links carry names byte for byte: all but the unreserved ASCII characters percent-encoded.
    @Test func linksPercentEncodeNames() {
        #expect(DashboardText.percentEncoded("aZ09-._~") == "aZ09-._~")
        #expect(DashboardText.percentEncoded("a b/ä&=%?#") == "a%20b%2F%C3%A4%26%3D%25%3F%23")
        #expect(DashboardText.percentEncoded("") == "")
    }

    /// Without a session every page leads to the login; a wrong token is told so; a right one
    /// sets a strict, HttpOnly, expiring cookie for `/ui` and lands where it was going; signing
    /// out needs the form's CSRF token and clears the cookie.
    @Test func signingInAndOut() async throws {
        try await withServer(worker: nil) { server async throws in
            var visitor = Visitor(base: server.base)
            let away = try await visitor.get("/ui/workers")
            #expect(away.status == 303)
            #expect(away.location == "/ui/login?next=%2Fui%2Fworkers")

            let wrong = try await visitor.post("/ui/login", [("token", "not-a-token-at-all"), ("next", "/ui")])
            #expect(wrong.status == 401)
            #expect(wrong.html.contains("That token is not one this server accepts."))
            #expect(wrong.headers.first(name: "Set-Cookie") == nil)

            let right = try await visitor.post("/ui/login", [("token", Token.read), ("next", "/ui/workers")])
            #expect(right.status == 303)
            #expect(right.location == "/ui/workers")
            let setCookie = try #require(right.headers.first(name: "Set-Cookie"))
            for attribute in ["HttpOnly", "SameSite=Strict", "Path=/ui", "Max-Age=43200"] {
                #expect(setCookie.contains(attribute), "\(setCookie)")
            }
            #expect(!setCookie.contains(Token.read), "the cookie never holds the token")
            #expect(!setCookie.contains("Secure"), "not over plain HTTP")
            visitor.cookie = String(setCookie.prefix { $0 != ";" })

            let page = try await visitor.get("/ui/workers")
            #expect(page.status == 200)
            let policy = page.headers.first(name: "Content-Security-Policy") ?? ""
            #expect(policy.contains("script-src 'self'") && policy.contains("frame-ancestors 'none'"), "\(policy)")
            #expect(!policy.contains("unsafe-inline"))
            #expect(page.headers.first(name: "Cache-Control") == "no-store")

            let forged = try await visitor.post("/ui/logout", [("csrf", "0")])
            #expect(forged.status == 403)
            let out = try await visitor.post("/ui/logout", [("csrf", try await visitor.csrf(on: "/ui/workers"))])
            #expect(out.status == 303)
            #expect(out.headers.first(name: "Set-Cookie")?.contains("Max-Age=0") == true)

            // A login link cannot send anyone off the dashboard.
            let elsewhere = try await visitor.post("/ui/login", [("token", Token.read), ("next", "//evil.example/")])
            #expect(elsewhere.location == "/ui")
        }
    }

    /// A request that changes something needs the page's CSRF token and this dashboard's origin;
    /// a forged one changes nothing.
    @Test func forgedPostsChangeNothing() async throws {
        try await withServer(worker: nil) { server async throws in
            let id = try await server.enqueue(
                ["stages": [["task": "noop"]], "queue": "idle"], query: "?unchecked=true")
            var visitor = Visitor(base: server.base)
            try await visitor.signIn(Token.admin)
            let csrf = try await visitor.csrf()

            #expect(try await visitor.post("/ui/jobs/\(id)/cancel", []).status == 403)
            #expect(
                try await visitor.post("/ui/jobs/\(id)/cancel", [("csrf", String(repeating: "a", count: 64))]).status
                    == 403)
            let otherSite = try await visitor.post(
                "/ui/jobs/\(id)/cancel", [("csrf", csrf)], origin: "https://evil.example")
            #expect(otherSite.status == 403)
            #expect(try await server.call(.GET, "/v1/jobs/\(id)")["state"] == "available")

            // Another session's token is not this one's.
            var other = Visitor(base: server.base)
            try await other.signIn(Token.admin)
            #expect(try await other.post("/ui/jobs/\(id)/cancel", [("csrf", csrf)]).status == 403)

            let done = try await visitor.post("/ui/jobs/\(id)/cancel", [("csrf", csrf)])
            #expect(done.status == 303)
            #expect(done.location == "/ui/jobs/\(id)?done=cancel&what=\(id)")
            #expect(try await server.call(.GET, "/v1/jobs/\(id)")["state"] == "cancelled")
            let after = try await visitor.get(done.location ?? "")
            #expect(after.html.contains("Job \(id) cancelled."))
        }
    }

    /// Each role sees in the dashboard what it may read over the API, and only `admin` acts.
    @Test func rolesSeeAndDoWhatTheAPILetsThem() async throws {
        try await withServer(worker: nil) { server async throws in
            let mine = try await server.enqueue(
                ["stages": [["task": "noop"]], "queue": "idle"], query: "?unchecked=true", token: Token.enqueue)
            let theirs = try await server.enqueue(
                ["stages": [["task": "noop"]], "queue": "idle"], query: "?unchecked=true", token: Token.otherEnqueue)

            var reader = Visitor(base: server.base)
            try await reader.signIn(Token.read)
            let job = try await reader.get("/ui/jobs/\(mine)")
            #expect(job.status == 200)
            #expect(!job.html.contains("/cancel\""), "a read token sees no action")
            let csrf = try await reader.csrf()
            #expect(try await reader.post("/ui/jobs/\(mine)/cancel", [("csrf", csrf)]).status == 403)
            #expect(try await reader.get("/ui/lanes").status == 200)

            var enqueuer = Visitor(base: server.base)
            try await enqueuer.signIn(Token.enqueue)
            #expect(try await enqueuer.get("/ui/lanes").status == 403)
            #expect(try await enqueuer.get("/ui").status == 403)
            let list = try await enqueuer.get("/ui/jobs")
            #expect(list.html.contains("href=\"/ui/jobs/\(mine)\""))
            #expect(!list.html.contains("href=\"/ui/jobs/\(theirs)\""))
            #expect(try await enqueuer.get("/ui/jobs/\(theirs)").status == 404)
            #expect(!list.html.contains("href=\"/ui/lanes\""), "no link to what it may not see")
        }
    }

    /// A token limited to a queue sees that queue in every page, none of the cluster's pages, and
    /// cannot act elsewhere; its changes reach the audit page, which only an admin of the whole
    /// cluster sees.
    @Test func aScopedTokenSeesItsQueuesAndItsChangesAreAudited() async throws {
        try await withServer(
            worker: nil,
            configure: {
                $0.tokens = APITokens(
                    Token.all.tokens + [
                        .init(name: "billing-ops", role: .admin, secret: "billing-ops-secret-01", queues: ["billing"])
                    ])
            }
        ) { server async throws in
            let billing = try await server.enqueue(
                ["stages": [["task": "noop"]], "queue": "billing"], query: "?unchecked=true")
            let reports = try await server.enqueue(
                ["stages": [["task": "noop"]], "queue": "reports"], query: "?unchecked=true")
            var ops = Visitor(base: server.base)
            try await ops.signIn("billing-ops-secret-01")
            let overview = try await ops.get("/ui")
            #expect(overview.status == 200)
            #expect(overview.html.contains("/ui/jobs?queue=billing"))
            #expect(!overview.html.contains("reports"))
            #expect(!overview.html.contains("href=\"/ui/workers\""), "no link to what it may not see")
            #expect(!overview.html.contains("href=\"/ui/audit\""))
            for page in ["/ui/workers", "/ui/lanes", "/ui/audit"] {
                #expect(try await ops.get(page).status == 403, "\(page)")
            }
            let list = try await ops.get("/ui/jobs")
            #expect(list.html.contains("href=\"/ui/jobs/\(billing)\""))
            #expect(!list.html.contains("href=\"/ui/jobs/\(reports)\""))
            #expect(try await ops.get("/ui/jobs/\(reports)").status == 404)
            let csrf = try await ops.csrf()
            #expect(try await ops.post("/ui/jobs/\(reports)/cancel", [("csrf", csrf)]).status == 404)
            #expect(try await ops.post("/ui/jobs/\(billing)/cancel", [("csrf", csrf)]).status == 303)

            var admin = Visitor(base: server.base)
            try await admin.signIn(Token.admin)
            let audit = try await admin.get("/ui/audit")
            #expect(audit.status == 200)
            #expect(audit.html.contains("billing-ops"))
            #expect(audit.html.contains("<td data-label=\"action\">cancelJob</td>"))
            #expect(audit.html.contains("href=\"/ui/jobs/\(billing)\""))
            let filtered = try await admin.get("/ui/audit?actor=someone-else")
            #expect(!filtered.html.contains(">cancelJob</td>"))
        }
    }

    /// What the worker runs reaches the history (completed, discarded, pickup waits) within its
    /// write period, and the overview counts and charts it.
    @Test func theOverviewChartsWhatWorkersDid() async throws {
        try await withServer { server async throws in
            let since = Date().addingTimeInterval(-120)
            var ids: [Int64] = []
            for _ in 0..<4 { ids.append(try await server.enqueue(["stages": [["task": "noop"]]])) }
            ids.append(
                try await server.enqueue([
                    "input": 1, "stages": [["task": "fail-first", "args": ["key": .string("\(UUID())")]]],
                ]))
            for id in ids { _ = try await server.job(id) { $0["state"] == "completed" || $0["state"] == "discarded" } }
            // The worker writes what it counted once a period: the discard and the completions may
            // land in different writes, so wait for all of it.
            try await eventually("the worker to write its history") {
                let minutes = try await server.db.store.history(since: since, bin: .seconds(60))
                return minutes.reduce(0) { $0 + $1.completed } == 4 && minutes.reduce(0) { $0 + $1.discarded } == 1
                    && minutes.reduce(0) { $0 + $1.waits.reduce(0, +) } == 5  // one pickup per stage claimed
            }

            var visitor = Visitor(base: server.base)
            try await visitor.signIn(Token.read)
            let overview = try await visitor.get("/ui").html
            #expect(overview.contains("aria-label=\"4 completed\""), "completed over the last day")
            #expect(overview.contains("aria-label=\"1 discarded\""))
            #expect(overview.contains("<polyline class=\"line completed\" points=\""))
            #expect(try await visitor.get("/ui?range=day").status == 200)
            #expect(!overview.contains("<h2>Fair share</h2>"), "no fair queue yet")

            // A fair queue's keys with stages waiting (in a queue nobody serves), most first.
            for key in ["t-1", "t-1", ""] {
                try await server.enqueue(
                    key.isEmpty
                        ? ["queue": "tenants", "stages": [["task": "noop"]]]
                        : ["queue": "tenants", "fair_key": .string(key), "stages": [["task": "noop"]]])
            }
            let fair = try await visitor.get("/ui").html
            #expect(fair.contains("<h2>Fair share</h2>"))
            #expect(
                fair.contains(
                    "<tr><th scope=\"row\">tenants</th><td data-label=\"keys from\">the jobs</td><td class=\"num\" data-label=\"keys waiting\">2</td><td data-label=\"most stages waiting\"><span class=\"fair-key\"><code>t-1</code> 2</span> <span class=\"fair-key\"><code>&quot;&quot;</code> 1</span> </td><td data-label=\"most stages running\"></td><td data-label=\"share of starts, last 5 min\"></td></tr>"
                ), "\(fair)")
        }
    }

    /// A stage's attempts are a timeline: the failed one with its error, then the one that
    /// completed it after a retry.
    @Test func aStagesAttemptsAreDrawnInOrder() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue([
                "input": 5, "stages": [["task": "fail-first", "args": ["key": .string("timeline-\(UUID())")]]],
            ])
            _ = try await server.job(id) { $0["state"] == "discarded" }
            #expect(try await server.call(.POST, "/v1/jobs/\(id)/retry").status == 200)
            _ = try await server.job(id) { $0["state"] == "completed" }
            var visitor = Visitor(base: server.base)
            try await visitor.signIn(Token.read)
            let page = try await visitor.get("/ui/jobs/\(id)").html
            let failed = try #require(page.range(of: "<li class=\"t-failed\"><p>Attempt 1 failed at "))
            let completed = try #require(page.range(of: "<li class=\"t-completed\"><p>Attempt "))
            #expect(failed.upperBound < completed.lowerBound, "oldest first")
            #expect(page[failed.upperBound...].contains("first run of timeline-"))
            #expect(page[completed.upperBound...].prefix(40).contains(" completed in "))
        }
    }

    /// The path a `repeat` and a `goto` took: drawn under the chain, the stage passed over
    /// skipped, the repeated one with its runs.
    @Test func theJobPageDrawsThePathTaken() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue(serverTestLoopedChain)
            _ = try await server.job(id) { $0["state"] == "completed" }
            var visitor = Visitor(base: server.base)
            try await visitor.signIn(Token.read)
            let page = try await visitor.get("/ui/jobs/\(id)").html
            #expect(page.contains("<p class=\"path\">Path taken: <span>count ×3 → last</span></p>"))
            #expect(page.contains("<div class=\"stage s-skipped\">\n      <span class=\"label\">skipped</span>"))
            #expect(page.contains("<div><dt>Runs</dt><dd>3</dd></div>"))
            // Only the stage that names a queue shows one.
            #expect(page.components(separatedBy: "<div><dt>Queue</dt><dd>default</dd></div>").count == 2)

            // A job's fairness key and weight, as it was enqueued.
            let keyed = try await server.enqueue([
                "fair_key": "tenant-9", "fair_weight": 1.5, "stages": [["task": "noop"]],
            ])
            let keyedPage = try await visitor.get("/ui/jobs/\(keyed)").html
            #expect(keyedPage.contains("<div><dt>Fair key</dt><dd><code>tenant-9</code></dd></div>"))
            #expect(keyedPage.contains("<div><dt>Fair weight</dt><dd>1.5</dd></div>"))
        }
    }

    /// An admin retries every job the list's filters match, on every page, in one step once it
    /// is confirmed: the form carries the filters, the confirmation says how many jobs (a dry run)
    /// and which of their queues is paused, and the list comes back filtered with what was done.
    @Test func everyJobMatchingTheFiltersIsRetriedAtOnce() async throws {
        try await withServer { server async throws in
            let mark = "dash-bulk-\(UUID())"
            var ids: [Int64] = []
            for index in 0..<3 {
                ids.append(
                    try await server.enqueue([
                        "input": .number(JSONNumber(index)),
                        "stages": [["task": "fail-first", "args": ["key": .string("\(mark)-\(index)")]]],
                    ]))
            }
            for id in ids { _ = try await server.job(id) { $0["state"] == "discarded" } }
            var visitor = Visitor(base: server.base)
            try await visitor.signIn(Token.admin)
            let list = try await visitor.get("/ui/jobs?state=discarded&error=\(mark)").html
            #expect(list.contains("id=\"bulk-matching\""))
            #expect(list.contains("<input type=\"hidden\" name=\"error\" value=\"\(mark)\">"))
            #expect(try await server.call(.POST, "/v1/queues/default/pause").status == 200)
            let form = [
                ("csrf", try await visitor.csrf()), ("scope", "matching"), ("action", "retry"),
                ("state", "discarded"), ("error", mark),
            ]
            let asked = try await visitor.post("/ui/jobs", form)
            #expect(asked.status == 200)
            #expect(asked.html.contains("Retry 3 discarded or cancelled jobs matching these filters?"), "\(asked.html)")
            #expect(asked.html.contains("Paused: default. Their retried jobs wait until the queue is resumed"))
            #expect(asked.html.contains("<input type=\"hidden\" name=\"confirmed\" value=\"yes\">"))
            for id in ids { #expect(try await server.call(.GET, "/v1/jobs/\(id)")["state"] == "discarded") }
            #expect(try await server.call(.POST, "/v1/queues/default/resume").status == 200)
            let done = try await visitor.post("/ui/jobs", form + [("confirmed", "yes")])
            #expect(done.status == 303)
            #expect(done.location?.hasSuffix("done=retry-many&what=3&skipped=0") == true, "\(done.location ?? "")")
            #expect(done.location?.contains("error=\(mark)") == true)
            for id in ids { _ = try await server.job(id) { $0["state"] == "completed" } }
            var reader = Visitor(base: server.base)
            try await reader.signIn(Token.read)
            #expect(try await reader.get("/ui/jobs?state=discarded").html.contains("bulk-matching") == false)
        }
    }

    /// The schedules page lists each schedule with its next runs; an admin runs one now and
    /// pauses it from there, a reader sees no button.
    @Test func schedulesAreListedRunAndPaused() async throws {
        try await withServer { server async throws in
            let saved = try await server.call(
                .PUT, "/v1/schedules/digest",
                body: ["cron": "0 8 * * MON", "time_zone": "Europe/Paris", "job": ["stages": [["task": "noop"]]]])
            #expect(saved.status == 200, "\(saved.text)")
            var admin = Visitor(base: server.base)
            try await admin.signIn(Token.admin)
            let page = try await admin.get("/ui/schedules")
            #expect(page.status == 200)
            #expect(page.html.contains("<code>0 8 * * MON</code> in Europe/Paris"))
            #expect(page.html.contains("action=\"/ui/schedules/digest/run\""))
            let csrf = try await admin.csrf(on: "/ui/schedules")
            let run = try await admin.post("/ui/schedules/digest/run", [("csrf", csrf)])
            #expect(run.status == 303)
            let job = try #require(try await server.call(.GET, "/v1/schedules/digest")["last_job_id"]?.int64)
            #expect(run.location == "/ui/schedules?done=schedule-run-\(job)&what=digest")
            #expect(try await admin.get(run.location ?? "").html.contains("Schedule digest run now: job \(job)."))
            #expect(try await admin.post("/ui/schedules/digest/pause", [("csrf", csrf)]).status == 303)
            #expect(try await server.call(.GET, "/v1/schedules/digest")["paused"] == true)
            var reader = Visitor(base: server.base)
            try await reader.signIn(Token.read)
            let read = try await reader.get("/ui/schedules").html
            #expect(read.contains("digest") && !read.contains("/ui/schedules/digest/run"))
        }
    }

    /// The lanes page shows how many hold each lane of how many may; an admin sets a width (in
    /// effect at once) and deletes it from there, a bad width is refused, a reader sees no form.
    @Test func laneWidthsAreShownSetAndDeleted() async throws {
        try await withServer(worker: nil) { server async throws in
            for _ in 0..<3 {
                _ = try await server.enqueue(
                    ["stages": [["task": "noop", "lane": "tenant-1"]], "queue": "idle"], query: "?unchecked=true")
            }
            var admin = Visitor(base: server.base)
            try await admin.signIn(Token.admin)
            #expect(try await admin.get("/ui/lanes").html.contains("<td class=\"num\">1 of 1</td>"))
            let csrf = try await admin.csrf(on: "/ui/lanes")
            let set = try await admin.post("/ui/lanes/width", [("csrf", csrf), ("lane", "tenant-*"), ("width", "2")])
            #expect(set.location == "/ui/lanes?done=lane-width&what=tenant-%2A")
            let page = try await admin.get(set.location ?? "").html
            #expect(page.contains("Lane tenant-*: width set, in effect now."))
            #expect(page.contains("<td class=\"num\">2 of 2</td>"), "the second job was admitted at once")
            #expect(page.contains("<th scope=\"row\">tenant-*</th>"))
            let refused = try await admin.post(
                "/ui/lanes/width", [("csrf", csrf), ("lane", "tenant-*"), ("width", "0")])
            #expect(refused.status == 400)
            #expect(refused.html.contains("1 to 10000"))
            var reader = Visitor(base: server.base)
            try await reader.signIn(Token.read)
            let read = try await reader.get("/ui/lanes").html
            #expect(read.contains("tenant-*") && !read.contains("/ui/lanes/width"))
            #expect(try await admin.post("/ui/lanes/unset", [("csrf", csrf), ("lane", "tenant-*")]).status == 303)
            #expect(try await server.call(.GET, "/v1/lane-settings")["settings"]?.items.isEmpty == true)
        }
    }

    /// The lanes page lists the rate limits with their tokens; an admin sets one (the burst left
    /// empty: the rate) and deletes it there; a bad period is refused with the API's words.
    @Test func rateLimitsAreShownSetAndDeleted() async throws {
        try await withServer(worker: nil) { server async throws in
            var admin = Visitor(base: server.base)
            try await admin.signIn(Token.admin)
            #expect(try await admin.get("/ui/lanes").html.contains("No rate limits."))
            let csrf = try await admin.csrf(on: "/ui/lanes")
            let set = try await admin.post(
                "/ui/lanes/rate", [("csrf", csrf), ("key", "partner"), ("rate", "10"), ("per", "1m"), ("burst", "")])
            #expect(set.location == "/ui/lanes?done=lane-rate&what=partner")
            let page = try await admin.get(set.location ?? "").html
            #expect(page.contains("Rate limit partner set, in effect at the next claim."))
            #expect(
                page.contains("<th scope=\"row\">partner</th>\n    <td>10 per 1m</td>\n    <td class=\"num\">10</td>"))
            let refused = try await admin.post(
                "/ui/lanes/rate", [("csrf", csrf), ("key", "partner"), ("rate", "10"), ("per", "soon")])
            #expect(refused.status == 400)
            #expect(refused.html.contains("1ms to 31d"))
            #expect(try await admin.post("/ui/lanes/unrate", [("csrf", csrf), ("key", "partner")]).status == 303)
            #expect(try await server.call(.GET, "/v1/rate-limits")["rate_limits"]?.items.isEmpty == true)
        }
    }

    /// A group's members are named by their task and lane, on the job page and in the API.
    @Test func groupMembersAreNamedByTaskAndLane() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue([
                "input": 1, "stages": [["group": [["task": "noop"], ["task": "noop", "lane": "m-lane"]]]],
            ])
            let done = try await server.job(id) { $0["state"] == "completed" }
            let members = done["stages"]?.items.first?["members"]?.items ?? []
            #expect(members.map { $0["task"] } == ["noop", "noop"])
            #expect(members.map { $0["lane"] } == [nil, "m-lane"])
            var reader = Visitor(base: server.base)
            try await reader.signIn(Token.read)
            let page = try await reader.get("/ui/jobs/\(id)").html
            #expect(page.contains("member 1: noop<") || page.contains("member 1: noop\n"), "\(page)")
            #expect(page.contains("member 2: noop (lane m-lane)"), "\(page)")
        }
    }

    /// A group stage's run lasts from its fan-out to its fan-in: it took as long as its slowest
    /// member (it used to read as the few milliseconds of the claim that handed their outputs on).
    @Test func aGroupStageTookAsLongAsItsMembers() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue([
                "stages": [["group": [["task": "noop"], ["task": "sleep", "args": ["ms": 400]]]]]
            ])
            let done = try await server.job(id) { $0["state"] == "completed" }
            let stage = try #require(done["stages"]?.items.first)
            let started = try #require(stage["started_at"]?.stringValue.flatMap(RFC3339.parse), "\(stage)")
            let finished = try #require(stage["finished_at"]?.stringValue.flatMap(RFC3339.parse), "\(stage)")
            #expect(finished.timeIntervalSince(started) >= 0.4, "\(stage)")
        }
    }

    /// A map of more runs than are listed: the API lists the first 100 and those that failed
    /// after them, and counts every one by state; the job page says how many, in which states,
    /// what it lists, and the map's failure policy.
    @Test func aLargeMapListsItsFirstRunsAndCountsThemAll() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue([
                "input": .array((0..<150).map { .number(JSONNumber($0)) }),
                "stages": [["map": "{{output}}", "stages": [["task": "even-only"]], "failures": "continue"]],
            ])
            let done = try await server.job(id) { $0["state"] == "completed" }
            let stage = done["stages"]?.items.first
            #expect(stage?["map"] == "{{output}}")
            // The first 100, then the 25 runs after them that failed (the odd elements).
            let listed = stage?["members"]?.items ?? []
            #expect(listed.count == 125)
            #expect(listed.prefix(100).map { $0["index"] } == (0..<100).map { .number(JSONNumber($0)) })
            #expect(listed.dropFirst(100).allSatisfy { $0["state"] == "discarded" })
            #expect(listed.last?["index"] == 149)
            #expect(stage?["member_counts"] == ["completed": 75, "discarded": 75])
            #expect(done["output"]?["results"]?.items.count == 150)
            var reader = Visitor(base: server.base)
            try await reader.signIn(Token.read)
            let page = try await reader.get("/ui/jobs/\(id)").html
            #expect(page.contains("map over {{output}} (goes on past failures)"), "\(page)")
            #expect(page.contains("150 members: 75 completed, 75 discarded"), "\(page)")
            #expect(page.contains("The first 100 members, and 25 that failed after them:"), "\(page)")
        }
    }

    /// A job waiting for a signal shows which; an admin delivers it from the job page (a reader
    /// sees no form), and the chain goes on with the payload.
    @Test func aSignalIsDeliveredFromTheJobPage() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue(["stages": [["await": "approved"], ["task": "echo"]]])
            _ = try await server.job(id) { $0["state"] == "waiting" }
            var admin = Visitor(base: server.base)
            try await admin.signIn(Token.admin)
            let page = try await admin.get("/ui/jobs/\(id)").html
            #expect(page.contains("<dt>Awaits signal</dt><dd><code>approved</code></dd>"))
            #expect(page.contains("awaits signal &quot;approved&quot; until"))
            // Its due time is the signal's deadline, not when it runs.
            #expect(page.contains("<dt>Signal due by</dt>") && !page.contains("<dt>Runs</dt>"))
            #expect(page.contains("action=\"/ui/jobs/\(id)/signal\""))
            let csrf = try await admin.csrf(on: "/ui/jobs/\(id)")
            let notJSON = try await admin.post(
                "/ui/jobs/\(id)/signal", [("csrf", csrf), ("name", "approved"), ("payload", "{yes")])
            #expect(notJSON.status == 400)
            let sent = try await admin.post(
                "/ui/jobs/\(id)/signal", [("csrf", csrf), ("name", "approved"), ("payload", #"{"by": "ops"}"#)])
            #expect(sent.status == 303)
            #expect(sent.location == "/ui/jobs/\(id)?done=signal-resumed&what=\(id)")
            let done = try await server.job(id) { $0["state"] == "completed" }
            #expect(done["output"]?["input"] == ["by": "ops"])
            var reader = Visitor(base: server.base)
            try await reader.signIn(Token.read)
            let waiting = try await server.enqueue(["stages": [["await": "approved"]]])
            _ = try await server.job(waiting) { $0["state"] == "waiting" }
            #expect(!(try await reader.get("/ui/jobs/\(waiting)").html.contains("/signal\"")))
        }
    }

    /// Everything a job carries is shown as text: markup in its input, metadata, lane, error and
    /// output reaches the page escaped.
    @Test func whatAJobCarriesIsEscaped() async throws {
        try await withServer { server async throws in
            let hostile = "<img src=x onerror=alert(1)></script><script>alert(2)</script>"
            let id = try await server.enqueue([
                "input": .string(hostile), "metadata": ["note": .string(hostile)],
                "stages": [
                    ["task": "fail-first", "args": ["key": .string(hostile + "\(UUID())")], "lane": "<b>lane</b>"]
                ],
            ])
            _ = try await server.job(id) { $0["state"] == "discarded" }
            var visitor = Visitor(base: server.base)
            try await visitor.signIn(Token.admin)
            for path in ["/ui/jobs/\(id)", "/ui/jobs", "/ui/lanes"] {
                let page = try await visitor.get(path)
                #expect(page.status == 200)
                #expect(!page.html.contains("<img src=x"), "\(path)")
                #expect(!page.html.contains("<script>alert"), "\(path)")
                #expect(!page.html.contains("<b>lane"), "\(path)")
            }
            let job = try await visitor.get("/ui/jobs/\(id)").html
            #expect(
                job.contains("&lt;img src=x onerror=alert(1)&gt;&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;"))
            #expect(job.contains("&lt;b&gt;lane&lt;/b&gt;"))
            #expect(job.contains("<summary>Args</summary>"), "the stage's args are shown, as text")
        }
    }
}
