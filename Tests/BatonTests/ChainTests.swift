import Baton
import Foundation
import Testing

struct Order: Codable, Sendable, Equatable {
    var id: Int
    var total: Double
}

struct Invoice: Codable, Sendable, Equatable {
    var order: Int
    var text: String
}

struct Render: BatonTask {
    var template: String
    func run(_ input: Order, context: StageContext) async throws -> Invoice {
        Invoice(order: input.id, text: "\(template) \(input.total)")
    }
}

struct Deliver: BatonTask {
    static var name: String { "deliver" }
    func run(_ input: Invoice, context: StageContext) async throws -> Bool { true }
}

struct ChainTests {
    @Test func theBuilderRecordsEachStageWithItsArgsLaneAndPolicy() throws {
        let chain = Chain(input: Order(id: 7, total: 9.5))
            .then(Render(template: "invoice"), name: "render")
            .then(Deliver(), lane: "customer-7")
            .retry(.exponential(initial: .seconds(1), max: .seconds(60), attempts: 8))
            .timeout(.seconds(5))
        let definition = try chain.definition()
        #expect(definition.input == ["id": 7, "total": 9.5])
        #expect(definition.stages.count == 2)
        #expect(definition.stages[0].name == "render")
        #expect(definition.stages[0].task?.task == "Render")
        #expect(definition.stages[0].task?.args == ["template": "invoice"])
        #expect(definition.stages[0].task?.retry == .default)
        #expect(definition.stages[1].lane == "customer-7")
        #expect(definition.stages[1].task?.retry.maxAttempts == 8)
        #expect(definition.stages[1].task?.timeout == .seconds(5))
    }

    @Test func aGroupHasOneMemberPerTaskAndItsOutputIsAnArray() throws {
        let chain: Chain<[Invoice]> = Chain(input: Order(id: 1, total: 1))
            .group([Render(template: "a"), Render(template: "b")], name: "both", lane: { $0 == 1 ? "l" : nil })
        let definition = try chain.definition()
        guard case .group(let members) = definition.stages[0].body else {
            Issue.record("not a group")
            return
        }
        #expect(members.map(\.task?.args) == [["template": "a"], ["template": "b"]])
        #expect(members.map(\.lane) == [nil, "l"])
    }

    /// Members built as sub-chains: each starts from the group's input type and ends with the
    /// same type (the compiler checks both); one of a single stage is stored as that stage.
    @Test func aGroupOfSubChainsStoresEachMembersStages() throws {
        let chain: Chain<[Bool]> = Chain(input: Order(id: 1, total: 1))
            .group(
                name: "both",
                [
                    { $0.then(Render(template: "a")).then(Deliver(), lane: "customer-1") },
                    { $0.then(Render(template: "b")).then(Deliver()) },
                ])
        let definition = try chain.definition()
        guard case .group(let members) = definition.stages[0].body, case .chain(let first) = members[0].body else {
            Issue.record("not a group of sub-chains")
            return
        }
        #expect(first.map(\.task?.task) == ["Render", "deliver"])
        #expect(first.map(\.lane) == [nil, "customer-1"])
        let stored = definition.stages[0].json["group"]?.arrayValue?[0]["stages"]?.arrayValue?[1]
        #expect(stored?["lane"] == "customer-1")

        let single: Chain<[Invoice]> = Chain(input: Order(id: 1, total: 1)).group([{ $0.then(Render(template: "a")) }])
        #expect(try single.definition().stages[0].json == ["group": [["task": "Render", "args": ["template": "a"]]]])
    }

    /// A map over the output before it: its runs are typed from the array's element to one result
    /// type; its JSON form names the path as a template; the chain says it uses `map`.
    @Test func aMapRunsASubChainPerElement() throws {
        let chain: Chain<[Bool]> = Chain(input: [Order(id: 1, total: 1), Order(id: 2, total: 2)])
            .map(name: "each") { $0.then(Render(template: "a")).then(Deliver(), lane: "d") }
        let definition = try chain.definition()
        #expect(
            definition.stages[0].json
                == [
                    "name": "each", "map": "{{output}}",
                    "stages": [["task": "Render", "args": ["template": "a"]], ["task": "deliver", "lane": "d"]],
                ])
        #expect(definition.features == ["map"])
        let nested = ChainDefinition(stages: [.map([.group([.chain([.task("a")])])])])
        #expect(nested.features == ["map", "sub-chain"])
        let stored = try JSONValue(parsing: #"{"map": "{{ output.items }}", "stages": [{"task": "a"}]}"#)
        #expect(try stored.decode(as: StageSpec.self) == .map(over: "output.items", [.task("a")]))

        let map = MapStage(over: "output.items", stages: [.task("a")])
        #expect(try map.elements(of: ["items": [1, "x"]]).get() == [1, "x"])
        for (input, found) in [(["items": 7], "a number"), (["other": []], "nothing is there")] as [(JSONValue, String)]
        {
            guard case .failure(let error) = map.elements(of: input) else {
                Issue.record("\(input) mapped")
                continue
            }
            #expect(error.message.contains("map over output.items: \(found)"), "\(error.message)")
        }
    }

