import Baton
import Testing

/// `repeat` and `next`: conditions over an output, the JSON forms checked at enqueue, and where
/// `Transition.decide` sends the chain.
struct StageFlowTests {
    let page = StageSpec.task(
        "http", name: "page",
        repeat: RepeatRule(while: .truthy("output.body.next_cursor"), max: 3))
    let lookup = StageSpec.task(
        "http", name: "lookup",
        next: [
            FlowRule(if: .equals("output.status", 404), .goto("create")),
            FlowRule(if: .present("output.body.done", true), .finish),
        ])
    let update = StageSpec.task("update", name: "update")
    let create = StageSpec.task("create", name: "create")
    let laned = StageSpec.task(
        "poll", name: "poll", lane: "l", repeat: RepeatRule(while: .equals("output.state", "running"), max: 5))

    func decide(_ chain: [StageSpec], at stage: Int = 0, runs: Int = 0, output: String) -> Transition {
        Transition.decide(
            chain: chain, stage: stage, runs: runs, attempt: 1, outcome: .succeeded(output: output),
            canHop: { _ in true }, random: 0.5)
    }

    @Test func conditionsReadPathsOfTheOutput() throws {
        let output: JSONValue = ["status": 404, "body": ["next_cursor": "", "items": [["id": 7]], "n": 0.0]]
        #expect(!FlowCondition.truthy("output.body.next_cursor").holds(for: output))
        #expect(FlowCondition.truthy("output.body.items").holds(for: output))
        #expect(FlowCondition.truthy("input.body.items.0.id").holds(for: output))
        #expect(!FlowCondition.truthy("output.body.n").holds(for: output))
        #expect(!FlowCondition.truthy("output.body.missing.deeper").holds(for: output))
        #expect(FlowCondition.equals("output.status", 404.0).holds(for: output))
        #expect(!FlowCondition.equals("output.status", "404").holds(for: output))
        #expect(FlowCondition.equals("output.body.items.0", ["id": 7]).holds(for: output))
        #expect(FlowCondition.present("output.body.next_cursor", true).holds(for: output))
        #expect(FlowCondition.present("output.body.gone", false).holds(for: output))
        #expect(!FlowCondition.present("output", true).holds(for: .null))
    }

    @Test func aRepeatedStageRunsAgainWhileItsConditionHoldsThenGoesOn() {
        let chain = [page, update]
        #expect(
            decide(chain, output: #"{"body":{"next_cursor":"b"}}"#)
                == .hop(output: #"{"body":{"next_cursor":"b"}}"#, to: 0))
        #expect(decide(chain, runs: 1, output: #"{"body":{}}"#) == .hop(output: #"{"body":{}}"#))
        #expect(
            decide([page], runs: 1, output: #"{"body":{"next_cursor":null}}"#)
                == .complete(output: #"{"body":{"next_cursor":null}}"#))
    }

    @Test func reachingTheMaxWithTheConditionHoldingFailsForGood() {
        guard case .discard(let error) = decide([page], runs: 2, output: #"{"body":{"next_cursor":"c"}}"#) else {
            Issue.record("expected a discard")
            return
        }
        #expect(error.code == "repeat_max")
        #expect(error.message.contains("max of 3 runs"))
    }

    @Test func aLanedStageRepeatsThroughItsLane() {
        #expect(
            decide([laned], output: #"{"state":"running"}"#)
                == .advance(output: #"{"state":"running"}"#, lane: "l", to: 0))
        #expect(decide([laned], output: #"{"state":"done"}"#) == .complete(output: #"{"state":"done"}"#))
    }

    @Test func theFirstRuleThatHoldsDecides() {
        let chain = [lookup, update, create]
        #expect(decide(chain, output: #"{"status":404}"#) == .hop(output: #"{"status":404}"#, to: 2))
        #expect(
            decide(chain, output: #"{"status":200,"body":{"done":true}}"#)
                == .complete(output: #"{"status":200,"body":{"done":true}}"#))
        #expect(decide(chain, output: #"{"status":200,"body":{}}"#) == .hop(output: #"{"status":200,"body":{}}"#))
    }

    @Test func theJSONFormRoundTripsThroughTheStoredChain() throws {
        let chain = [page, lookup, update, create]
        for stage in chain {
            let decoded = try JSONValue(parsing: stage.json.jsonText).decode(as: StageSpec.self)
            #expect(decoded == stage)
        }
        try ChainDefinition(stages: chain).validate()
    }

    @Test func badRulesAreRefusedWithThePathOfTheField() {
        func refusal(_ stages: [StageSpec]) -> String? {
            do {
                try ChainDefinition(stages: stages).validate()
                return nil
            } catch {
                if case .invalidChain(let path, _) = error { return path }
                return "\(error)"
            }
        }
        let backwards = StageSpec.task("x", name: "back", next: [FlowRule(if: .truthy("output"), .goto("lookup"))])
        #expect(refusal([lookup, update]) == "stages[0].next[0].goto")
        #expect(refusal([lookup, update, create]) == nil)
        #expect(refusal([lookup, backwards, create]) == "stages[1].next[0].goto")
        #expect(
            refusal([lookup, create, .task("x", name: "x", next: [FlowRule(if: .truthy("output"), .goto("x"))])])
                == "stages[2].next[0].goto")
        #expect(
            refusal([StageSpec.task("x", repeat: RepeatRule(while: .truthy("result.x"), max: 2))])
                == "stages[0].repeat.while")
        #expect(
            refusal([StageSpec.task("x", repeat: RepeatRule(while: .truthy("output"), max: 0))])
                == "stages[0].repeat.max")
        #expect(refusal([.group([page])]) == "stages[0].group[0].repeat")

        func reading(_ json: String) -> String? {
            guard let value = try? JSONValue(parsing: json) else { return "unparsed" }
            do {
                _ = try FlowRule(json: value, at: "next[0]")
                return nil
            } catch {
                if case .invalidChain(let path, _) = error { return path }
                return "\(error)"
            }
        }
        #expect(reading(#"{"if": "{{output.ok}}", "finish": true}"#) == nil)
        #expect(reading(#"{"if": "output.ok", "finish": true}"#) == "next[0].if")
        #expect(reading(#"{"if": "{{output..ok}}", "finish": true}"#) == "next[0].if")
        #expect(reading(#"{"if": {"path": "output.ok"}, "finish": true}"#) == "next[0].if")
        #expect(
            reading(#"{"if": {"path": "output.ok", "equals": 1, "present": true}, "finish": true}"#) == "next[0].if")
        #expect(reading(#"{"if": "{{output.ok}}", "finish": true, "goto": "x"}"#) == "next[0]")
        #expect(reading(#"{"if": "{{output.ok}}", "finish": false}"#) == "next[0].finish")
        #expect(reading(#"{"if": "{{output.ok}}"}"#) == "next[0]")
        #expect(reading(#"{"finish": true}"#) == "next[0].if")
        #expect(reading(#"{"if": "{{output.ok}}", "finish": true, "else": 1}"#) == "next[0].else")
    }
}
