import BatonPostgres
import BatonTestSupport
import Testing

/// No statement inside Baton's functions is compiled to machine code (JIT), however dear its plan
/// looks: every function a client calls runs with `jit = off` (Migrator.swift). Compiled again at
/// every execution, a flush's hand-over over deep lanes cost 30–70 ms instead of 4.
@Suite(.timeLimit(.minutes(2)))
struct CompiledPlanTests {
    /// psql runs an enqueue into a lane, a claim, a flush that hands the lane over and a promotion,
    /// with JIT made to compile every plan (`jit_above_cost = 0`) and auto_explain sending each
    /// statement's plan, its functions' statements included, to the client as a notice; a compiled
    /// plan says `JIT:`. Only the four statements psql sent may be compiled, and they are: the
    /// server can compile, so the functions' statements were not by their own setting.
    @Test func noStatementOfAFunctionIsCompiled() async throws {
        try await TestDatabase.with { db async throws in
            try #require(
                try await db.values("SELECT pg_jit_available()", as: Bool.self) == [true],
                "this PostgreSQL cannot compile plans (no LLVM JIT provider): nothing to hold")
            let job = #"{"queue": "default", "priority": 0, "chain": [{"task": "noop", "lane": "a"}], "input": 1}"#
            let sent = [
                "SELECT count(*) FROM enqueue('[\(job), \(job)]')",
                "SELECT count(*) FROM claim_for('default', 10, 'w', NULL)",
                """
                SELECT count(*) FROM apply_outcomes_for('w', (SELECT jsonb_agg(jsonb_build_object('id', id, \
                'stage', 0, 'attempt', 1, 'kind', 'complete')) FROM jobs WHERE state = 'running'), '{default}', \
                '{10}', NULL)
                """,
                "SELECT count(*) FROM promote_due_from(10, NULL)",
            ]
            let plans = try await AutoExplain.plans(in: db, settings: ["SET jit = on", "SET jit_above_cost = 0"], sent)
            let compiled = plans.filter { $0.contains("JIT:") }.map(AutoExplain.query(of:))
            #expect(plans.count > sent.count, "the functions' statements were not shown: \(plans)")
            #expect(compiled.sorted() == sent.sorted())
            // The flush handed the lane over: the second job runs.
            #expect(
                try await db.values(
                    "SELECT count(*)::int FROM \(unescaped: TestDatabase.schema).jobs WHERE state = 'running'",
                    as: Int.self) == [1])
        }
    }

    /// The rule holds for a function added later: each of Baton's functions sets `jit = off`, but
    /// the helpers, which run inside those that do or read a row or two by index.
    @Test func everyFunctionAClientCallsSetsJITOff() async throws {
        let helpers: Set = [
            "lane_admissions", "lane_width", "lock_lanes", "promote_lanes", "scoped_rate_limits",
            "stage_rate_key", "unfinished_members", "new_job_id", "ready_slot", "locked_old_slots", "lock_rate_keys",
            // Inlined into the statement that calls it (no settings of its own, or it would not be).
            "tags_of",
            // Trigger functions run inside the statement that fired them, of a function that sets it.
            "ready_inserted", "ready_updated",
            // Procedures may not set a parameter; each only calls a function that does.
            "apply_outcomes_committed", "claim_committed", "enqueue_committed",
        ]
        try await TestDatabase.with { db async throws in
            let unset = try await db.values(
                """
                SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = \(TestDatabase.schema) AND p.prolang IN (SELECT l.oid FROM pg_language l WHERE l.lanname IN ('sql', 'plpgsql'))
                  AND NOT coalesce('jit=off' = ANY (p.proconfig), false)
                ORDER BY 1
                """, as: String.self)
            #expect(Set(unset).subtracting(helpers).isEmpty, "\(unset)")
            #expect(helpers.subtracting(unset).isEmpty, "helpers that set it now: \(helpers.subtracting(unset))")
        }
    }
}
