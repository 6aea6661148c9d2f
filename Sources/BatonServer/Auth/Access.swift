import BatonPostgres
import Logging
import Synchronization

/// The tokens the control plane accepts now, and the keys of their fingerprints.
///
/// Tokens from a file (``ServerConfiguration/tokensFile``) are read again on `SIGHUP`: the new set
/// replaces the old between two requests (a request checks its token against one set or the other,
/// never a mix), and a file that does not read keeps the old set, with one log line naming the
/// file's line and its problem. The database's fingerprint key is read on first need and kept.
final class Access: Sendable {
    private struct State {
        var tokens: APITokens
        var databaseKey: [UInt8]?
        /// Each token's caller, in the order of `tokens`, made once the keys are known: its
        /// fingerprints (an HMAC per key, in hex) were a measurable part of the server's time for
        /// one job per request when made for every request
        /// (docs/benchmarks.md#callers-made-for-every-request).
        var callers: [Caller]?
    }

    private let state: Mutex<State>
    private let configuredKeys: [[UInt8]]
    let file: String?
    private let store: Store

    init(configuration: ServerConfiguration, store: Store) {
        state = Mutex(State(tokens: configuration.tokens))
        configuredKeys = configuration.fingerprintKeys
        file = configuration.tokensFile
        self.store = store
    }

    /// The configured keys, then the database's.
    func keys() async throws -> FingerprintKeys {
        if let key = state.withLock({ $0.databaseKey }) { return FingerprintKeys(configuredKeys + [key]) }
        let key = try await store.key("api-fingerprint")
        state.withLock { $0.databaseKey = key }
        return FingerprintKeys(configuredKeys + [key])
    }

    /// The token named `name` as it is configured now, with its caller.
    func token(named name: String) async throws -> (token: APITokens.Token, caller: Caller)? {
        let (tokens, callers) = try await current()
        return tokens.tokens.firstIndex(where: { $0.name == name }).map { (tokens.tokens[$0], callers[$0]) }
    }

    /// The token a bearer token is, with its caller.
    func token(secret: Substring) async throws -> (token: APITokens.Token, caller: Caller)? {
        let (tokens, callers) = try await current()
        return tokens.index(secret: secret).map { (tokens.tokens[$0], callers[$0]) }
    }

    /// The tokens and their callers, one set (a reload replaces both at once).
    private func current() async throws -> (APITokens, [Caller]) {
        if let known = state.withLock({ state in state.callers.map { (state.tokens, $0) } }) { return known }
        let keys = try await keys()
        return state.withLock { state in
            let callers = state.callers ?? state.tokens.tokens.map(keys.caller)
            state.callers = callers
            return (state.tokens, callers)
        }
    }

    /// Reads the token file again: its tokens replace the current ones, unless it does not read.
    func reload(logger: Logger) {
        guard let file else {
            return logger.notice("SIGHUP ignored: the API tokens do not come from a file (api.tokens-file)")
        }
        do {
            let tokens = try APITokens.load(file: file)
            state.withLock {
                $0.tokens = tokens
                $0.callers = nil
            }
            logger.notice(
                "API tokens read again",
                metadata: ["file": .string(file), "tokens": .stringConvertible(tokens.tokens.count)])
        } catch {
            logger.error("API tokens kept as they were: \(error)")
        }
    }
}
