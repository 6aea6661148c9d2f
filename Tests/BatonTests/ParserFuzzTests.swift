import Baton
import BatonHTTPTask
import BatonTestSupport
import Foundation
import PropertyBased
import Testing

/// The parsers that read what callers send, fed thousands of near-valid and random inputs: each
/// either reads the input or refuses it with its own error; none crashes or hangs, and what is read
/// survives a round trip.
@Suite(.timeLimit(.minutes(1)))
struct ParserFuzzTests {
    static let edits = Gen.int(in: 0...(1 << 40)).array(of: 1...8)
    static let corpus: [String] = [
        #"{"input": {"n": 1.5e3, "s": "é\u00e9\n", "a": [true, false, null]}, "stages": [{"task": "noop"}]}"#,
        #"{"stages": [{"name": "a", "task": "http", "args": {"method": "GET", "url": "https://x/{{input.id}}"}}]}"#,
        #"[[[[{"k": [1, -2, 3.25e-2, "x"]}]]]]"#, #""\ud83d\ude00""#, "-0.0", "1e308",
    ]

    @Test func jsonTextIsReadOrRefusedAndWhatIsReadRoundTrips() async {
        await propertyCheck(count: 3000, input: Gen.int(in: 0...(Self.corpus.count - 1)), Self.edits) { index, edits in
            let bytes = Mutations.apply(edits, to: Array(Self.corpus[index].utf8))
            guard let value = try? JSONValue(parsing: bytes) else { return }
            #expect((try? JSONValue(parsing: value.jsonText)) == value)
        }
    }

    @Test func durationsAreReadOrRefusedAndFormatBack() async {
        let text = Gen.element(of: Array("0123456789.msdh -+e∞٣")).map { $0! }.string(of: 0...12)
        await propertyCheck(count: 5000, input: text) { text in
            guard let duration = DurationFormat.parse(text) else { return }
            #expect(duration >= .zero)
            let again = DurationFormat.parse(DurationFormat.format(duration))
            if duration <= .seconds(99_999_999) {
                #expect(again == duration, "\(text)")
            } else {
                // Past three years, to the nearest millionth of a day unless whole minutes.
                #expect(again.map { abs(($0 - duration).milliseconds) <= 44 } == true, "\(text)")
            }
        }
    }

    @Test func templatesAreReadOrRefusedAndRenderOrSayWhy() async {
        let scope: JSONValue = ["input": ["a": [1, ["b": "x"]], "s": "{{input.s}}"], "job": ["id": 7]]
        let text = Gen.element(of: Array("{}{}.. ab_-#>!0123 input.a.s job.id\u{0}é")).map { $0! }.string(of: 0...40)
        await propertyCheck(count: 5000, input: text) { text in
            guard let template = try? Template(parsing: text) else { return }
            do {
                let rendered = try template.render(in: scope)
                // Filling in never fills in twice: a value that looks like a tag stays text.
                if text == "{{input.s}}" { #expect(rendered == "{{input.s}}") }
            } catch {
                #expect(error is TemplateError)
            }
        }
    }

    /// The `http` task's args and stored chains: mutated, then read as the server and the worker
    /// read them.
    @Test func httpArgsAndStoredChainsAreReadOrRefused() async {
        let stored =
            #"[{"task": "http", "args": {"method": "POST", "url": "https://x/{{input.id}}", "json": {"a": "{{input.a}}"}, "expect": {"404": "success"}, "timeout": "5s"}, "lane": "l", "retry": {"max_attempts": 3, "backoff": {"kind": "constant", "initial_ms": 10, "max_ms": 10, "jitter": 0}}, "timeout_ms": 1000}, {"group": [{"task": "noop"}]}]"#
        await propertyCheck(count: 3000, input: Self.edits) { edits in
            let bytes = Mutations.apply(edits, to: Array(stored.utf8))
            guard let value = try? JSONValue(parsing: bytes) else { return }
            if case .array(let stages) = value, let first = stages.first, let args = first["args"] {
                do {
                    let request = try HTTPRequestArgs(args)
                    #expect(!request.method.isEmpty)
                } catch {
                    guard case BatonError.invalidChain = error else {
                        Issue.record("unexpected \(error)")
                        return
                    }
                }
            }
            if let chain = try? value.decode(as: [StageSpec].self), !chain.isEmpty {
                // What decodes, validates or says why; and writes back to the same stages.
                _ = try? ChainDefinition(stages: chain).validate()
                #expect((try? JSONValue(encoding: chain).decode(as: [StageSpec].self)) == chain)
            }
        }
    }
}
