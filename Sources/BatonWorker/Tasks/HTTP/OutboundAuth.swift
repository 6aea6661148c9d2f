import BatonHTTPTask
import Crypto
import Foundation
import Synchronization

/// The `http` task's `auth: {"hmac": …}`: the signature of one request.
enum RequestSignature {
    /// Lowercase hex of HMAC(`secret`, `METHOD\npath[?query]\nbody`), the path and query as the
    /// URL spells them (percent-encoded), `/` for an empty path.
    static func hex(
        _ algorithm: HTTPRequestArgs.HMACAlgorithm, secret: String, method: String, url: URL, body: [UInt8]?
    ) -> String {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        var target = components?.percentEncodedPath ?? "/"
        if target.isEmpty { target = "/" }
        if let query = components?.percentEncodedQuery { target += "?" + query }
        let message = Array("\(method)\n\(target)\n".utf8) + (body ?? [])
        let key = SymmetricKey(data: Array(secret.utf8))
        switch algorithm {
        case .sha256: return hex(HMAC<SHA256>.authenticationCode(for: message, using: key))
        case .sha512: return hex(HMAC<SHA512>.authenticationCode(for: message, using: key))
        }
    }

    private static func hex(_ code: some Sequence<UInt8>) -> String {
        code.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
            .joined()
    }
}

/// OAuth2 access tokens got by the client-credentials grant, kept per worker process: one fetch
/// per token endpoint, client, secret and scope, however many stages ask at once, until the token
/// expires (30 seconds early) or a service refuses it.
final class OAuth2Tokens: Sendable {
    /// What a token is for. The secret is kept as its hash: a different secret is a different token.
    struct Key: Hashable, Sendable {
        var tokenURL: String
        var clientID: String
        var secretHash: String
        var scope: String?

        init(tokenURL: String, clientID: String, secret: String, scope: String?) {
            self.tokenURL = tokenURL
            self.clientID = clientID
            secretHash = SHA256.hash(data: Array(secret.utf8)).description
            self.scope = scope
        }
    }

    struct Token: Sendable, Equatable {
        var value: String
        /// Nil: until a service refuses it.
        var expires: ContinuousClock.Instant?
    }

    private enum Entry {
        case fetching(Task<Token, any Error>)
        case ready(Token)
    }

    static let shared = OAuth2Tokens()

    /// The most tokens kept: the keys come from jobs (any client id, scope or endpoint a stage
    /// names), so the cache is bounded; past it, the kept tokens are forgotten (fetched again when
    /// asked for), fetches under way are not.
    let capacity: Int
    private let entries = Mutex<[Key: Entry]>([:])

    init(capacity: Int = 1000) { self.capacity = capacity }

    /// How many tokens are kept or being fetched.
    var count: Int { entries.withLock { $0.count } }

    /// The kept token for `key`, else one `fetch` gets (shared with every caller asking meanwhile).
    func token(for key: Key, fetch: @escaping @Sendable () async throws -> Token) async throws -> Token {
        let now = ContinuousClock.now
        let entry = entries.withLock { entries -> Entry in
            switch entries[key] {
            case .ready(let token) where token.expires.map({ now < $0 }) ?? true: return .ready(token)
            case .fetching(let task): return .fetching(task)
            default:
                if entries.count >= capacity {
                    entries = entries.filter { if case .fetching = $0.value { true } else { false } }
                }
                let task = Task { try await fetch() }
                entries[key] = .fetching(task)
                return .fetching(task)
            }
        }
        let task: Task<Token, any Error>
        switch entry {
        case .ready(let token): return token
        case .fetching(let fetching): task = fetching
        }
        do {
            let token = try await task.value
            entries.withLock { entries in
                if case .fetching(let current)? = entries[key], current == task { entries[key] = .ready(token) }
            }
            return token
        } catch {
            entries.withLock { entries in
                if case .fetching(let current)? = entries[key], current == task { entries[key] = nil }
            }
            throw error
        }
    }

    /// Forgets `token` (a service answered 401 to it); a newer one is kept.
    func refused(_ token: Token, for key: Key) {
        entries.withLock { entries in
            if case .ready(let kept)? = entries[key], kept == token { entries[key] = nil }
        }
    }
}
