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

/// Who made a request: the role of the token presented and a fingerprint of it.
public struct Caller: Sendable, Hashable {
    public var role: Role
    /// The first 16 hex digits of the token's SHA-256: stored with the jobs it enqueues, so that an
    /// `enqueue` token reads its own jobs without the token itself being stored.
    public var fingerprint: String
}

/// The bearer tokens the control plane accepts.
///
/// Tokens are compared by their SHA-256 digests, every configured token each time and without an
/// early exit, so the time taken says nothing about how close a guess was.
public struct APITokens: Sendable {
    struct Entry: Sendable {
        var role: Role
        var digest: [UInt8]
        var fingerprint: String
    }

    let entries: [Entry]

    public init(_ tokens: [(role: Role, token: String)]) {
        entries = tokens.map { role, token in
            let digest = Array(SHA256.hash(data: Data(token.utf8)))
            return Entry(role: role, digest: digest, fingerprint: Self.hex(digest.prefix(8)))
        }
    }

    /// Parses `role:token,role:token` (roles: admin, enqueue, read). Tokens are at least 16
    /// characters: a fingerprint of each is stored with the jobs it enqueues, and a short token
    /// could be found from it by brute force.
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

    /// A fresh random admin token (32 bytes, hex).
    public static func generateToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return hex((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The caller a bearer token identifies, or nil.
    public func caller(token: Substring) -> Caller? {
        let digest = Array(SHA256.hash(data: Data(token.utf8)))
        var match: Entry?
        for entry in entries {
            var difference: UInt8 = 0
            for (a, b) in zip(entry.digest, digest) { difference |= a ^ b }
            if difference == 0 { match = entry }
        }
        return match.map { Caller(role: $0.role, fingerprint: $0.fingerprint) }
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}
