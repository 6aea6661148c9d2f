import AsyncHTTPClient
import Baton
import Foundation
import NIOCore
import Synchronization

/// Enqueues jobs over the HTTP API at a steady rate, as a service in another language would: each
/// job with an idempotency key of its own, sent again until the API takes it. So a job is neither
/// lost nor enqueued twice while the API or the database is away, and what was enqueued is known.
final class Producer: Sendable {
    let base: String
    let token: String
    let run = "rel-" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
    private let state = Mutex(State())

    struct State {
        var ids: Set<Int64> = []
        /// Idempotency keys (by number) per id acknowledged: two for one id is an id given to two
        /// jobs (a key sent again gets its own id back, which is one).
        var keys: [Int64: Set<Int>] = [:]
        var next = 0
        /// Answers other than 2xx, and requests that got no answer.
        var refusals = 0
        /// Jobs given up on (never acknowledged before the producer stopped retrying).
        var unconfirmed = 0
        var lastAccepted: ContinuousClock.Instant?
        var stopped = false
    }

    init(base: String, token: String) {
        self.base = base
        self.token = token
    }

    var ids: Set<Int64> { state.withLock { $0.ids } }
    var refusals: Int { state.withLock { $0.refusals } }
    var unconfirmed: Int { state.withLock { $0.unconfirmed } }
    var lastAccepted: ContinuousClock.Instant? { state.withLock { $0.lastAccepted } }
    /// Ids acknowledged for more than one job.
    var reusedIDs: [Int64] { state.withLock { $0.keys.filter { $0.value.count > 1 }.map(\.key) } }

    /// Ends `produce` early (requests in flight still finish).
    func stop() { state.withLock { $0.stopped = true } }

    /// Offers `rate` jobs a second for `duration`, at most 64 requests in flight (so when the API
    /// stalls, the offered rate falls rather than the requests piling up).
    func produce(rate: Double, for duration: Duration, job: @escaping @Sendable (Int) -> JSONValue) async {
        let start = ContinuousClock.now
        let total = Int(rate * duration.seconds)
        await withTaskGroup(of: Void.self) { group in
            var inFlight = 0
            for index in 0..<total {
                try? await Task.sleep(until: start + .seconds(Double(index) / rate))
                if state.withLock({ $0.stopped }) { break }
                if inFlight >= 64 {
                    await group.next()
                    inFlight -= 1
                }
                let number = state.withLock { state in
                    defer { state.next += 1 }
                    return state.next
                }
                group.addTask { await self.enqueue(number, job(number)) }
                inFlight += 1
            }
        }
    }

    /// Sends one job until the API takes it, or gives up after two minutes.
    private func enqueue(_ number: Int, _ job: JSONValue) async {
        let deadline = ContinuousClock.now + .seconds(120)
        var request = HTTPClientRequest(url: base + "/v1/jobs")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Idempotency-Key", value: "\(run)-\(number)")
        request.body = .bytes(ByteBuffer(string: job.jsonText))
        while ContinuousClock.now < deadline {
            do {
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
                let body = try await response.body.collect(upTo: 1 << 20)
                if (200..<300).contains(response.status.code),
                    let id = try JSONValue(parsing: body.readableBytesView)["id"]?.numberValue?.integer(as: Int64.self)
                {
                    state.withLock { state in
                        state.ids.insert(id)
                        state.keys[id, default: []].insert(number)
                        state.lastAccepted = .now
                    }
                    return
                }
            } catch {}
            state.withLock { $0.refusals += 1 }
            try? await Task.sleep(for: .milliseconds(100))
        }
        state.withLock { $0.unconfirmed += 1 }
    }
}

/// The jobs the scenarios enqueue, all running `record` (the workers' task that writes each run to
/// the ledger).
enum Chains {
    /// One `record` stage: sleeps `ms` (a range), fails `failPercent` of its runs.
    static func record(
        lane: String? = nil, ms: ClosedRange<Int> = 5...25, failPercent: Int = 2, attempts: Int = 25
    ) -> JSONValue {
        var stage: [String: JSONValue] = [
            "task": "record", "max_attempts": .number(attempts),
            "backoff": ["kind": "constant", "initial": "50ms"],
            "args": [
                "min_ms": .number(ms.lowerBound), "max_ms": .number(ms.upperBound),
                "fail_percent": .number(failPercent),
            ],
        ]
        if let lane { stage["lane"] = .string(lane) }
        return .object(stage)
    }

    /// A third each of `[background]`, `[background → ordered]` and `[ordered → background]`, the
    /// ordered stages spread over `lanes` lanes.
    static func mixed(_ number: Int, lanes: Int = 20) -> JSONValue {
        let lane = "lane-\(number % lanes)"
        let stages: [JSONValue] =
            switch number % 3 {
            case 0: [record()]
            case 1: [record(), record(lane: lane)]
            default: [record(lane: lane), record()]
            }
        return ["input": .number(number), "stages": .array(stages)]
    }
}

enum HTTP {
    /// The status of a GET, nil if there was no answer.
    static func status(_ url: String, token: String?) async -> Int? {
        var request = HTTPClientRequest(url: url)
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        guard let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(5)) else { return nil }
        _ = try? await response.body.collect(upTo: 1 << 20)
        return Int(response.status.code)
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
