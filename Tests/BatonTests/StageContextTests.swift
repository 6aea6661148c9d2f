import Baton
import Foundation
import Testing

/// A task unit-tested as a user would: no PostgreSQL, no worker, a context made for the test.
struct StageContextTests {
    struct Invoice: Codable, Sendable, Equatable {
        var customer: Int
        var total: Decimal
    }

    /// Adds the shipping cost of the `quote` stage to the total, once per job (its idempotency key).
    struct AddShipping: BatonTask {
        func run(_ input: Invoice, context: StageContext) async throws -> Invoice {
            let quote = try context.output(of: "quote", as: Decimal.self)
            guard context.attempt <= 3 else { throw TaskFailure.permanent("gave up") }
            guard context.metadata["currency"] == "EUR" else { throw TaskFailure.permanent("not euros") }
            var output = input
            output.total += quote
            return output
        }
    }

    @Test func aTaskRunsWithEarlierOutputsMetadataAndAttempt() async throws {
        let context = StageContext(
            testingJob: 42, attempt: 2, metadata: ["currency": "EUR"],
            earlier: [("render", "pdf"), ("quote", .number(JSONNumber("4.95")!))])
        #expect(context.stageIndex == 2 && context.idempotencyKey == "42-2")
        #expect(context.output(at: 0) == "pdf")
        let output = try await AddShipping().run(
            Invoice(customer: 7, total: Decimal(string: "10.10")!), context: context)
        #expect(output.total == Decimal(string: "15.05"))
        await #expect(throws: TaskFailure.permanent("gave up")) {
            _ = try await AddShipping().run(
                Invoice(customer: 7, total: 1), context: StageContext(attempt: 4, earlier: [("quote", 1)]))
        }
    }
}
