import Baton
import BatonAPI
import BatonPostgres
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Mustache

/// The web dashboard at `/ui`: pages rendered by the server from the templates in
/// `Dashboard/Resources/` (compiled into the binary), over the same data and roles as the API.
/// Each view is one file in `Dashboard/Pages/` and one template: it reads through the API's own
/// handlers (so a role sees in a page exactly what it may read over HTTP) and hands the template a
/// value made of strings, numbers, flags and lists.
///
/// Everything a job carries reaches the page through `{{…}}`, which escapes it: no template uses
/// `{{{…}}}`, and the Content-Security-Policy admits no inline script or style, so a payload
/// holding markup shows as text. A little plain JavaScript (`dashboard.js`) refreshes the parts
/// marked `data-live` and highlights JSON, working on text nodes only.
struct Dashboard: Sendable {
    let api: API
    let sessions: DashboardSessions
    let templates: MustacheLibrary

    init(api: API) {
        self.api = api
        sessions = DashboardSessions(access: api.access)
        var templates = MustacheLibrary()
        for (name, text) in EmbeddedDashboard.files where name.hasSuffix(".mustache") {
            // Compiled in and rendered by DashboardTests: a template that does not parse fails there.
            try! templates.register(text, named: String(name.dropLast(".mustache".count)))
        }
        self.templates = templates
    }

    func register(on router: Router<BatonRequestContext>) {
        let ui = router.group("ui").add(middleware: DashboardMiddleware(dashboard: self))
        ui.get("assets/:name") { request, context in try asset(context.parameters.require("name")) }
        ui.get("login") { request, _ in try await loginPage(request) }
        ui.post("login") { request, _ in try await login(request) }
        ui.post("logout") { request, _ in try await logout(request) }
        ui.get { request, _ in try await overview(request) }
        ui.get("jobs") { request, _ in try await jobs(request) }
        ui.post("jobs") { request, _ in try await actOnJobs(request) }
        ui.get("jobs/:id") { request, context in try await job(request, id: context.parameters.require("id")) }
        ui.post("jobs/:id/:action") { request, context in
            try await act(
                request, id: context.parameters.require("id"), action: context.parameters.require("action"))
        }
        ui.post("queues/:name/:action") { request, context in
            try await actOnQueue(
                request, name: context.parameters.require("name"), action: context.parameters.require("action"))
        }
        ui.get("lanes") { request, _ in try await lanes(request) }
        ui.post("lanes/:action") { request, context in
            try await actOnLanes(request, action: context.parameters.require("action"))
        }
        ui.get("workers") { request, _ in try await workers(request) }
        ui.get("schedules") { request, _ in try await schedules(request) }
        ui.get("audit") { request, _ in try await audit(request) }
        ui.post("schedules/:name/:action") { request, context in
            try await actOnSchedule(
                request, name: context.parameters.require("name"), action: context.parameters.require("action"))
        }
    }

    // MARK: sessions

    /// The signed-in session, or a redirect to the login page (back here afterwards).
    func session(_ request: Request, section: Section? = nil) async throws -> DashboardSessions.Session {
        guard let cookie = request.cookies[DashboardSessions.cookieName]?.value,
            let session = try await sessions.session(cookie: cookie)
        else {
            let back = request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")
            throw DashboardError.signIn(next: back)
        }
        RequestScope.tokenName?.value = session.caller.name
        if let section, !section.isVisible(to: session.caller) {
            throw DashboardError.refused(
                .forbidden,
                session.caller.queues != nil && section.roles.contains(session.caller.role)
                    ? "Token \(session.caller.name) is limited to queues; this page concerns the whole cluster."
                    : "A \(session.caller.role.rawValue) token may not see or do this; sign in with another.")
        }
        return session
    }

