import BatonPostgres
import BatonTestSupport
import Foundation
import NIOCore
import PostgresNIO
import Testing

/// The hot path's answers read from PostgreSQL's binary arrays (``BinaryArray``) as PostgresNIO
/// reads them, extremes included; anything else refused, never guessed at.
@Suite(.timeLimit(.minutes(1)))
struct BinaryArrayTests {
    @Test func arraysReadAsPostgresNIOReadsThem() async throws {
        try await TestDatabase.with { db async throws in
            let rows = try await db.pool.read(
                """
                SELECT ARRAY[0, 1, -1, 9223372036854775807, -9223372036854775808]::bigint[],
                       ARRAY[0, 7, -2147483648, 2147483647]::int[],
                       ARRAY['', 'a', 'été ✓ 𝄞', repeat('x', 5000)]::text[],
                       ARRAY[0.1, -0.0, 5e-324, 1.7976931348623157e308, 'Infinity', '-Infinity']::float8[],
                       ARRAY[true, false]::boolean[],
                       ARRAY['2026-11-27 15:04:31.123456+00', '1999-12-31 23:59:59.999999+00',
                             '2000-01-01 00:00:00+00']::timestamptz[],
                       '{}'::bigint[], '{}'::text[], '{}'::int[], '{}'::timestamptz[]
                """, logger: db.logger)
            let row = try #require(rows.first)
            let raw = Array(row)
            let typed = try row.decode(
                ([Int64], [Int], [String], [Double], [Bool], [Date], [Int64], [String], [Int], [Date]).self)
            #expect(try BinaryArray.int64s(raw[0]) == typed.0)
            #expect(try BinaryArray.ints(raw[1]) == typed.1)
            #expect(try BinaryArray.strings(raw[2]) == typed.2)
            #expect(try BinaryArray.doubles(raw[3]).map(\.bitPattern) == typed.3.map(\.bitPattern))
            #expect(try BinaryArray.bools(raw[4]) == typed.4)
            #expect(try BinaryArray.dates(raw[5]) == typed.5)
            #expect(try BinaryArray.int64s(raw[6]) == [] && BinaryArray.strings(raw[7]) == [])
            #expect(try BinaryArray.ints(raw[8]) == [] && BinaryArray.dates(raw[9]) == [])
            #expect(typed.2[3].count == 5000 && typed.0.count == 5)
        }
    }

    @Test func otherArraysAreRefused() async throws {
        try await TestDatabase.with { db async throws in
            let rows = try await db.pool.read(
                """
                SELECT ARRAY[1, 2]::int[], ARRAY[1, NULL]::bigint[], ARRAY[[1, 2], [3, 4]]::bigint[],
                       ARRAY['a']::text[], NULL::bigint[]
                """, logger: db.logger)
            let row = try #require(rows.first)
            let raw = Array(row)
            // An int4 array read as int8, a NULL element, two dimensions, text read as numbers, NULL.
            #expect(throws: BinaryArray.Malformed.self) { try BinaryArray.int64s(raw[0]) }
            #expect(throws: BinaryArray.Malformed.self) { try BinaryArray.int64s(raw[1]) }
            #expect(throws: BinaryArray.Malformed.self) { try BinaryArray.int64s(raw[2]) }
            #expect(throws: BinaryArray.Malformed.self) { try BinaryArray.doubles(raw[3]) }
            #expect(throws: BinaryArray.Malformed.self) { try BinaryArray.int64s(raw[4]) }
            // Cut short.
            var cut = try #require(raw[0].bytes)
            cut.moveWriterIndex(to: cut.writerIndex - 1)
            let short = PostgresCell(
                bytes: cut, dataType: raw[0].dataType, format: raw[0].format, columnName: "cut", columnIndex: 0)
            #expect(throws: BinaryArray.Malformed.self) { try BinaryArray.ints(short) }
        }
    }
}
