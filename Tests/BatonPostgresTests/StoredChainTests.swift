import Baton
import Testing

@testable import BatonPostgres

/// Chains read back from rows are decoded once per text: what comes back must be the chain that
/// text holds, whatever was decoded before it.
@Suite struct StoredChainTests {
    @Test func aChainReadAgainIsTheSameAndTheCacheStaysWithinItsLimit() {
        let chain: [StageSpec] = [.task("a", args: ["n": 1]), .task("b", lane: "l")]
        let text = JSONValue.array(chain.map(\.json)).jsonText
        #expect(StoredChain.decode(text, stage: 1).chain == chain)
        #expect(StoredChain.decode(text, stage: 1).invalid == nil)
        // A stage past the end is refused, cached or not.
        #expect(StoredChain.decode(text, stage: 2).invalid != nil)
        #expect(StoredChain.decode("[1]", stage: 0).invalid != nil)
        #expect(StoredChain.decode("[1]", stage: 0).invalid != nil)

        // Chains that all differ, 2 MB of them: each decodes to itself, and the cache starts again
        // rather than growing past its limit.
        for n in 0..<2_000 {
            let chain: [StageSpec] = [
                .task("a", args: ["pad": .string(String(repeating: "x", count: 1_000)), "n": .number(JSONNumber(n))])
            ]
            #expect(StoredChain.decode(JSONValue.array(chain.map(\.json)).jsonText, stage: 0).chain == chain)
        }
        #expect(StoredChain.cachedBytes <= StoredChain.cacheLimit)
        #expect(StoredChain.decode(text, stage: 1).chain == chain)
    }
}