    /// Runs `body` as the session's caller would over the API, once it may call `operations` (as
    /// the API's access middleware judges them: role, the token's operations, cluster-wide ones
    /// for a token limited to queues): an `enqueue` token reads its own jobs only, a token limited
    /// to queues those queues' only.
    func asCaller<T>(
        _ session: DashboardSessions.Session, _ operations: [String], _ body: () async throws -> T
    ) async throws -> T {
        for operation in operations {
            do {
                try AccessMiddleware.check(session.caller, operation, APIDocument.shared.operations[operation])
            } catch let problem as Problem {
                throw DashboardError.refused(.forbidden, (problem.detail ?? problem.title) + ".")
            }
        }
        return try await Caller.$current.withValue(session.caller) { try await body() }
    }

    /// The fields of a form posted to a page that changes something, once its CSRF token checks
    /// out and the session's role is `admin`.
    func postedForm(_ request: Request, session: DashboardSessions.Session) async throws -> DashboardForm {
        try Self.checkOrigin(request)
        let form = try await DashboardForm(request)
        guard sessions.isValidCSRFToken(form["csrf"], for: session) else {
            throw DashboardError.refused(
                .forbidden, "The form has expired or did not come from this dashboard: reload the page and try again.")
        }
        guard session.caller.role == .admin else {
            throw DashboardError.refused(.forbidden, "Only an admin token may change jobs and queues.")
        }
        return form
    }

    // MARK: rendering

    enum Section: String, CaseIterable {
        case overview, jobs, lanes, workers, schedules, audit

        var title: String { rawValue.prefix(1).uppercased() + rawValue.dropFirst() }
        var path: String { self == .overview ? "/ui" : "/ui/\(rawValue)" }
        /// The roles that see this section (as they may read its data over the API).
        var roles: Set<Role> {
            switch self {
            case .jobs: Set(Role.allCases)
            case .audit: [.admin]
            default: [.admin, .read]
            }
        }
        /// Whether it shows what belongs to the whole cluster, which a token limited to queues
        /// may not see.
        var isClusterWide: Bool { self == .lanes || self == .workers || self == .audit }

        func isVisible(to caller: Caller) -> Bool {
            roles.contains(caller.role) && !(isClusterWide && caller.queues != nil)
        }
    }

    /// What every page's template sees around its own content.
    struct Frame<Content>: Sendable where Content: Sendable {
        struct NavItem: Sendable {
            var title: String
            var path: String
            var current: Bool
        }

        var title: String
        var nav: [NavItem]
        var role: String?
        var csrf: String?
        /// Whether the caller may act (an admin): forms and buttons are shown only then.
        var canAct: Bool
        var notice: String?
        var content: Content
    }

    /// A page: `template` with `content` inside the layout.
    func page<Content: Sendable>(
        _ template: String, title: String, section: Section?, session: DashboardSessions.Session?,
        notice: String? = nil, status: HTTPResponse.Status = .ok, _ content: Content
    ) -> Response {
        let role = session?.caller.role
        let frame = Frame(
            title: title,
            nav: session.map { session in
                Section.allCases.filter { $0.isVisible(to: session.caller) }.map {
                    Frame<Content>.NavItem(title: $0.title, path: $0.path, current: $0 == section)
                }
            } ?? [],
            role: session.map { "\($0.caller.name) (\($0.caller.role.rawValue))" },
            csrf: session.map(sessions.csrfToken), canAct: role == .admin, notice: notice,
            content: content)
        let html =
            templates.render(ReflectedView(frame), withTemplate: template) ?? "template \(template) is missing"
        var headers = Self.securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// A page's query parameter, trimmed of spaces; nil when absent or blank.
    static func parameter(_ name: String, of request: Request) -> String? {
        request.uri.queryParameters[Substring(name)].map(String.init).flatMap {
            $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0
        }
    }

    /// The filters among `names` a page was given, to keep in its links.
    static func filters(_ names: [String], of request: Request) -> URLComponents {
        var kept = URLComponents()
        kept.queryItems = names.compactMap { name in
            parameter(name, of: request).map { URLQueryItem(name: name, value: $0) }
        }
        return kept
    }

    /// A redirect after a form (303: the browser follows with a GET).
    static func redirect(_ location: String, cookie: Cookie? = nil) -> Response {
        var response = Response(status: .seeOther, headers: Self.securityHeaders)
        response.headers[.location] = location
        if let cookie { response.setCookie(cookie) }
        return response
    }

    /// On every dashboard answer: scripts and styles from this server only, no inline script, no
    /// framing, no form posted elsewhere.
    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy:
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        .xContentTypeOptions: "nosniff", HTTPField.Name("Referrer-Policy")!: "same-origin",
        HTTPField.Name("X-Frame-Options")!: "DENY",
    ]

