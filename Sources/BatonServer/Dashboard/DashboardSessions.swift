import Crypto
import Foundation

/// The dashboard's sessions. Logging in with an API token sets a cookie that names the token (its
/// name, never the token) with an expiry and a random id, signed with HMAC-SHA256. Every form that
/// changes something carries a CSRF token derived from the session's id.
///
/// A cookie is signed with a key derived from its token's SHA-256 digest, which neither the
/// database nor the cookie holds: forging one takes the token itself. Every server given the same
/// token accepts its sessions (behind a load balancer, across restarts). A session is the token as
/// it is configured now: it ends when its token is removed or its secret changes, and a token's new
/// role or queues apply to it at once (a token file read again on `SIGHUP`).
struct DashboardSessions: Sendable {
    static let cookieName = "baton_session"
    /// How long a session lasts from its login.
    static let lifetime = 12 * 60 * 60

    struct Session: Sendable {
        var caller: Caller
        var id: String
        var expires: Date
        /// The signing key, for the session's CSRF token.
        fileprivate var keyBytes: [UInt8]
    }

    let access: Access

    /// The signing key of `token`'s sessions (Crypto's `SymmetricKey` is not `Sendable`).
    private static func keyBytes(_ token: APITokens.Token) -> [UInt8] {
        var hash = SHA256()
        hash.update(data: Data("baton dashboard sessions 3".utf8))
        hash.update(data: token.digest)
        return Array(hash.finalize())
    }

    /// A new session for the token `secret` is, as the cookie value to set; nil for no token.
    func open(secret: Substring, now: Date = Date()) async throws -> (cookie: String, session: Session)? {
        guard let (token, caller) = try await access.token(secret: secret) else { return nil }
        var generator = SystemRandomNumberGenerator()
        let id = APITokens.hex((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let expires = Int(now.timeIntervalSince1970) + Self.lifetime
        let key = Self.keyBytes(token)
        // The name last: it may hold dots.
        let payload = "\(expires).\(id).\(caller.name)"
        return (
            payload + "." + Self.signature(payload, key),
            Session(caller: caller, id: id, expires: Date(timeIntervalSince1970: Double(expires)), keyBytes: key)
        )
    }

    /// The session a cookie value names, if its token is configured, the signature holds (so its
    /// secret is the same) and it has not expired.
    func session(cookie: String, now: Date = Date()) async throws -> Session? {
        guard let dot = cookie.lastIndex(of: "."), let mac = Self.bytes(hex: cookie[cookie.index(after: dot)...])
        else { return nil }
        let payload = cookie[..<dot]
        let parts = payload.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let expires = Int(parts[0]), Double(expires) > now.timeIntervalSince1970,
            let (token, caller) = try await access.token(named: String(parts[2]))
        else { return nil }
        let key = Self.keyBytes(token)
        guard
            HMAC<SHA256>.isValidAuthenticationCode(
                mac, authenticating: Data(payload.utf8), using: SymmetricKey(data: key))
        else { return nil }
        return Session(
            caller: caller, id: String(parts[1]), expires: Date(timeIntervalSince1970: Double(expires)), keyBytes: key)
    }

    /// The CSRF token of a session: forms carry it, and a request that changes something without
    /// it (or with another session's) is refused.
    func csrfToken(for session: Session) -> String { Self.signature("csrf." + session.id, session.keyBytes) }

    /// Whether `token` is the session's CSRF token (compared in constant time).
    func isValidCSRFToken(_ token: String?, for session: Session) -> Bool {
        guard let token, let mac = Self.bytes(hex: Substring(token)) else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(
            mac, authenticating: Data(("csrf." + session.id).utf8), using: SymmetricKey(data: session.keyBytes))
    }

    private static func signature(_ text: some StringProtocol, _ key: [UInt8]) -> String {
        APITokens.hex(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: SymmetricKey(data: key)))
    }

    private static func bytes(hex: Substring) -> [UInt8]? {
        guard hex.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }
}
