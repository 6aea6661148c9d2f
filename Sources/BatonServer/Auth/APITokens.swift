import Baton
import BatonPostgres
import Crypto
import Foundation

/// What a token may do.
public enum Role: String, Sendable, CaseIterable {
    /// Everything.
    case admin
    /// Enqueue jobs and read the jobs enqueued with the same token.
    case enqueue
    /// Every `GET`.
    case read
}

/// Who made a request: the token's name, what it may do, and the fingerprints of its secret.
public struct Caller: Sendable, Hashable {
    /// The token's name, as logs and the audit trail say who (never the secret).
    public var name: String
    public var role: Role
    /// The queues whose jobs, schedules and pauses it may see and act on; nil: every queue, and
    /// what belongs to the whole cluster (workers, lanes, lane and rate settings, metrics).
    public var queues: Set<String>?
    /// The operations it may call, of those its role admits; nil: all of those.
    public var operations: Set<String>?
    /// Stored with the jobs it enqueues (an `enqueue` token reads its own jobs by it): an
    /// HMAC-SHA256 of the token under the newest fingerprint key, 32 hex digits.
    public var fingerprint: String
    /// Every fingerprint its jobs may carry: under each fingerprint key, newest first, then the
    /// unkeyed one that Baton stored before fingerprints were keyed.
    public var fingerprints: [String]

    /// Whether it may see and act on `queue`.
    public func serves(_ queue: String) -> Bool { queues?.contains(queue) ?? true }

    /// Whether a job enqueued with `fingerprint` is its own.
    public func owns(_ fingerprint: String?) -> Bool { fingerprint.map(fingerprints.contains) ?? false }
}

/// The bearer tokens the control plane accepts, each with a name, a role and, optionally, the
/// queues and operations it is limited to.
///
/// Tokens are compared by their SHA-256 digests, every configured token each time and without an
/// early exit, so the time taken says nothing about how close a guess was. The secrets themselves
/// are not kept.
public struct APITokens: Sendable {
    public struct Token: Sendable {
        public var name: String
        public var role: Role
        public var queues: Set<String>?
        public var operations: Set<String>?
        var digest: [UInt8]

        public init(
            name: String, role: Role, secret: String, queues: Set<String>? = nil, operations: Set<String>? = nil
        ) {
            self.name = name
            self.role = role
            self.queues = queues
            self.operations = operations
            digest = Array(SHA256.hash(data: Data(secret.utf8)))
        }
    }

    public let tokens: [Token]

    public init(_ tokens: [Token]) {
        self.tokens = tokens
    }

    /// Unnamed tokens, named by role and place: `admin-1`, `enqueue-2`…
    public init(_ tokens: [(role: Role, token: String)]) {
        self.init(
            tokens.enumerated().map { index, item in
                Token(name: "\(item.role.rawValue)-\(index + 1)", role: item.role, secret: item.token)
            })
    }

    /// Parses `role:token,role:token` (roles: admin, enqueue, read), the environment's form: its
    /// tokens are named by role and place (`admin-1`, `read-2`) and limited to nothing. Names and
    /// scopes come from a token file (``load(file:)``). Tokens are at least 16 characters.
    public static func parse(_ text: String) throws -> APITokens {
        var tokens: [(role: Role, token: String)] = []
        for (index, item) in text.split(separator: ",", omittingEmptySubsequences: true).enumerated() {
            let item = item.trimmingCharacters(in: .whitespaces)
            guard let colon = item.firstIndex(of: ":") else {
                throw ConfigurationError("token \(index + 1) has no role: write role:token")
            }
            let roleName = String(item[..<colon])
            guard let role = Role(rawValue: roleName) else {
                throw ConfigurationError(
                    "token \(index + 1) has role \"\(roleName)\"; roles are admin, enqueue, read")
            }
            let token = String(item[item.index(after: colon)...])
            guard token.count >= 16 else {
                throw ConfigurationError("token \(index + 1) is shorter than 16 characters")
            }
            tokens.append((role, token))
        }
        guard !tokens.isEmpty else { throw ConfigurationError("no tokens in the list") }
        return APITokens(tokens)
    }

    /// `BATON_API_TOKENS` (`role:token,…`), else `BATON_API_TOKEN` (one admin token), else nil.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        throws -> APITokens?
    {
        if let list = environment["BATON_API_TOKENS"], !list.isEmpty { return try parse(list) }
        if let token = environment["BATON_API_TOKEN"], !token.isEmpty {
            guard token.count >= 16 else { throw ConfigurationError("BATON_API_TOKEN is shorter than 16 characters") }
            return APITokens([(.admin, token)])
        }
        return nil
    }

