import Crypto
import Foundation
import Synchronization

/// One-time tokens that let a third party deliver one signal to one job without an API token: a
/// payment provider calls back `…/v1/jobs/42/signals/payment-confirmed?token=…`.
///
/// A token is the HMAC-SHA256 of the job's id and the signal's name under a key the migration
/// made in the database (`keys`), so every worker (which writes tokens into callback URLs) and every
/// server (which checks them) agrees without a token being stored anywhere. It delivers that
/// signal to that job and nothing else; once the signal is delivered, a repeat changes nothing.
/// Anyone who can read the `keys` table can make tokens, as anyone who can write `jobs` can
/// change jobs.
package final class SignalTokens: Sendable {
    package let store: Store
    /// The key's bytes (`SymmetricKey` is not `Sendable`).
    private let key = Mutex<[UInt8]?>(nil)

    package init(store: Store) {
        self.store = store
    }

    /// The token for signal `signal` of job `job`: 43 URL-safe characters.
    package func token(job: Int64, signal: String) async throws -> String {
        Self.encode(HMAC<SHA256>.authenticationCode(for: Self.message(job, signal), using: try await symmetricKey()))
    }

    /// Whether `token` is the one for signal `signal` of job `job` (compared in constant time).
    package func verify(_ token: String, job: Int64, signal: String) async throws -> Bool {
        guard let code = Self.decode(token) else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(
            code, authenticating: Self.message(job, signal), using: try await symmetricKey())
    }

    /// Read once per process.
    private func symmetricKey() async throws -> SymmetricKey {
        if let known = key.withLock({ $0 }) { return SymmetricKey(data: known) }
        let read = try await store.key("signal-token")
        key.withLock { $0 = read }
        return SymmetricKey(data: read)
    }

    private static func message(_ job: Int64, _ signal: String) -> Data {
        Data("baton-signal:\(job):\(signal)".utf8)
    }

    private static func encode(_ code: some Sequence<UInt8>) -> String {
        Data(code).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    private static func decode(_ token: String) -> Data? {
        guard token.count == 43 else { return nil }
        let standard = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") + "="
        return Data(base64Encoded: standard)
    }
}