    /// A map over an array in the output before it, named by a key path: the compiler checks the
    /// element type; the stored map reads the path its stored properties name. A key path through
    /// anything else is refused at enqueue, naming it.
    @Test func aMapOverAKeyPathReadsThePathItsPropertiesName() throws {
        struct Shipment: Codable, Sendable {
            var batch: Batch
            var firstOrders: [Order] { Array(batch.orders.prefix(1)) }
        }
        struct Batch: Codable, Sendable { var orders: [Order] }
        let shipment = Shipment(batch: Batch(orders: [Order(id: 1, total: 1)]))
        let mapped: Chain<[Invoice]> = Chain(input: shipment)
            .map(\.batch.orders, concurrency: 2) { $0.then(Render(template: "a")) }
        #expect(
            try mapped.definition().stages[0].map
                == MapStage(
                    over: "output.batch.orders", stages: [.task("Render", args: ["template": "a"])], concurrency: 2))
        let collected: Chain<MapResults<Invoice>> = Chain(input: shipment)
            .mapCollectingFailures(\.batch.orders, stopAfter: 3) { $0.then(Render(template: "a")) }
        #expect(try collected.definition().stages[0].map?.failures == .continue(stopAfter: 3))
        let orders: Chain<[Order]> = Chain(input: [Order(id: 1, total: 1)])
        #expect(try orders.map(\.self) { $0.then(Render(template: "a")) }.definition().stages[0].map?.path == "output")

        let computed = Chain(input: shipment).map(\.firstOrders) { $0.then(Render(template: "a")) }
        #expect {
            try computed.definition()
        } throws: { error in
            "\(error)".contains("map over \\Shipment.<computed")
        }
    }

    /// A map's failure policy: stored as the schema's functions read it, read back the same;
    /// `stop_after` alone means `continue`; a policy that cannot be is refused naming its field.
    @Test func aMapsFailurePolicyIsStoredAndRead() throws {
        let going = StageSpec.map(concurrency: 2, failures: .continue(stopAfter: 3), [.task("a")])
        #expect(
            going.json == [
                "map": "{{output}}", "stages": [["task": "a"]], "concurrency": 2, "failures": "continue",
                "stop_after": 3,
            ])
        #expect(try going.json.decode(as: StageSpec.self) == going)
        #expect(ChainDefinition(stages: [going]).features == ["map", "map-failures"])
        #expect(StageSpec.map([.task("a")]).json == ["map": "{{output}}", "stages": [["task": "a"]]])
        #expect(try MapStage.failures(nil, stopAfter: 2, at: "s") == .continue(stopAfter: 2))
        #expect(try MapStage.failures("all", stopAfter: nil, at: "s") == .failTheMap)
        #expect(throws: BatonError.self) { try MapStage.failures("all", stopAfter: 2, at: "s") }
        #expect(throws: BatonError.self) { try MapStage.failures("some", stopAfter: nil, at: "s") }
        #expect(throws: BatonError.self) { try MapStage.failures("continue", stopAfter: 0, at: "s") }
        #expect(throws: BatonError.self) {
            try ChainDefinition(stages: [.map(failures: .continue(stopAfter: 0), [.task("a")])]).validate()
        }
    }

    @Test func theStoredFormRoundTrips() throws {
        let stages: [StageSpec] = [
            .task(
                "http", args: ["url": "https://example.com"], name: "call", lane: "x",
                retry: .linear(initial: .milliseconds(250), max: .seconds(5), jitter: 0.25, attempts: 4),
                timeout: .milliseconds(1500)),
            .group([.task("noop"), .group([.task("sleep", args: ["ms": 5])])], name: "fan"),
            .group([
                .chain([.task("a", lane: "l"), .group([.task("b")]), .awaitSignal("go")], name: "sub"), .task("c"),
            ]),
        ]
        let text = try JSONValue(encoding: stages).jsonText
        #expect(try JSONValue(parsing: text).decode(as: [StageSpec].self) == stages)
    }

    @Test func aMinimalStoredStageGetsTheDefaults() throws {
        let stage = try JSONValue(parsing: #"{"task":"noop"}"#).decode(as: StageSpec.self)
        #expect(stage.task == TaskStage(task: "noop"))
    }

    @Test(arguments: [
        (ChainDefinition(stages: []), "stages"),
        (ChainDefinition(stages: [.group([])]), "stages[0].group"),
        (ChainDefinition(stages: [.task("")]), "stages[0].task"),
        (ChainDefinition(stages: [.task("a", lane: "")]), "stages[0].lane"),
        (ChainDefinition(stages: [.task("a", lane: String(repeating: "x", count: 201))]), "stages[0].lane"),
        (ChainDefinition(stages: [.task("a", lane: "a\u{0}b")]), "stages[0].lane"),
        (
            ChainDefinition(stages: [.task("a", retry: RetryPolicy(maxAttempts: 0, backoff: .constant(.zero)))]),
            "stages[0].max_attempts"
        ),
        (ChainDefinition(stages: [.task("a", timeout: .zero)]), "stages[0].timeout"),
        (ChainDefinition(stages: [.task("a", name: "n"), .task("b", name: "n")]), "stages[1].name"),
        (ChainDefinition(stages: Array(repeating: .task("a"), count: 101)), "stages"),
        (
            ChainDefinition(stages: [.task("a"), .group([.task("b"), .group([.task("")])])]),
            "stages[1].group[1].group[0].task"
        ),
        (ChainDefinition(stages: [.chain([.task("a")])]), "stages[0].stages"),
        (ChainDefinition(stages: [.group([.chain([])])]), "stages[0].group[0].stages"),
        (ChainDefinition(stages: [.group([.chain([.task("a"), .task("")])])]), "stages[0].group[0].stages[1].task"),
        (
            ChainDefinition(stages: [
                .task("a", name: "end"),
                .group([.chain([.task("a", next: [FlowRule(if: .truthy("output"), .goto("end"))]), .task("b")])]),
            ]),
            "stages[1].group[0].stages[0].next[0].goto"
        ),
        (
            ChainDefinition(stages: [.group([.chain([.awaitSignal("s"), .awaitSignal("s")])])]),
            "stages[0].group[0].stages[1].await"
        ),
        (ChainDefinition(stages: [.map([])]), "stages[0].stages"),
        (ChainDefinition(stages: [.map(over: "items", [.task("a")])]), "stages[0].map"),
        (ChainDefinition(stages: [.map(over: "output.a b", [.task("a")])]), "stages[0].map"),
        (ChainDefinition(stages: [.map([.task("a"), .task("")])]), "stages[0].stages[1].task"),
        (ChainDefinition(stages: [.map(concurrency: 0, [.task("a")])]), "stages[0].concurrency"),
    ])
    func invalidChainsAreRefusedWithThePathOfTheFault(definition: ChainDefinition, path: String) {
        #expect {
            try definition.validate()
        } throws: { error in
            guard case BatonError.invalidChain(let at, _) = error else { return false }
            return at == path
        }
    }

    @Test func anInputThatDoesNotEncodeIsReportedAtEnqueueTime() {
        let chain = Chain(input: Double.nan).then(Nothing())
        #expect(throws: BatonError.self) { try chain.definition() }
    }
}

