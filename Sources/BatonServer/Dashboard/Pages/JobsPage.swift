import Baton
import BatonAPI
import Foundation
import Hummingbird

/// `/ui/jobs`: jobs newest first, filtered by state, queue, lane, task, text in the last error,
/// a metadata or args value (`tenant=42`), creation time and finishing time, paged with the API's cursors;
/// `?id=4981` (the box atop every page) opens that job. Admins select jobs, or take every job the filters
/// match, and cancel, retry or delete them together (`POST /v1/jobs/bulk`).
extension Dashboard {
    struct Jobs: Sendable {
        struct Row: Sendable {
            var id: String
            var link: String
            var queue: String
            var state: String
            var stage: String
            var task: String
            var lane: String?
            var attempts: Int
            var created: String
            var createdAt: String
            var lastError: String?
        }

        struct Option: Sendable {
            var value: String
            var selected: Bool
        }

        /// A filter carried by the "every job matching" form.
        struct Field: Sendable {
            var name: String
            var value: String
        }

        var rows: [Row]
        // The filters as given (named apart from a row's fields: a template looking up a row's
        // empty lane must not find the filter's).
        var states: [Option]
        var filterQueue: String
        var filterLane: String
        var filterTask: String
        var filterError: String
        var filterMetadata: String
        var filterArgs: String
        var filterFrom: String
        var filterTo: String
        var filterFinishedFrom: String
        var filtered: Bool
        var filterFields: [Field]
        var older: String?
        var newest: String?
    }

    func jobs(_ request: Request) async throws -> Response {
        let session = try await session(request, section: .jobs)
        func text(_ name: String) -> String? { Self.parameter(name, of: request) }
        if let id = text("id") {
            let digits = id.trimmingCharacters(in: .whitespaces).drop { $0 == "#" }
            guard let id = Int64(digits), id > 0 else {
                throw DashboardError.refused(
                    .badRequest, "“\(id)” is not a job id: a job id is a number, such as 4981.")
            }
            return Self.redirect("/ui/jobs/\(id)")
        }
        let state = text("state").flatMap { JobState(rawValue: $0) == nil ? nil : $0 }
        let (from, to) = (text("from").flatMap(Self.minute), text("to").flatMap(Self.minute))
        let finishedFrom = text("finished_from").flatMap(Self.minute)
        let listed = try await asCaller(session, ["listJobs"]) {
            try await api.listJobs(
                .init(
                    query: .init(
                        state: state, queue: text("queue"), lane: text("lane"), task: text("task"),
                        error: text("error"), createdAfter: from, createdBefore: to, finishedAfter: finishedFrom,
                        metadata: text("metadata").map { [$0] }, args: text("args").map { [$0] }, limit: 50,
                        cursor: text("cursor")))
            ).ok.body.json
        }
        let now = Date()
        let kept = Self.filters(Self.filterNames, of: request)
        let filters = kept.percentEncodedQuery ?? ""
        let jobs = Jobs(
            rows: listed.jobs.map { job in
                Jobs.Row(
                    id: "\(job.id)", link: "/ui/jobs/\(job.id)", queue: job.queue, state: job.state.rawValue,
                    stage: "\(job.currentStage + 1)/\(job.stageCount)", task: job.task ?? "group", lane: job.lane,
                    attempts: job.attempts, created: DashboardText.relative(job.createdAt, now: now),
                    createdAt: DashboardText.time(job.createdAt), lastError: job.lastError.map { Self.firstLine($0) })
            },
            states: Self.shownStates.map { Jobs.Option(value: $0, selected: $0 == state) },
            filterQueue: text("queue") ?? "", filterLane: text("lane") ?? "", filterTask: text("task") ?? "",
            filterError: text("error") ?? "", filterMetadata: text("metadata") ?? "", filterArgs: text("args") ?? "",
            filterFrom: text("from") ?? "", filterTo: text("to") ?? "", filterFinishedFrom: text("finished_from") ?? "",
            filtered: !filters.isEmpty,
            filterFields: (kept.queryItems ?? []).map { Jobs.Field(name: $0.name, value: $0.value ?? "") },
            older: listed.nextCursor.map {
                "/ui/jobs?" + (filters.isEmpty ? "" : filters + "&") + "cursor=" + Self.query($0)
            },
            newest: text("cursor") == nil ? nil : "/ui/jobs" + (filters.isEmpty ? "" : "?" + filters))
        return page(
            "jobs", title: "Jobs", section: .jobs, session: session, notice: Self.notice(request), jobs)
    }

    /// What a bulk action asks before it acts: how many jobs it would change (a dry run of it),
    /// the newest of them, and the paused queues among theirs (a retried job there waits).
    struct Confirmation: Sendable {
        var heading: String
        var question: String
        var warning: String?
        var sample: String?
        /// Nonzero: there is something to confirm.
        var matched: Int
        var button: String
        /// The form's fields, sent again with the confirmation.
        var fields: [Jobs.Field]
        var back: String
    }

