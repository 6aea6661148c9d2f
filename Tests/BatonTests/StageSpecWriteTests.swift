import Testing

@testable import Baton

/// The enqueue writes each stage straight to JSON text (`StageSpec.write(into:)`): what it writes
/// reads back as the stage's stored form, ``StageSpec/json``, whatever the stage holds.
@Suite struct StageSpecWriteTests {
    static let stages: [StageSpec] = {
        let retries: [RetryPolicy] = [
            .default, .constant(.zero, attempts: 3), .constant(.milliseconds(1500), jitter: 0.25, attempts: 1),
            .exponential(initial: .milliseconds(7), max: .seconds(90), jitter: 1.0 / 3, attempts: 12),
            .linear(initial: .microseconds(2500), max: .seconds(3), jitter: 1e-9, attempts: 2),
        ]
        let args: [JSONValue] = [
            [:], ["n": 1], ["big": .number(JSONNumber("12345678901234567890.000000000000000001")!)],
            ["nested": ["a": [1, 2.5, "x"], "quote \" and \\ and \n": .null]], ["é ✓ 𝄞": true],
        ]
        var stages: [StageSpec] = []
        for (index, retry) in retries.enumerated() {
            for (other, args) in args.enumerated() {
                let odd = (index + other) % 2 == 1
                stages.append(
                    .task(
                        other == 3 ? "task \"quoted\"" : "send", args: args, name: odd ? "step-\(other)" : nil,
                        lane: odd ? "lane/é" : nil, retry: retry,
                        timeout: other == 2 ? .milliseconds(1234) : TaskStage.defaultTimeout,
                        queue: index == 1 ? "gpu" : nil, rate: index == 2 ? "partner:\(other)" : nil))
            }
        }
        stages.append(.task("again", repeat: RepeatRule(while: .truthy("more"), max: 5)))
        stages.append(.task("branch", next: [FlowRule(if: .equals("kind", "x"), .finish)]))
        stages.append(.group([.task("a"), .task("b", lane: "l")], name: "both"))
        stages.append(.awaitSignal("paid", timeout: .seconds(60), maxAttempts: 2))
        return stages
    }()

    @Test(arguments: stages)
    func whatIsWrittenReadsBackAsTheStoredForm(_ stage: StageSpec) throws {
        var bytes: [UInt8] = []
        stage.write(into: &bytes)
        #expect(try JSONValue(parsing: bytes) == stage.json)
    }
}
