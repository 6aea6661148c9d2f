import Baton
import BatonAPI
import BatonPostgres
import Foundation
import Hummingbird

/// `/ui`: every queue with its jobs per state (each the number its link lists) and its
/// completions over the last day (from the history), paused or not, its oldest available job's age, and charts of its
/// throughput and pickup wait over the last hour or day; live workers and blocked lanes. Admins
/// pause and resume queues here. Nothing on it counts finished rows: an index-only scan of
/// unfinished jobs and the per-minute history.
extension Dashboard {
    struct Overview: Sendable {
        struct Queue: Sendable {
            struct Count: Sendable {
                var state: String
                /// As the column's heading says it (`completed (24 h)`).
                var label: String
                var count: Int
                var link: String
            }

            var name: String
            var link: String
            var paused: Bool
            /// Jobs are available and no live worker serves the queue.
            var unserved: Bool
            var workers: Int
            var counts: [Count]
            var oldest: String?
            var action: String
            var charts: [Chart]
        }

        struct Range: Sendable {
            var title: String
            var link: String
            var current: Bool
        }

        /// What needs an operator, most urgent first, each with the reason and a link to the fix.
        struct Trouble: Sendable {
            var text: String
            var link: String
            var action: String
        }

        /// A fair queue's keys with stages waiting, and the ones with the most.
        struct FairQueue: Sendable {
            struct Key: Sendable {
                var key: String
                var stages: Int
            }

            struct Share: Sendable {
                var key: String
                /// "42 %"
                var share: String
            }

            var name: String
            var keys: Int
            var top: [Key]
            /// The keys with the most stages running now.
            var running: [Key]
            /// The keys that took the most of the claims of the last few minutes, each with its share.
            var started: [Share]
            /// Where its jobs naming no key take one (`metadata.tenant`), if it derives them.
            var from: String?
        }

        var trouble: [Trouble]
        var queues: [Queue]
        var fairQueues: [FairQueue]
        var states: [String]
        var ranges: [Range]
        /// Whether the caller sees the whole cluster (workers, lanes): a token limited to no queue.
        var cluster: Bool
        var workers: Int
        var lanes: Int
        var blockedLanes: Int
        var hasBlocked: Bool
    }

    /// The states in the order a queue's counts are shown.
    static let shownStates = [
        "available", "running", "scheduled", "retryable", "waiting", "completed", "discarded", "cancelled",
    ]

