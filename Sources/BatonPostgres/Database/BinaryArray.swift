import Foundation
import NIOCore
import PostgresNIO

/// The arrays a claim, an outcome batch or an enqueue answers with, read straight from
/// PostgreSQL's binary array format.
///
/// PostgresNIO decodes `[Element]` through `PostgresDecodable`'s generic entry points, element by
/// element, unspecialised across the module boundary: the answers of the hot path (ten arrays of
/// up to a batch's size each) took a measurable part of a busy worker's CPU that way, much of it in
/// looking up generic metadata
/// (docs/benchmarks.md#issue-21-part-5-again-the-workers-cpu-per-stage-again-2026-11-27-evening).
/// Here each element type has its own loop: read a row's cells (`Array(row)`) with these.
///
/// Only what those procedures answer: one dimension, no NULL element (their SQL coalesces).
/// Anything else, or an element type other than the one asked for, is an error, not a guess.
package enum BinaryArray {
    package struct Malformed: Error, CustomStringConvertible {
        package var description: String
    }

    package static func int64s(_ column: PostgresCell) throws -> [Int64] {
        try elements(of: column, typed: [.int8]) { buffer, length in
            guard length == 8 else { return nil }
            return buffer.readInteger(as: Int64.self)
        }
    }

    /// An `int4[]`.
    package static func ints(_ column: PostgresCell) throws -> [Int] {
        try elements(of: column, typed: [.int4]) { buffer, length in
            guard length == 4 else { return nil }
            return buffer.readInteger(as: Int32.self).map(Int.init)
        }
    }

    package static func strings(_ column: PostgresCell) throws -> [String] {
        try elements(of: column, typed: [.text, .varchar, .name]) { buffer, length in
            buffer.readString(length: length)
        }
    }

    package static func doubles(_ column: PostgresCell) throws -> [Double] {
        try elements(of: column, typed: [.float8]) { buffer, length in
            guard length == 8 else { return nil }
            return buffer.readInteger(as: UInt64.self).map(Double.init(bitPattern:))
        }
    }

    package static func bools(_ column: PostgresCell) throws -> [Bool] {
        try elements(of: column, typed: [.bool]) { buffer, length in
            guard length == 1 else { return nil }
            return buffer.readInteger(as: UInt8.self).map { $0 != 0 }
        }
    }

    /// A `timestamptz[]`, as PostgresNIO reads a `timestamptz`: microseconds since 2000-01-01 UTC.
    package static func dates(_ column: PostgresCell) throws -> [Date] {
        try elements(of: column, typed: [.timestamptz, .timestamp]) { buffer, length in
            guard length == 8, let microseconds = buffer.readInteger(as: Int64.self) else { return nil }
            return Date(timeInterval: Double(microseconds) / 1_000_000, since: postgresEpoch)
        }
    }

    private static let postgresEpoch = Date(timeIntervalSince1970: 946_684_800)

    /// The header (dimensions, a NULL flag, the element type; then each dimension's length and
    /// lower bound), then each element as its length and its bytes, read by `element`, which
    /// answers nil for bytes it cannot read.
    @inline(__always)
    private static func elements<Element>(
        of column: PostgresCell, typed types: [PostgresDataType],
        _ element: (inout ByteBuffer, Int) -> Element?
    ) throws -> [Element] {
        guard var buffer = column.bytes else { throw Malformed(description: "\(column.columnName) is NULL") }
        guard let (dimensions, _, type) = buffer.readMultipleIntegers(as: (Int32, Int32, UInt32).self) else {
            throw Malformed(description: "an array's header is cut short")
        }
        if dimensions == 0 { return [] }
        guard dimensions == 1 else { throw Malformed(description: "an array of \(dimensions) dimensions, not one") }
        guard types.contains(PostgresDataType(type)) else {
            throw Malformed(description: "an array of \(PostgresDataType(type)), not of \(types[0])")
        }
        guard let (count, _) = buffer.readMultipleIntegers(as: (Int32, Int32).self), count >= 0 else {
            throw Malformed(description: "an array's length is missing")
        }
        var elements: [Element] = []
        elements.reserveCapacity(Int(count))
        for index in 0..<Int(count) {
            guard let length = buffer.readInteger(as: Int32.self), length >= 0, buffer.readableBytes >= Int(length)
            else { throw Malformed(description: "element \(index) of an array is NULL or cut short") }
            let end = buffer.readerIndex + Int(length)
            guard let value = element(&buffer, Int(length)), buffer.readerIndex == end else {
                throw Malformed(description: "element \(index) of an array of \(types[0]) is not one")
            }
            elements.append(value)
        }
        return elements
    }
}
