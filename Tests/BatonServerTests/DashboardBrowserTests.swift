import Baton
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import Testing

/// The dashboard in a real browser (headless Chromium through WebDriver): signing in, live
/// updates without a reload, cancelling and retrying, what a read token sees, hostile payloads
/// and a clean console.
///
/// With `BATON_SCREENSHOTS=DIRECTORY` the tour also saves a PNG of every page, light and dark
/// (`scripts/screenshots.sh` makes the ones in `docs/`).
@Suite(.enabled(if: Browser.isAvailable, "needs chromium and chromium-driver"), .timeLimit(.minutes(3)))
struct DashboardBrowserTests {
    static func signIn(_ browser: Browser, _ server: TestServer, token: String) async throws {
        try await browser.open(server.base + "/ui")
        try await browser.waitForText("h1") { $0 == "Sign in to Baton" }
        try await browser.type(token, into: "#token")
        try await browser.click("form[action='/ui/login'] button")
    }

    /// Signed in as admin: a job enqueued over the API appears in the list without a reload; its
    /// page follows its stages as they advance; a running job is cancelled and a discarded one
    /// retried from their pages. Nothing reaches the console.
    @Test func anAdminWatchesJobsAndActsOnThem() async throws {
        try await withServer { server async throws in
            try await Browser.with { browser in
                try await Self.signIn(browser, server, token: Token.admin)
                try await browser.waitForText("h1") { $0 == "Overview" }
                #expect(try await browser.text("header .role") == "admin-1 (admin)")

                // The list, then a job enqueued elsewhere: it appears, and the page was not reloaded.
                try await browser.open(server.base + "/ui/jobs")
                try await browser.run("window.sameDocument = true")
                let slow = try await server.enqueue([
                    "stages": [["task": "sleep", "args": ["ms": 8000]], ["task": "sleep", "args": ["ms": 2500]]]
                ])
                try await browser.waitForText("[data-live=jobs]") { $0.contains("\(slow)") }
                #expect(try await browser.run("return window.sameDocument === true") == true)

                // Its page: the current stage moves from the first to the second, then it completes
                // (each stage outlasts the page's two-second refresh, so each is seen current; the first
                // also outlasts opening the page on a loaded machine, which once took over 2.5 s).
                try await browser.open(server.base + "/ui/jobs/\(slow)")
                try await browser.run("window.sameDocument = true")
                let currentStage = """
                    return [...document.querySelectorAll('.chain > .node')].findIndex(n => n.classList.contains('current'))
                    """
                for stage in [0, 1] {
                    try await eventually("stage \(stage + 1) marked current") {
                        try await browser.run(currentStage) == .number(JSONNumber(stage))
                    }
                }
                try await browser.waitForText("[data-live=job] h1 .badge") { $0 == "completed" }
                #expect(try await browser.run("return window.sameDocument === true") == true)
                #expect(try await browser.count(".chain .stage.s-completed") == 2)

                // Cancel a running job from its page.
                let long = try await server.enqueue(["stages": [["task": "sleep", "args": ["ms": 60000]]]])
                _ = try await server.job(long) { $0["state"] == "running" }
                try await browser.open(server.base + "/ui/jobs/\(long)")
                try await browser.click("form[action$='/cancel'] button")
                try await browser.waitForText("[data-live=job] h1 .badge") { $0 == "cancelled" }
                #expect(try await browser.text(".notice") == "Job \(long) cancelled.")
                #expect(try await server.call(.GET, "/v1/jobs/\(long)")["state"] == "cancelled")

                // Retry a discarded one: it runs again and completes.
                let failing = try await server.enqueue([
                    "input": 7, "stages": [["task": "fail-first", "args": ["key": .string("browser-\(UUID())")]]],
                ])
                _ = try await server.job(failing) { $0["state"] == "discarded" }
                try await browser.open(server.base + "/ui/jobs/\(failing)")
                #expect(try await browser.text(".attempts pre")?.contains("first run of browser-") == true)
                try await browser.click("form[action$='/retry'] button")
                try await browser.waitForText("[data-live=job] h1 .badge") { $0 == "completed" }

                // Both changes are on the audit page, newest first, with the token's name.
                try await browser.open(server.base + "/ui/audit")
                try await browser.waitForText("h1") { $0 == "Audit" }
                #expect(try await browser.text("table.audit tbody tr:nth-child(1) td:nth-child(3)") == "retryJob")
                #expect(try await browser.text("table.audit tbody tr:nth-child(2) td:nth-child(4)") == "job:\(long)")
                #expect(try await browser.text("table.audit tbody tr:nth-child(2) td:nth-child(2)") == "admin-1")

                #expect(try await browser.consoleErrors() == [])
            }
        }
    }