    func overview(_ request: Request) async throws -> Response {
        let session = try await session(request, section: .overview)
        let caller = session.caller
        let now = Date()
        let day = request.uri.queryParameters["range"] == "day"
        // The last hour by the minute, or the last day by the quarter hour.
        let (bin, count): (Duration, Int) = day ? (.seconds(900), 96) : (.seconds(60), 60)
        let binSeconds = Double(bin.components.seconds)
        let end = (now.timeIntervalSince1970 / binSeconds).rounded(.down) * binSeconds
        let start = Date(timeIntervalSince1970: end - binSeconds * Double(count - 1))
        // The four reads at once: the page waits for the slowest, not for their sum.
        let cluster = caller.queues == nil
        let dayAgo = now.addingTimeInterval(-86400)
        let (queues, history, workers, lanes, late) = try await asCaller(
            session, ["listQueues"] + (cluster ? ["listWorkers", "listLanes", "listSchedules"] : [])
        ) {
            async let queues = api.store.queueSummaries(finishedSince: dayAgo)
            async let history = api.store.history(since: start, bin: bin)
            async let workers = cluster ? api.store.workers() : []
            async let lanes = cluster ? api.store.laneCounts() : (lanes: 0, blocked: 0)
            async let late = cluster ? api.store.dueSchedules(now: now.addingTimeInterval(-Self.scheduleGrace)) : []
            return try await (queues, history, workers, lanes, late)
        }
        // A token limited to queues sees those queues only.
        let byQueue = Dictionary(grouping: history.filter { caller.serves($0.queue) }, by: \.queue)
        let names = Set(queues.map(\.name).filter(caller.serves)).union(byQueue.keys)
        let statuses = Dictionary(uniqueKeysWithValues: queues.map { ($0.name, $0) })
        let overview = Overview(
            trouble: Self.trouble(
                queues.filter { caller.serves($0.name) }, blockedLanes: lanes.blocked, cluster: cluster)
                + Self.trouble(silent: workers.filter { !$0.alive }, late: late, now: now),
            queues: names.sorted().map { name in
                let queue = statuses[name] ?? QueueStatus(name: name)
                let link = Self.query(name)
                var bins = [Store.HistoryMinute?](repeating: nil, count: count)
                for minute in byQueue[name] ?? [] {
                    let index = Int(
                        ((minute.minute.timeIntervalSince1970 - start.timeIntervalSince1970) / binSeconds).rounded())
                    if bins.indices.contains(index) { bins[index] = minute }
                }
                let perMinute = binSeconds / 60
                let (from, to) = (day ? "24h ago" : "1h ago", "now")
                return Overview.Queue(
                    name: name, link: "/ui/jobs?queue=\(link)", paused: queue.paused, unserved: queue.unserved,
                    workers: queue.workers,
                    counts: Self.shownStates.map { state in
                        Overview.Queue.Count(
                            state: state, label: Self.stateHeading(state),
                            count: queue.counts[JobState(rawValue: state) ?? .available] ?? 0,
                            link: "/ui/jobs?queue=\(link)&state=\(state)"
                                + (state == "completed" ? "&finished_from=" + Self.minuteText(dayAgo) : ""))
                    },
                    oldest: queue.oldestAvailable.map { DashboardText.relative($0, now: now) },
                    action: "/ui/queues/\(Self.path(name))/\(queue.paused ? "resume" : "pause")",
                    charts: [
                        Chart(
                            title: "Jobs finished per minute", count: count, from: from, to: to,
                            format: { String(format: $0 < 10 ? "%.1f" : "%.0f", $0) },
                            [
                                ("completed", "completed", bins.map { Double($0?.completed ?? 0) / perMinute }),
                                ("discarded", "discarded", bins.map { Double($0?.discarded ?? 0) / perMinute }),
                            ]),
                        Chart(
                            title: "Pickup wait", count: count, from: from, to: to, format: { DashboardText.span($0) },
                            [
                                ("p50", "p50", bins.map { $0?.wait(percentile: 0.5) }),
                                ("p95", "p95", bins.map { $0?.wait(percentile: 0.95) }),
                            ]),
                    ])
            },
            fairQueues: names.sorted().compactMap { name in
                guard let fair = statuses[name]?.fairShare else { return nil }
                func shown(_ keys: [FairShareBacklog.Key]) -> [Overview.FairQueue.Key] {
                    keys.map { .init(key: $0.key.isEmpty ? "\"\"" : $0.key, stages: $0.stages) }
                }
                return Overview.FairQueue(
                    name: name, keys: fair.keys, top: shown(fair.top), running: shown(fair.runningTop),
                    started: shown(fair.recentTop).map {
                        .init(key: $0.key, share: "\(Int((fair.share(ofRecentStarts: $0.stages) * 100).rounded())) %")
                    }, from: fair.keyFrom)
            },
            states: Self.shownStates.map(Self.stateHeading),
            ranges: [
                Overview.Range(title: "Last hour", link: "/ui", current: !day),
                Overview.Range(title: "Last day", link: "/ui?range=day", current: day),
            ], cluster: cluster, workers: workers.filter(\.alive).count, lanes: lanes.lanes,
            blockedLanes: lanes.blocked,
            hasBlocked: lanes.blocked > 0)
        return page(
            "overview", title: "Overview", section: .overview, session: session, notice: Self.notice(request),
            overview)
    }

    /// A state's column heading. Each counts the jobs its link lists, but completed: the completions
    /// of the last 24 hours, from the history (group members' included), not a count of rows; its
    /// link lists the jobs that completed since.
    static func stateHeading(_ state: String) -> String {
        state == "completed" ? "completions (24 h)" : state
    }

    /// `date` as a `datetime-local` value in UTC, to the minute (`2026-11-25T14:03`), as the jobs
    /// page's time filters take it.
    static func minuteText(_ date: Date) -> String {
        String(RFC3339.format(date).prefix(16))
    }

    /// The flags at the top of the overview: queues with work that nothing will run (no live
    /// worker serves them, or they are paused), then blocked lanes. The same definitions as
    /// `GET /v1/queues` (`unserved`, `paused`), `baton queues` and the `baton_queue_*` gauges.
    /// A caller limited to queues (`cluster` false) gets no link to pages it may not see.
    static func trouble(_ queues: [QueueStatus], blockedLanes: Int, cluster: Bool) -> [Overview.Trouble] {
        func jobs(_ count: Int) -> String { count == 1 ? "1 job" : "\(count) jobs" }
        // Work waiting for a worker: the fix is on the workers page, for a caller who may see it.
        func needsWorker(_ queue: QueueStatus, _ text: String) -> Overview.Trouble {
            Overview.Trouble(
                text: text, link: cluster ? "/ui/workers" : "/ui/jobs?queue=\(query(queue.name))&state=available",
                action: cluster ? "Workers" : "See them")
        }
        var trouble: [Overview.Trouble] = []
        for queue in queues where !queue.paused && queue.unserved {
            trouble.append(
                needsWorker(
                    queue,
                    "Queue \(queue.name): \(jobs(queue.counts[.available] ?? 0)) available and no live worker serves it; "
                        + "start one with --queue \(queue.name)."))
        }
        for queue in queues where !queue.paused && !queue.unservedTasks.isEmpty {
            let tasks = queue.unservedTasks.map { "task \($0)" }.joined(separator: ", ")
            trouble.append(
                needsWorker(
                    queue,
                    "Queue \(queue.name): its oldest available jobs include \(tasks), which no live worker "
                        + "serving \(queue.name) runs; start one that registers it."))
        }
        for queue in queues where queue.paused && (queue.counts[.available] ?? 0) > 0 {
            trouble.append(
                Overview.Trouble(
                    text: "Queue \(queue.name) is paused with \(jobs(queue.counts[.available] ?? 0)) available.",
                    link: "/ui/jobs?queue=\(query(queue.name))&state=available", action: "See them"))
        }
        if blockedLanes > 0 {
            trouble.append(
                Overview.Trouble(
                    text: blockedLanes == 1
                        ? "1 lane is blocked: its holder failed and waits to retry; nothing behind it moves."
                        : "\(blockedLanes) lanes are blocked: their holders failed and wait to retry.",
                    link: "/ui/lanes", action: "Lanes"))
        }
        return trouble
    }