struct Nothing: BatonTask {
    func run(_ input: Double, context: StageContext) async throws -> Double { input }
}

struct DurationFormatTests {
    @Test(arguments: [
        ("250ms", 250), ("30s", 30_000), ("10m", 600_000), ("2h", 7_200_000), ("1d", 86_400_000), ("1.5s", 1500),
        ("5", 5000), ("0s", 0), ("0.0005s", 1), ("1.25ms", 1), ("99999999d", 8_639_999_913_600_000),
        ("1.999999d", 172_799_914),
    ])
    func parses(text: String, milliseconds: Int64) {
        #expect(DurationFormat.parse(text)?.milliseconds == milliseconds)
    }

    /// Exactly what the OpenAPI document's `Duration` pattern refuses.
    @Test(arguments: [
        "", "s", "-1s", "1e3s", "10 parsecs", "1x", "nan", "inf", "99999999999999999999s", "123456789s", " 30s",
        "30s ", "1.", ".5s", "1.1234567s", "+1s", "1,5s", "٣s",
    ])
    func refuses(text: String) {
        #expect(DurationFormat.parse(text) == nil)
    }

    @Test func formatsTheShortestExactForm() {
        #expect(DurationFormat.format(.milliseconds(1500)) == "1500ms")
        #expect(DurationFormat.format(.seconds(30)) == "30s")
        #expect(DurationFormat.format(.seconds(600)) == "10m")
        #expect(DurationFormat.format(.seconds(7200)) == "2h")
        #expect(DurationFormat.format(.seconds(86400 * 3)) == "3d")
        #expect(DurationFormat.format(.milliseconds(207_189_100)) == "207189.1s", "over 8 digits of ms")
        #expect(DurationFormat.format(.milliseconds(250)) == "250ms")
    }
}

struct JSONValueTests {
    @Test func parsesAndPrintsEveryKind() throws {
        let value = try JSONValue(parsing: #"{"a":[1,2.5,"x",true,null],"b":{}}"#)
        #expect(value == ["a": [1, 2.5, "x", true, nil], "b": [:]])
        #expect(value.jsonText == #"{"a":[1,2.5,"x",true,null],"b":{}}"#)
    }

    @Test func bareValuesAreJSONToo() throws {
        #expect(try JSONValue(parsing: "42") == 42)
        #expect(try JSONValue(parsing: "\"s\"") == "s")
    }
}
