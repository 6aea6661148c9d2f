import Baton
import BatonTestSupport
import BatonWorker
import InMemoryTracing
import Testing
import Tracing

/// Spans through swift-distributed-tracing: with a tracer bootstrapped (here an in-memory one; in
/// production e.g. swift-otel), each enqueue and each attempt at a stage is a span.
@Suite struct TracingTests {
    /// Bootstrapped once for the whole test process; other tests' spans land here too, so each
    /// test looks only at its own job's.
    static let tracer: InMemoryTracer = {
        let tracer = InMemoryTracer()
        InstrumentationSystem.bootstrap(tracer)
        return tracer
    }()

    @Test func eachEnqueueAndEachAttemptAtAStageIsASpan() async throws {
        let tracer = Self.tracer
        try await TestDatabase.with { db async throws in
            // Job ids repeat across the tests' databases: this test's spans are those of its own queue.
            let queue = "traced-\(UInt32.random(in: 0...UInt32.max))"
            var configuration = WorkerConfiguration.test()
            configuration.queues = [queue: 4]
            try await withWorker(db, tasks: testTasks, configuration: configuration) { baton, _ async throws in
                let job = try await baton.enqueue(
                    Chain(input: 2).then(Add(n: 3)).then(
                        Flaky(failures: 1), retry: .constant(.milliseconds(10), attempts: 3)),
                    queue: queue)
                #expect(try await job.result() == 5)
                let ours = { (span: FinishedInMemorySpan) in
                    span.attributes["baton.queue"]?.toSpanAttribute() == .string(queue)
                }
                let enqueue = tracer.finishedSpans.filter { ours($0) && $0.operationName == "baton.enqueue" }
                #expect(enqueue.count == 1)
                #expect(enqueue.first?.kind == .producer)
                #expect(enqueue.first?.attributes["baton.job.id"]?.toSpanAttribute() == .int64(job.id))
                try await eventually("the last attempt's span to end") {
                    tracer.finishedSpans.count(where: ours) == 4
                }
                let stages = tracer.finishedSpans.filter { ours($0) && $0.operationName.hasPrefix("baton.stage") }
                #expect(stages.map(\.operationName) == ["baton.stage Add", "baton.stage Flaky", "baton.stage Flaky"])
                #expect(
                    stages.map { $0.attributes["baton.attempt"]?.toSpanAttribute() } == [
                        .int64(1), .int64(1), .int64(2),
                    ])
                #expect(stages.map { $0.status?.code } == [nil, .error, nil])
                #expect(
                    stages.allSatisfy {
                        $0.kind == .consumer && $0.attributes["baton.job.id"]?.toSpanAttribute() == .int64(job.id)
                    })
            }
        }
    }
}