    /// `/ui/assets/NAME`: the stylesheet, the script and the icon, cached for an hour.
    func asset(_ name: String) throws -> Response {
        let types = ["css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8", "svg": "image/svg+xml"]
        guard let text = EmbeddedDashboard.files[name], let type = types[String(name.split(separator: ".").last ?? "")]
        else { throw DashboardError.refused(.notFound, "There is no such file.") }
        var headers = Self.securityHeaders
        headers[.contentType] = type
        headers[.cacheControl] = "public, max-age=3600"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

/// Why a dashboard request ends other than with its page.
enum DashboardError: Error {
    /// No session: to the login page, then back to `next`.
    case signIn(next: String)
    /// Shown as a page with this status and message.
    case refused(HTTPResponse.Status, String)
}

/// Answers the dashboard's errors as pages, not problem+json: a missing session goes to the login
/// page, a refusal shows its message, the database away a 503 page that says so, anything else a
/// logged 500 page that leaks nothing.
struct DashboardMiddleware: RouterMiddleware {
    let dashboard: Dashboard

    struct Message: Sendable {
        var heading: String
        var message: String
    }

    func handle(
        _ request: Request, context: BatonRequestContext,
        next: (Request, BatonRequestContext) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch  where error.isClientGone {
            context.logger.info(
                "the client left before its request was complete", metadata: ["error": "\(error.serverLogDescription)"])
            return Response(status: .badRequest)
        } catch DashboardError.signIn(let back) {
            let next =
                back == "/ui"
                ? "" : "?next=" + DashboardText.percentEncoded(back)
            return Dashboard.redirect("/ui/login" + next)
        } catch DashboardError.refused(let status, let message) {
            return await error(status, message, request)
        } catch let problem as Problem {
            return await error(problem.status, problem.detail ?? problem.title, request)
        } catch let refusal as BatonError {
            let problem = Problem.from(refusal)
            return await error(problem.status, problem.detail ?? problem.title, request)
        } catch let error where error.isDatabaseUnavailable {
            context.logger.warning("database unavailable", metadata: ["error": "\(error.serverLogDescription)"])
            return await self.error(
                .serviceUnavailable, "The database cannot be reached right now; try again shortly.", request)
        } catch let error as any HTTPResponseError where error.status == .notFound {
            return await self.error(.notFound, "There is no such page.", request)
        } catch {
            context.logger.error("dashboard request failed", metadata: ["error": "\(error.serverLogDescription)"])
            return await self.error(
                .internalServerError,
                "The page could not be made; the server log has the details (request \(context.logger[metadataKey: "request_id"] ?? "\(context.id)")).",
                request)
        }
    }

    private func error(_ status: HTTPResponse.Status, _ message: String, _ request: Request) async -> Response {
        var session: DashboardSessions.Session?
        if let cookie = request.cookies[DashboardSessions.cookieName] {
            session = try? await dashboard.sessions.session(cookie: cookie.value)
        }
        return dashboard.page(
            "message", title: status.reasonPhrase, section: nil, session: session, status: status,
            Message(heading: "\(status.code) \(status.reasonPhrase)", message: message))
    }
}
