import Crypto
import Foundation

/// The dashboard's sessions. Logging in with an API token sets a cookie that names the token's
/// role and fingerprint (never the token) with an expiry and a random id, signed with HMAC-SHA256.
/// Every form that changes something carries a CSRF token derived from the session's id.
///
/// The signing key is derived from every configured token's digest: all servers given the same
/// tokens accept each other's sessions (behind a load balancer, across restarts), and a session
/// ends when its token is removed from the configuration or the tokens change.
struct DashboardSessions: Sendable {
    static let cookieName = "baton_session"
    /// How long a session lasts from its login.
    static let lifetime = 12 * 60 * 60

    struct Session: Sendable {
        var caller: Caller
        var id: String
        var expires: Date
    }

    /// The signing key's bytes (Crypto's `SymmetricKey` is not `Sendable`).
    private let keyBytes: [UInt8]
    private let tokens: APITokens

    init(tokens: APITokens) {
        var hash = SHA256()
        hash.update(data: Data("baton dashboard sessions 1".utf8))
        for entry in tokens.entries { hash.update(data: entry.digest) }
        keyBytes = Array(hash.finalize())
        self.tokens = tokens
    }

    /// A new session for `caller`, as the cookie value to set.
    func open(for caller: Caller, now: Date = Date()) -> (cookie: String, session: Session) {
        var generator = SystemRandomNumberGenerator()
        let id = APITokens.hex((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let expires = Int(now.timeIntervalSince1970) + Self.lifetime
        let payload = "\(caller.role.rawValue).\(caller.fingerprint).\(expires).\(id)"
        return (
            payload + "." + signature(payload),
            Session(caller: caller, id: id, expires: Date(timeIntervalSince1970: Double(expires)))
        )
    }

    /// The session a cookie value names, if its signature holds, it has not expired and its token
    /// is still configured with the same role.
    func session(cookie: String, now: Date = Date()) -> Session? {
        let parts = cookie.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 5, let mac = Self.bytes(hex: parts[4]) else { return nil }
        let payload = parts[0..<4].joined(separator: ".")
        guard HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: Data(payload.utf8), using: key),
            let role = Role(rawValue: String(parts[0])), let expires = Int(parts[2]),
            Double(expires) > now.timeIntervalSince1970
        else { return nil }
        let fingerprint = String(parts[1])
        guard tokens.entries.contains(where: { $0.fingerprint == fingerprint && $0.role == role }) else { return nil }
        return Session(
            caller: Caller(role: role, fingerprint: fingerprint), id: String(parts[3]),
            expires: Date(timeIntervalSince1970: Double(expires)))
    }

    /// The CSRF token of a session: forms carry it, and a request that changes something without
    /// it (or with another session's) is refused.
    func csrfToken(for session: Session) -> String { signature("csrf." + session.id) }

    /// Whether `token` is the session's CSRF token (compared in constant time).
    func isValidCSRFToken(_ token: String?, for session: Session) -> Bool {
        guard let token, let mac = Self.bytes(hex: Substring(token)) else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(
            mac, authenticating: Data(("csrf." + session.id).utf8), using: key)
    }

    private var key: SymmetricKey { SymmetricKey(data: keyBytes) }

    private func signature(_ text: String) -> String {
        APITokens.hex(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key))
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