    /// Reads a token file: one token per line, `name role[:queue,…] secret [only=operation,…]`;
    /// `#` starts a comment. Refused, with `FILE:LINE: problem`, for a line that is not of that
    /// form, a name given twice, a secret given twice, a scope naming no queue or an invalid
    /// queue name, an operation the role does not admit, or a file without tokens.
    ///
    /// ```
    /// # name    role[:queues]            secret                                    [only=operations]
    /// billing   enqueue:billing,reports  9f2c4e1b7a0d5e8f3c6b2a1d4e7f0a9b
    /// grafana   read                     5b8e1f4a7c0d3e6f9a2b5c8d1e4f7a0b
    /// oncall    admin                    0a3d6f9c2e5b8a1d4f7c0e3b6a9d2f5c          only=getJob,listJobs,cancelJob,retryJob
    /// ```
    public static func load(file path: String) throws -> APITokens {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigurationError("\(path): cannot be read (\((error as NSError).localizedDescription))")
        }
        return try parse(file: text, named: path)
    }

    static func parse(file text: String, named path: String) throws -> APITokens {
        var tokens: [Token] = []
        var names: [String: Int] = [:]
        var secrets: [[UInt8]: Int] = [:]
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            func refuse(_ problem: String) -> ConfigurationError { ConfigurationError("\(path):\(number): \(problem)") }
            let line = rawLine.prefix { $0 != "#" }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
            if fields.isEmpty { continue }
            guard (3...4).contains(fields.count) else {
                throw refuse("expected `name role[:queue,…] secret [only=operation,…]`, found \(fields.count) fields")
            }
            let name = fields[0]
            guard name.count <= 64,
                name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) })
            else { throw refuse("the name \"\(name)\" is not 1 to 64 letters, digits, `.`, `_` or `-`") }
            if let earlier = names[name] { throw refuse("the name \"\(name)\" is given on line \(earlier) too") }
            let roleField = fields[1].split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard let role = Role(rawValue: String(roleField[0])) else {
                throw refuse("the role \"\(roleField[0])\" is not admin, enqueue or read")
            }
            var queues: Set<String>?
            if roleField.count == 2 {
                let listed = roleField[1].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                guard !listed.contains(where: \.isEmpty) else {
                    throw refuse("the scope \"\(roleField[1])\" names no queue: write \(role.rawValue):queue,queue")
                }
                for queue in listed {
                    do {
                        try ChainDefinition.checkName(queue, path: "queue", what: "queue")
                    } catch {
                        throw refuse("the queue \"\(queue)\" is not a valid queue name")
                    }
                }
                queues = Set(listed)
            }
            let secret = fields[2]
            guard secret.count >= 16 else { throw refuse("the secret of \"\(name)\" is shorter than 16 characters") }
            var operations: Set<String>?
            if fields.count == 4 {
                guard fields[3].hasPrefix("only="), fields[3].count > 5 else {
                    throw refuse("the fourth field is `only=operation,…`, found \"\(fields[3])\"")
                }
                let listed = fields[3].dropFirst(5).split(separator: ",", omittingEmptySubsequences: false)
                for operation in listed {
                    guard let declared = APIDocument.shared.operations[String(operation)] else {
                        throw refuse("\"\(operation)\" is not an operation of the API (see /openapi.json)")
                    }
                    guard declared.roles.contains(role) else {
                        throw refuse("the \(role.rawValue) role does not admit \"\(operation)\"")
                    }
                }
                operations = Set(listed.map(String.init))
            }
            let token = Token(name: name, role: role, secret: secret, queues: queues, operations: operations)
            if let earlier = secrets[token.digest] {
                throw refuse("the secret of \"\(name)\" is the secret of line \(earlier) too")
            }
            names[name] = number
            secrets[token.digest] = number
            tokens.append(token)
        }
        guard !tokens.isEmpty else { throw ConfigurationError("\(path): holds no tokens") }
        return APITokens(tokens)
    }

    /// A fresh random admin token (32 bytes, hex).
    public static func generateToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return hex((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// Where in ``tokens`` the token a bearer token is lies, or nil. Every token is compared,
    /// each in constant time.
    func index(secret: Substring) -> Int? {
        let digest = Array(SHA256.hash(data: Data(secret.utf8)))
        var match: Int?
        for (index, token) in tokens.enumerated() {
            var difference: UInt8 = 0
            for (a, b) in zip(token.digest, digest) { difference |= a ^ b }
            if difference == 0 { match = index }
        }
        return match
    }

    /// The caller a bearer token identifies, its fingerprints made with `keys` (newest first).
    public func caller(token secret: Substring, keys: FingerprintKeys = .none) -> Caller? {
        index(secret: secret).map { keys.caller(tokens[$0]) }
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}

/// The keys of token fingerprints: HMAC-SHA256 keys, newest first. A job stores its token's
/// fingerprint under the newest key; a caller owns the jobs stored under any of them.
///
/// The server's keys are `api.fingerprint-keys` (kept out of the database), then the database's
/// own `api-fingerprint` key (made by the migration, so that fingerprints are keyed with no
/// setting at all). To rotate: put the new key first and keep the old one after it for as long
/// as jobs fingerprinted with it are retained; dropping a key orphans only those jobs' reads by
/// `enqueue` tokens (admin and read tokens see them regardless).
public struct FingerprintKeys: Sendable, Hashable {
    public var keys: [[UInt8]]

    public init(_ keys: [[UInt8]]) {
        self.keys = keys
    }

    /// No key: fingerprints are unkeyed SHA-256 (what Baton stored before keys; tests only).
    public static let none = FingerprintKeys([])

    func caller(_ token: APITokens.Token) -> Caller {
        var fingerprints = keys.map { key in
            APITokens.hex(HMAC<SHA256>.authenticationCode(for: token.digest, using: SymmetricKey(data: key)).prefix(16))
        }
        fingerprints.append(APITokens.hex(token.digest.prefix(8)))
        return Caller(
            name: token.name, role: token.role, queues: token.queues, operations: token.operations,
            fingerprint: fingerprints[0], fingerprints: fingerprints)
    }
}