    /// How late a schedule's run may be before it is flagged: the maintenance leader runs due
    /// schedules every second, so a minute late means no worker leads it.
    static let scheduleGrace: TimeInterval = 60

    /// The flags of the cluster's own machinery, after the queues': workers gone silent (their
    /// stages go back to others once their lease runs out), and schedules whose run is more than a
    /// minute late (no worker leads the maintenance that runs them).
    static func trouble(silent: [WorkerRecord], late: [ScheduleRecord], now: Date) -> [Overview.Trouble] {
        silent.map { worker in
            Overview.Trouble(
                text: "Worker \(worker.host) (pid \(worker.pid)) has been silent for "
                    + DashboardText.span(now.timeIntervalSince(worker.heartbeatAt))
                    + "; its stages are put back for other workers once its lease runs out.",
                link: "/ui/workers", action: "Workers")
        }
            + late.map { schedule in
                Overview.Trouble(
                    text: "Schedule \(schedule.name) is late: its run due "
                        + DashboardText.relative(schedule.nextRunAt ?? now, now: now)
                        + " has not been made; no live worker leads the maintenance that runs schedules.",
                    link: "/ui/schedules", action: "Schedules")
            }
    }

    /// `POST /ui/queues/NAME/pause` or `/resume`, then back to the overview.
    func actOnQueue(_ request: Request, name: String, action: String) async throws -> Response {
        let session = try await session(request)
        _ = try await postedForm(request, session: session)
        try await asCaller(session, action == "pause" ? ["pauseQueue"] : ["resumeQueue"]) {
            switch action {
            case "pause": _ = try await api.pauseQueue(.init(path: .init(name: name))).ok
            case "resume": _ = try await api.resumeQueue(.init(path: .init(name: name))).ok
            default: throw DashboardError.refused(.notFound, "There is no such action.")
            }
        }
        return Self.redirect("/ui?done=\(action)&what=" + Self.query(name))
    }

    /// `text` for a query string.
    static func query(_ text: String) -> String {
        DashboardText.percentEncoded(text)
    }

    /// `text` for one path segment.
    static func path(_ text: String) -> String { query(text) }

    /// The line shown once after an action: `?done=ACTION&what=NAME` (only these sentences, so a
    /// link cannot make the dashboard say anything else).
    static func notice(_ request: Request) -> String? {
        let what = String(request.uri.queryParameters["what"].map(String.init)?.prefix(200) ?? "")
        switch request.uri.queryParameters["done"] {
        case "pause": return "Queue \(what) paused: workers claim nothing from it until it is resumed."
        case "resume": return "Queue \(what) resumed."
        case "cancel": return "Job \(what) cancelled."
        case "retry": return "Job \(what) retried: the stage it stopped on runs again now."
        case "delete": return "Job \(what) deleted."
        case "skip": return "Job \(what) skipped: discarded with your reason; its lane, if any, moves on."
        case "signal-resumed": return "Job \(what) received the signal and goes on."
        case "signal-kept": return "Job \(what) keeps the signal for when its chain reaches the stage."
        case "signal-duplicate": return "Job \(what) had this signal already: nothing changed."
        case "lane-width": return "Lane \(what): width set, in effect now."
        case "lane-unset": return "Lane \(what): setting deleted; it takes its prefix's width, or 1."
        case "lane-rate": return "Rate limit \(what) set, in effect at the next claim."
        case "lane-unrate": return "Rate limit \(what) deleted."
        case "schedule-pause": return "Schedule \(what) paused."
        case "schedule-resume": return "Schedule \(what) resumed from its next run."
        case let done? where done.hasPrefix("schedule-run-"):
            return "Schedule \(what) run now: job \(Int(done.dropFirst("schedule-run-".count)) ?? 0)."
        case "cancel-many", "retry-many", "delete-many":
            let done = Int(what) ?? 0
            let skipped = request.uri.queryParameters["skipped"].flatMap { Int($0) } ?? 0
            let verb =
                ["cancel-many": "cancelled", "retry-many": "retried", "delete-many": "deleted"][
                    request.uri.queryParameters["done"].map(String.init) ?? ""] ?? ""
            return "\(done) \(done == 1 ? "job" : "jobs") \(verb)"
                + (skipped > 0 ? "; \(skipped) could not be (their state does not allow it)." : ".")
        default: return nil
        }
    }
}
