import Baton
import BatonAPI
import Benchmark
import Foundation

// Baton reads and writes JSON with its own reader, writer and coders (Sources/Baton/JSON) because
// Foundation's round numbers (see JSONCodingTests.foundationRoundsWhatBatonKeeps). These measure
// what that costs or saves, on what Baton handles most: a 1,000-job batch as `POST /v1/jobs/batch`
// takes it, and a typed task's input and output.

/// A 1,000-job batch with realistic payloads: ids, amounts, strings, nested objects.
let batchText: String = {
    let jobs = (0..<1000).map { index in
        """
        {"queue": "billing", "priority": \(index % 3), "idempotency_key": "order-\(index)",
         "metadata": {"tenant": "acme", "trace": "00-\(index)abcdef-01"},
         "input": {"order": \(9_000_000_000 + index), "amount": \(index).25, "currency": "EUR",
                   "lines": [{"sku": "A-\(index)", "qty": 2, "price": 10.5}, {"sku": "B", "qty": 1, "price": 0.1}]},
         "stages": [{"task": "render", "args": {"template": "invoice"}}, {"task": "deliver", "lane": "customer-\(index % 50)"}]}
        """
    }
    return "{\"jobs\": [" + jobs.joined(separator: ",") + "]}"
}()
let batchBytes = Array(batchText.utf8)
/// One job of that batch, as `POST /v1/jobs` takes it.
let jobText: String = {
    let start = batchText.range(of: "[")!.upperBound
    var depth = 0
    var end = start
    for index in batchText[start...].indices {
        if batchText[index] == "{" { depth += 1 }
        if batchText[index] == "}" {
            depth -= 1
            if depth == 0 { end = batchText.index(after: index); break }
        }
    }
    return String(batchText[start..<end])
}()
let jobBytes = Array(jobText.utf8)
let jobData = Data(jobText.utf8)
let batchData = Data(batchText.utf8)

struct Order: Codable {
    struct Line: Codable {
        var sku: String
        var qty: Int
        var price: Double
    }

    var order: Int64
    var amount: Double
    var currency: String
    var lines: [Line]
}

let order = Order(
    order: 9_000_000_001, amount: 1234.25, currency: "EUR",
    lines: (0..<20).map { Order.Line(sku: "A-\($0)", qty: $0, price: 10.5) })
let orderText = try! JSONValue(encoding: order).jsonText

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal], maxDuration: .seconds(3), maxIterations: 10_000)

    Benchmark("parse a 1,000-job batch: Baton JSONValue") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try! JSONValue(parsing: batchBytes)) }
    }
    Benchmark("parse a 1,000-job batch: Foundation JSONSerialization") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try! JSONSerialization.jsonObject(with: batchData)) }
    }

    let tree = try! JSONValue(parsing: batchBytes)
    let foundationTree = try! JSONSerialization.jsonObject(with: batchData)
    Benchmark("write a 1,000-job batch: Baton JSONValue") { benchmark in
        for _ in benchmark.scaledIterations {
            var bytes: [UInt8] = []
            tree.write(into: &bytes, sortingKeys: false)
            blackHole(bytes)
        }
    }
    Benchmark("write a 1,000-job batch: Foundation JSONSerialization") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try! JSONSerialization.data(withJSONObject: foundationTree)) }
    }

    // What `POST /v1/jobs/batch` does with a body: into the generated request types.
    Benchmark("decode a 1,000-job batch into the generated types: Baton decoder") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try! JSONValue(parsing: batchBytes).decode(as: Components.Schemas.BatchRequest.self))
        }
    }
    Benchmark("decode a 1,000-job batch into the generated types: Foundation JSONDecoder") { benchmark in
        let decoder = JSONDecoder()
        for _ in benchmark.scaledIterations {
            blackHole(try! decoder.decode(Components.Schemas.BatchRequest.self, from: batchData))
        }
    }

    // What `POST /v1/jobs` does with a body: Baton reads it (exact numbers, repeated keys refused),
    // then swift-openapi-runtime has Foundation parse and decode it again (FoundationJSONBridge.swift).
    // The second of these is what a single job's second pass costs.
    Benchmark("decode one job into the generated type: Baton reader and decoder") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try! JSONValue(parsing: jobBytes).decode(as: Components.Schemas.JobRequest.self))
        }
    }
    Benchmark("decode one job into the generated type: Foundation JSONDecoder") { benchmark in
        let decoder = JSONDecoder()
        for _ in benchmark.scaledIterations {
            blackHole(try! decoder.decode(Components.Schemas.JobRequest.self, from: jobData))
        }
    }

    Benchmark("a typed task's input and output: Baton coders") { benchmark in
        for _ in benchmark.scaledIterations {
            let input = try! JSONValue(parsing: orderText).decode(as: Order.self)
            blackHole(try! JSONValue(encoding: input).jsonText)
        }
    }
    Benchmark("a typed task's input and output: Foundation JSONDecoder/JSONEncoder") { benchmark in
        let decoder = JSONDecoder()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        for _ in benchmark.scaledIterations {
            let input = try! decoder.decode(Order.self, from: Data(orderText.utf8))
            blackHole(String(decoding: try! encoder.encode(input), as: UTF8.self))
        }
    }
}
