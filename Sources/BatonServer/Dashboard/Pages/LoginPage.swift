import Foundation
import HTTPTypes
import Hummingbird

/// Signing in with an API token, and out.
extension Dashboard {
    struct Login: Sendable {
        var next: String
        var error: String?
    }

    /// `GET /ui/login`: the form, or straight on for a signed-in browser.
    func loginPage(_ request: Request) async throws -> Response {
        let next = Self.localPath(request.uri.queryParameters["next"].map(String.init))
        if let cookie = request.cookies[DashboardSessions.cookieName]?.value,
            try await sessions.session(cookie: cookie) != nil
        {
            return Self.redirect(next)
        }
        return page("login", title: "Sign in", section: nil, session: nil, Login(next: next))
    }

    /// `POST /ui/login`: a token the server accepts opens a session (a cookie that names its role,
    /// never the token); any other answers the form again, 401.
    func login(_ request: Request) async throws -> Response {
        try Self.checkOrigin(request)
        let form = try await DashboardForm(request)
        let next = Self.localPath(form["next"])
        guard let token = form["token"]?.trimmingCharacters(in: .whitespaces), !token.isEmpty,
            let (value, session) = try await sessions.open(secret: Substring(token))
        else {
            return page(
                "login", title: "Sign in", section: nil, session: nil, status: .unauthorized,
                Login(next: next, error: "That token is not one this server accepts."))
        }
        let caller = session.caller
        // An enqueue token sees its own jobs and nothing else.
        let landing = caller.role == .enqueue && next == "/ui" ? "/ui/jobs" : next
        return Self.redirect(
            landing, cookie: Self.sessionCookie(value, request: request, maxAge: DashboardSessions.lifetime))
    }

    /// `POST /ui/logout`: the session's cookie is cleared.
    func logout(_ request: Request) async throws -> Response {
        let session = try await session(request)
        try Self.checkOrigin(request)
        let form = try await DashboardForm(request)
        guard sessions.isValidCSRFToken(form["csrf"], for: session) else {
            throw DashboardError.refused(.forbidden, "The form has expired: reload the page and try again.")
        }
        return Self.redirect("/ui/login", cookie: Self.sessionCookie("", request: request, maxAge: 0))
    }

    /// The session cookie: only for `/ui`, out of scripts' reach, never sent by another site's
    /// request, and only over TLS when the dashboard is served over it (directly or behind a proxy
    /// that says so with `X-Forwarded-Proto`).
    static func sessionCookie(_ value: String, request: Request, maxAge: Int) -> Cookie {
        let secure =
            request.uri.scheme == .https
            || request.headers[HTTPField.Name("X-Forwarded-Proto")!]?.lowercased() == "https"
        return Cookie(
            name: DashboardSessions.cookieName, value: value, maxAge: maxAge, path: "/ui", secure: secure,
            httpOnly: true, sameSite: .strict)
    }

    /// A form posted from another origin is refused, whatever it carries (browsers send `Origin`
    /// with every POST).
    static func checkOrigin(_ request: Request) throws {
        guard let origin = request.headers[.origin] else { return }
        let host = request.head.authority ?? ""
        guard origin == "http://\(host)" || origin == "https://\(host)" else {
            throw DashboardError.refused(.forbidden, "This form was posted from another site (\(origin)).")
        }
    }

    /// `next` if it is a dashboard path, else the overview: a login link cannot send anyone
    /// elsewhere.
    static func localPath(_ next: String?) -> String {
        guard let next, next.hasPrefix("/ui"), !next.hasPrefix("//"), !next.contains("\\") else { return "/ui" }
        return next
    }
}
