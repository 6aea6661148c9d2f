import Baton
import Crypto
import Foundation
import Synchronization

/// A job's chain as read back from its row.
enum StoredChain {
    /// Chains decoded lately, by their stored text: the jobs of a queue mostly share one (their
    /// input is apart), and decoding one, a parse and `Codable`, was a large part of a worker's CPU
    /// per claimed job (docs/benchmarks.md#chains-decoded-once). At most `cacheLimit` bytes of text;
    /// when full it starts again, so jobs whose chains all differ pay only a look-up.
    private static let decoded = Mutex<(chains: [String: [StageSpec]], bytes: Int)>(([:], 0))
    static let cacheLimit = 1 << 20
    /// The text the cache holds now, in bytes.
    static var cachedBytes: Int { decoded.withLock { $0.bytes } }

    /// The stages, or, when the text does not decode to a chain reaching `stage` (written around the
    /// Swift API: by hand, in SQL), stand-ins that never retry and the reason: such a job fails
    /// alone instead of failing the claim or the rescue it is part of.
    static func decode(_ text: String, stage: Int) -> (chain: [StageSpec], invalid: String?) {
        if let chain = decoded.withLock({ $0.chains[text] }), chain.indices.contains(stage) {
            return (chain, nil)
        }
        if let chain = try? JSONValue(parsing: text).decode(as: [StageSpec].self), chain.indices.contains(stage) {
            decoded.withLock { cache in
                if cache.bytes + text.utf8.count > cacheLimit { cache = ([:], 0) }
                if cache.chains.updateValue(chain, forKey: text) == nil { cache.bytes += text.utf8.count }
            }
            return (chain, nil)
        }
        return (
            Array(repeating: .task("invalid", retry: .none), count: stage + 1),
            "the chain stored with this job does not decode as Baton stages"
        )
    }
}