    /// `POST /ui/jobs` with `action` (cancel, retry or delete) and either the ids selected or
    /// `scope=matching` with the list's filters: one bulk operation of the API; jobs whose state
    /// does not allow the action are counted, not failed. Back to the list, filtered as it was.
    /// Every action on the jobs matching the filters, and a delete of those selected, first shows
    /// what it would do (``Confirmation``), and acts once that is confirmed (`confirmed=yes`).
    func actOnJobs(_ request: Request) async throws -> Response {
        let session = try await session(request)
        let form = try await postedForm(request, session: session)
        guard let name = form["action"], let action = Components.Schemas.BulkRequest.ActionPayload(rawValue: name)
        else { throw DashboardError.refused(.badRequest, "Choose cancel, retry or delete.") }
        func text(_ field: String) -> String? { form[field].flatMap { $0.isEmpty ? nil : $0 } }
        let filter: Components.Schemas.BulkFilter
        var back = ""
        if form["scope"] == "matching" {
            let state = text("state").flatMap(Components.Schemas.JobState.init(rawValue:))
            filter = .init(
                state: state.map { [$0] }, queue: text("queue"), lane: text("lane"), task: text("task"),
                error: text("error"), createdAfter: text("from").flatMap(Self.minute),
                createdBefore: text("to").flatMap(Self.minute),
                finishedAfter: text("finished_from").flatMap(Self.minute),
                metadata: try Self.keyValue(text("metadata"), "metadata"),
                args: try Self.keyValue(text("args"), "args"))
            var kept = URLComponents()
            kept.queryItems = Self.filterNames.compactMap { name in
                text(name).map { URLQueryItem(name: name, value: $0) }
            }
            back = kept.percentEncodedQuery.map { $0 + "&" } ?? ""
        } else {
            let ids = form.all("id").compactMap { Int64($0) }.filter { $0 > 0 }
            guard !ids.isEmpty else { throw DashboardError.refused(.badRequest, "Select the jobs first.") }
            filter = .init(ids: Array(ids.prefix(1000)))
        }
        let confirmed = form["confirmed"] == "yes"
        if !confirmed && (form["scope"] == "matching" || action == .delete) {
            let dryRun = try await asCaller(session, ["bulkJobs"]) {
                try await api.bulkJobs(.init(body: .json(.init(action: action, dryRun: true, filter: filter)))).ok
                    .body.json
            }
            return page(
                "confirm", title: "Confirm", section: .jobs, session: session,
                Self.confirmation(
                    name, dryRun, form: form, back: "/ui/jobs" + (back.isEmpty ? "" : "?" + back.dropLast())))
        }
        let outcome = try await asCaller(session, ["bulkJobs"]) {
            try await api.bulkJobs(.init(body: .json(.init(action: action, dryRun: false, filter: filter)))).ok.body
                .json
        }
        return Self.redirect(
            "/ui/jobs?\(back)done=\(name)-many&what=\(outcome.changed)&skipped=\(outcome.matched - outcome.changed)")
    }

    /// The question a bulk action asks, from its dry run, with the form's fields to send again.
    static func confirmation(
        _ action: String, _ dryRun: Components.Schemas.BulkResponse, form: DashboardForm, back: String
    ) -> Confirmation {
        let (verb, which) =
            switch action {
            case "cancel": ("Cancel", "unfinished ")
            case "retry": ("Retry", "discarded or cancelled ")
            default: ("Delete", "finished ")
            }
        let count = dryRun.matched
        let jobs = count == 1 ? "1 \(which)job" : "\(count) \(which)jobs"
        let scope = form["scope"] == "matching" ? "matching these filters" : "of those selected"
        let paused = dryRun.pausedQueues ?? []
        return Confirmation(
            heading: "\(verb) \(count == 1 ? "1 job" : "\(count) jobs")?",
            question: count == 0
                ? "No \(which)job \(scope): nothing to \(action)."
                : "\(verb) \(jobs) \(scope)\(action == "delete" ? ", for good" : "")?",
            warning: action == "retry" && !paused.isEmpty
                ? "Paused: " + paused.joined(separator: ", ")
                    + ". Their retried jobs wait until the queue is resumed (on the overview)." : nil,
            sample: dryRun.sample.isEmpty ? nil : dryRun.sample.map { "\($0.id)" }.joined(separator: ", "),
            matched: count, button: "\(verb) \(count == 1 ? "1 job" : "\(count) jobs")",
            fields: (["action", "scope"] + filterNames).compactMap { name in
                form[name].map { Jobs.Field(name: name, value: $0) }
            } + form.all("id").map { Jobs.Field(name: "id", value: $0) },
            back: back)
    }

    /// The list's filters, as its form and links name them.
    static let filterNames = [
        "state", "queue", "lane", "task", "error", "metadata", "args", "from", "to", "finished_from",
    ]

    /// A `key=value` filter field as the bulk filter takes it.
    static func keyValue(_ text: String?, _ field: String) throws -> Components.Schemas.KeyValues? {
        guard let text else { return nil }
        guard let equals = text.firstIndex(of: "="), equals > text.startIndex else {
            throw DashboardError.refused(.badRequest, "\(field.capitalized) is written key=value, such as tenant=42.")
        }
        return .init(additionalProperties: [String(text[..<equals]): String(text[text.index(after: equals)...])])
    }

    /// The API operation of a job's action (`cancel`: `cancelJob`).
    static func operation(of action: String) -> String { action + "Job" }

    /// Cancels, retries or deletes one job through the API's own handlers.
    func perform(_ action: String, on id: Int64) async throws {
        switch action {
        case "cancel": _ = try await api.cancelJob(.init(path: .init(id: id))).ok
        case "retry": _ = try await api.retryJob(.init(path: .init(id: id))).ok
        case "delete": _ = try await api.deleteJob(.init(path: .init(id: id))).noContent
        default: throw DashboardError.refused(.notFound, "There is no such action.")
        }
    }

    /// A `datetime-local` value (`2026-11-25T14:03`), read as UTC.
    static func minute(_ text: String) -> Date? {
        RFC3339.parse(text.count == 16 ? text + ":00Z" : text + "Z") ?? RFC3339.parse(text)
    }

    static func firstLine(_ text: String) -> String {
        let line = text.prefix { $0 != "\n" }
        return line.count > 160 ? line.prefix(160) + "…" : String(line)
    }
}