    /// The overview says first what will not move by itself: a queue with jobs no live worker
    /// serves, a paused queue holding work, a blocked lane (its card red), each with a link.
    @Test func theOverviewFlagsWorkThatWillNotMove() async throws {
        try await withServer { server async throws in
            _ = try await server.enqueue(["queue": "nobody-serves", "stages": [["task": "noop"]]])
            _ = try await server.enqueue(["queue": "held", "stages": [["task": "noop"]]])
            #expect(try await server.call(.POST, "/v1/queues/held/pause?unchecked=true").status == 200)
            let blocker = try await server.enqueue([
                "input": 1,
                "stages": [
                    [
                        "task": "fail-first", "lane": "flagged",
                        "args": ["key": .string("flag-\(UUID())"), "retryable": true],
                        "max_attempts": 3, "backoff": ["kind": "constant", "initial": "1h"],
                    ]
                ],
            ])
            _ = try await server.job(blocker) { $0["state"] == "retryable" }
            try await Browser.with { browser in
                try await Self.signIn(browser, server, token: Token.admin)
                try await browser.waitForText("h1") { $0 == "Overview" }
                let trouble = try await browser.run(
                    "return [...document.querySelectorAll('.trouble li')].map(li => li.textContent.trim())")
                #expect(
                    trouble == [
                        "Queue nobody-serves: 1 job available and no live worker serves it; start one with --queue nobody-serves. Workers",
                        "Queue held is paused with 1 job available. See them",
                        "1 lane is blocked: its holder failed and waits to retry; nothing behind it moves. Lanes",
                    ], "\(trouble)")
                #expect(
                    try await browser.run(
                        "return [...document.querySelectorAll('table.queues tbody tr')].map(r => r.querySelector('th').textContent + ' ' + r.querySelector('.badge').textContent)"
                    ) == ["default active", "held paused", "nobody-serves no worker"])
                // The blocked lanes' card in the alert colour, not the text's.
                let colors = try await browser.run(
                    """
                    const card = getComputedStyle(document.querySelector('.stats li.alert a')).color;
                    const text = getComputedStyle(document.querySelector('.stats li:not(.alert) a')).color;
                    return card !== text
                    """)
                #expect(colors == true)

                // The lane holder is skipped from its page, with a reason; its lane moves on.
                try await browser.open(server.base + "/ui/jobs/\(blocker)")
                try await browser.type("bad input, refunded by hand", into: "form.skip-job input[name=reason]")
                try await browser.click("form.skip-job button")
                try await browser.waitForText("[data-live=job] h1 .badge") { $0 == "discarded" }
                #expect(
                    try await server.call(.GET, "/v1/jobs/\(blocker)")["stages"]?.items.first?["errors"]?.items.last?[
                        "error"] == "skipped: bad input, refunded by hand")
                #expect(try await browser.consoleErrors() == [])
            }
        }
    }

    /// The path a `repeat` and a `goto` took, as a person sees it: the path under the chain, the
    /// stage passed over struck through, the repeated one's runs.
    @Test func theJobPageShowsThePathTaken() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue(serverTestLoopedChain)
            _ = try await server.job(id) { $0["state"] == "completed" }
            try await Browser.with { browser in
                try await Self.signIn(browser, server, token: Token.read)
                try await browser.waitForText("h1") { $0 == "Overview" }
                try await browser.open(server.base + "/ui/jobs/\(id)")
                try await browser.waitForText(".path span") { $0 == "count ×3 → last" }
                let struck = try await browser.run(
                    "return getComputedStyle(document.querySelector('.chain .stage.s-skipped .label')).textDecorationLine"
                )
                #expect(struck == "line-through")
                #expect(try await browser.count(".chain .stage.s-skipped") == 1)
                #expect(try await browser.consoleErrors() == [])
            }
        }
    }

    /// Every count on the overview equals the list its link opens, on a dashboard holding jobs in
    /// every state, a group whose members run (counted in their parent, as listed), and a queue no
    /// worker serves; the completions of the day are labelled so, and link to the jobs that
    /// completed since.
    @Test func everyCountOnTheOverviewEqualsTheListBehindIt() async throws {
        try await withServer { server async throws in
            let group = try await server.enqueue([
                "stages": [
                    ["group": [["task": "sleep", "args": ["ms": 60000]], ["task": "sleep", "args": ["ms": 60000]]]]
                ]
            ])
            for _ in 0..<2 {
                _ = try await server.enqueue(["stages": [["task": "noop"]], "delay": "1h"])
                _ = try await server.enqueue(["queue": "nobody-serves", "stages": [["task": "noop"]]])
            }
            let holder = try await server.enqueue([
                "input": 1,
                "stages": [
                    [
                        "task": "fail-first", "lane": "counted",
                        "args": ["key": .string("count-\(UUID())"), "retryable": true],
                        "max_attempts": 3, "backoff": ["kind": "constant", "initial": "1h"],
                    ]
                ],
            ])
            _ = try await server.job(holder) { $0["state"] == "retryable" }
            for _ in 0..<3 { _ = try await server.enqueue(["stages": [["task": "noop", "lane": "counted"]]]) }
            let discarded = try await server.enqueue([
                "input": 1, "stages": [["task": "fail-first", "args": ["key": .string("count-\(UUID())")]]],
            ])
            let cancelled = try await server.enqueue(["stages": [["task": "noop"]], "delay": "1h"])
            #expect(try await server.call(.POST, "/v1/jobs/\(cancelled)/cancel").status == 200)
            let completed = try await server.enqueue(["stages": [["task": "noop"]]])
            _ = try await server.job(discarded) { $0["state"] == "discarded" }
            _ = try await server.job(completed) { $0["state"] == "completed" }
            _ = try await server.job(group) { job in
                job["stages"]?.items.first?["members"]?.items.allSatisfy { $0["state"] == "running" } == true
            }
            try await Browser.with { browser in
                try await Self.signIn(browser, server, token: Token.read)
                try await browser.waitForText("h1") { $0 == "Overview" }
                let headings = try await browser.run(
                    "return [...document.querySelectorAll('table.queues thead th.num')].map(th => th.textContent)")
                #expect(headings.items.contains("completions (24 h)"), "\(headings)")
                let counts = try await browser.run(
                    "return [...document.querySelectorAll('table.queues a.count')].map(a => [a.getAttribute('href'), a.textContent, a.className])"
                ).items.map {
                    (
                        $0.items[0].stringValue ?? "", Int($0.items[1].stringValue ?? "") ?? -1,
                        $0.items[2].stringValue ?? ""
                    )
                }
                #expect(counts.count == 2 * 8, "two queues of eight states")
                #expect(counts.contains { $0.0.contains("state=running") && $0.1 == 0 }, "members run, no job does")
                #expect(
                    counts.contains { $0.0.contains("state=waiting") && $0.1 == 4 }, "the group and three in the lane")
                for (link, count, kind) in counts {
                    try await browser.open(server.base + link)
                    try await browser.waitForText("h1") { $0 == "Jobs" }
                    let listed = try await browser.count("table.jobs tbody tr")
                    if kind.contains("s-completed") {
                        // Completions are counted from the history (each worker adds its own every
                        // few seconds), not rows: the link lists the jobs that completed since.
                        let states = try await browser.run(
                            "return [...document.querySelectorAll('table.jobs tbody .badge')].map(b => b.textContent)")
                        #expect(states.items.allSatisfy { $0 == "completed" }, "\(link): \(states)")
                        #expect(link.contains("finished_from="))
                    } else {
                        #expect(listed == count, "\(link): the count says \(count), the list holds \(listed)")
                    }
                }
                #expect(try await browser.consoleErrors() == [])
            }
        }
    }

    /// Each attempt on a job's page shows what its task logged.
    @Test func theJobPageShowsEachAttemptsLog() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue(serverTestChattyJob)
            _ = try await server.job(id) { $0["state"] == "completed" }
            try await Browser.with { browser in
                try await Self.signIn(browser, server, token: Token.read)
                try await browser.waitForText("h1") { $0 == "Overview" }
                try await browser.open(server.base + "/ui/jobs/\(id)")
                try await browser.waitForText("[data-live=job] h1 .badge") { $0 == "completed" }
                #expect(try await browser.count(".attempts details.log") == 2)
                let logs = try await browser.run(
                    "return [...document.querySelectorAll('.attempts details.log pre')].map(p => p.textContent)")
                #expect(logs.items.map { $0.stringValue?.contains("line 1 of attempt") == true } == [true, true])
                #expect(try await browser.consoleErrors() == [])
            }
        }
    }

    /// An operator finds a job by its id from any page (`/` goes to the box), and a tenant's jobs by
    /// a metadata or args value from the jobs page.
    @Test func anOperatorFindsAJobByItsIdOrWhatItCarries() async throws {
        try await withServer(worker: nil) { server async throws in
            let tenant = try await server.enqueue(
                ["stages": [["task": "noop", "args": ["customer": 7]]], "metadata": ["tenant": "42"]],
                query: "?unchecked=true")
            let other = try await server.enqueue(
                ["stages": [["task": "noop"]], "metadata": ["tenant": "43"]], query: "?unchecked=true")
            try await Browser.with { browser in
                try await Self.signIn(browser, server, token: Token.read)
                try await browser.waitForText("h1") { $0 == "Overview" }
                try await browser.run(
                    "document.body.dispatchEvent(new KeyboardEvent('keydown', {key: '/', bubbles: true}))")
                #expect(try await browser.run("return document.activeElement.id") == "find-job")
                try await browser.type("\(other)\u{E007}", into: "#find-job")
                try await browser.waitForText("h1") { $0.contains("\(other)") }
                #expect(try await browser.currentURL().hasSuffix("/ui/jobs/\(other)"))

                try await browser.open(server.base + "/ui/jobs")
                try await browser.type("tenant=42", into: "input[name=metadata]")
                try await browser.click("form.filters button[type=submit]")
                try await browser.waitForText("[data-live=jobs]") { !$0.contains("\(other)") }
                #expect(try await browser.text("table.jobs tbody")?.contains("\(tenant)") == true)
                #expect(try await browser.currentURL().contains("metadata=tenant%3D42"))
                try await browser.open(server.base + "/ui/jobs?args=customer%3D7")
                #expect(try await browser.count("table.jobs tbody tr") == 1)
                #expect(try await browser.text("table.jobs tbody")?.contains("\(tenant)") == true)

                #expect(try await browser.consoleErrors() == [])
                try await browser.open(server.base + "/ui/jobs?id=forty-two")
                #expect(try await browser.text("main")?.contains("is not a job id") == true)
            }
        }
    }

    /// An admin widens a lane from the lanes page: the width is listed and in effect at once (the
    /// lane's second job is admitted: it holds 2 of 2).
    @Test func anAdminSetsALanesWidthFromTheLanesPage() async throws {
        try await withServer(worker: nil) { server async throws in
            for _ in 0..<3 {
                try await server.enqueue(
                    ["stages": [["task": "noop", "lane": "tenant-7"]], "queue": "idle"], query: "?unchecked=true")
            }
            try await Browser.with { browser in
                try await Self.signIn(browser, server, token: Token.admin)
                try await browser.waitForText("h1") { $0 == "Overview" }
                try await browser.open(server.base + "/ui/lanes")
                #expect(try await browser.text("table.lanes tbody td.num") == "1 of 1")
                try await browser.type("tenant-*", into: "form.lane-width input[name=lane]")
                try await browser.run("document.querySelector('form.lane-width input[name=width]').value = ''")
                try await browser.type("2", into: "form.lane-width input[name=width]")
                try await browser.click("form.lane-width button")
                try await browser.waitForText(".notice") { $0 == "Lane tenant-*: width set, in effect now." }
                #expect(try await browser.text("table.lane-widths tbody th") == "tenant-*")
                #expect(try await browser.text("table.lanes tbody td.num") == "2 of 2")
                #expect(try await browser.consoleErrors() == [])
            }
            #expect(try await server.call(.GET, "/v1/lane-settings")["settings"]?.items.map { $0["width"] } == [2])
        }
    }

    /// A read token sees every page and no action; markup in a job's payload shows as text and
    /// never runs, on every page.
    @Test func aReadTokenSeesNoActionAndPayloadsStayText() async throws {
        try await withServer { server async throws in
            let hostile = "<img src=x onerror=\"window.ran=1\"></script><script>window.ran=2</script>"
            let id = try await server.enqueue([
                "input": .string(hostile), "metadata": ["note": .string(hostile)],
                "stages": [["task": "echo", "lane": "acct-<b>1</b>"]],
            ])
            _ = try await server.job(id) { $0["state"] == "completed" }
            try await Browser.with { browser in
                try await Self.signIn(browser, server, token: Token.read)
                try await browser.waitForText("h1") { $0 == "Overview" }
                for page in ["/ui", "/ui/jobs", "/ui/jobs/\(id)", "/ui/lanes", "/ui/workers"] {
                    try await browser.open(server.base + page)
                    #expect(try await browser.count("form[method=post]:not(.signout)") == 0, "\(page) offers an action")
                    #expect(try await browser.run("return window.ran === undefined") == true, "\(page) ran a payload")
                }
                try await browser.open(server.base + "/ui/jobs/\(id)")
                let input = try await browser.text("#input pre")
                #expect(input?.contains(hostile.replacingOccurrences(of: "\"", with: "\\\"")) == true, "\(input ?? "")")
                #expect(try await browser.count("pre.json img, pre.json script") == 0)
                #expect(try await browser.text(".chain .lane") == "lane acct-<b>1</b>")
                #expect(try await browser.consoleErrors() == [])
            }
        }
    }

    /// Every page, light and dark, wide and phone-narrow, for the README (only with
    /// `BATON_SCREENSHOTS`); and every page usable at a phone's width (nothing wider than it but
    /// the tables' own scrolling boxes).
    @Test func everyPageFitsAndIsPictured() async throws {
        let directory = ProcessInfo.processInfo.environment["BATON_SCREENSHOTS"].map { URL(fileURLWithPath: $0) }
        try await withServer { server async throws in
            let done = try await server.enqueue([
                "input": ["order": 1042, "total": 99.95], "metadata": ["customer": "c-17"],
                "stages": [
                    ["task": "echo", "name": "render"],
                    ["name": "notify", "group": [["task": "noop"], ["task": "noop"]]],
                    ["task": "noop", "lane": "customer-17"],
                ],
            ])
            _ = try await server.job(done) { $0["state"] == "completed" }
            let blocked = try await server.enqueue([
                "stages": [
                    [
                        "task": "http", "args": ["method": "GET", "url": "http://127.0.0.1:1/down"],
                        "lane": "customer-9",
                        "max_attempts": 5, "backoff": ["kind": "constant", "initial": "1h"],
                    ]
                ]
            ])
            try await server.enqueue(["stages": [["task": "noop", "lane": "customer-9"]]])
            _ = try await server.job(blocked) { $0["state"] == "retryable" }
            let digest = try await server.call(
                .PUT, "/v1/schedules/weekly-digest",
                body: [
                    "cron": "0 8 * * MON", "time_zone": "Europe/Paris", "misfire": "latest",
                    "job": ["stages": [["task": "noop"]]],
                ])
            #expect(digest.status == 200)
            #expect(try await server.call(.POST, "/v1/schedules/weekly-digest/run").status == 201)
            // A change with long details in the audit trail: a bulk cancel lists every id.
            let batch = try await server.call(
                .POST, "/v1/jobs/batch?unchecked=true",
                body: ["jobs": .array((0..<60).map { _ in ["queue": "later", "stages": [["task": "noop"]]] })])
            #expect(batch.status == 201, "\(batch.text)")
            let cancelled = try await server.call(
                .POST, "/v1/jobs/bulk", body: ["action": "cancel", "filter": ["queue": "later"]])
            #expect(cancelled["changed"] == 60, "\(cancelled.text)")
            try await Browser.with { browser in
                try await Self.signIn(browser, server, token: Token.admin)
                try await browser.waitForText("h1") { $0 == "Overview" }
                let pages = [
                    ("overview", "/ui"), ("jobs", "/ui/jobs"), ("job", "/ui/jobs/\(done)"),
                    ("blocked-job", "/ui/jobs/\(blocked)"), ("lanes", "/ui/lanes"), ("workers", "/ui/workers"),
                    ("schedules", "/ui/schedules"), ("audit", "/ui/audit"),
                ]
                for (width, suffix) in [(1280, ""), (390, "-phone")] {
                    try await browser.resize(width: width, height: 900)
                    for scheme in ["light", "dark"] {
                        try await browser.colorScheme(scheme)
                        for (name, path) in pages {
                            try await browser.open(server.base + path)
                            let overflow = try await browser.run(
                                "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
                            #expect(overflow == 0, "\(path) at \(width)px is wider than the window by \(overflow)")
                            // The cards' cells (the queues' counts, the audit trail) within the window,
                            // none behind a sideways scroll.
                            let hidden = try await browser.run(
                                """
                                return [...document.querySelectorAll('table.cards td')]
                                    .filter(td => td.getBoundingClientRect().right > document.documentElement.clientWidth).length
                                """)
                            #expect(hidden == 0, "\(path): cells off-screen at \(width)px: \(hidden)")
                            if let directory {
                                try FileManager.default.createDirectory(
                                    at: directory, withIntermediateDirectories: true)
                                try await browser.screenshot().write(
                                    to: directory.appending(path: "\(name)-\(scheme)\(suffix).png"))
                            }
                        }
                    }
                }
                #expect(try await browser.consoleErrors() == [])
            }
        }
    }
}
