import BatonPostgres
import Foundation

/// A small line chart drawn by the server as SVG: the page needs no script to show it, and
/// carries nothing but numbers in it.
struct Chart: Sendable {
    struct Series: Sendable {
        var name: String
        /// The CSS class that colours it (`completed`, `discarded`, `p50`, `p95`).
        var style: String
        /// `x,y x,y …` in the chart's 300×80 box.
        var points: String
        var latest: String
    }

    static let width = 300.0
    static let height = 80.0

    var title: String
    var series: [Series]
    /// The top of the scale, as text.
    var top: String
    var from: String
    var to: String
    /// What a screen reader says of it.
    var summary: String

    /// `value` (not negative) to one decimal: a chart has hundreds of points, and
    /// `String(format:)` costs several times more.
    static func tenths(_ value: Double) -> String {
        let tenths = Int((max(0, value) * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }

    /// Plots each series' values (nil: no point) over `count` equal steps, on one scale from zero
    /// to the largest value.
    init(
        title: String, count: Int, from: String, to: String, format: (Double) -> String,
        _ values: [(name: String, style: String, values: [Double?])]
    ) {
        let top = max(values.flatMap { $0.values.compactMap { $0 } }.max() ?? 0, 1e-9)
        let step = count > 1 ? Self.width / Double(count - 1) : 0
        self.title = title
        self.top = format(top)
        self.from = from
        self.to = to
        series = values.map { name, style, values in
            let points = values.enumerated().compactMap { index, value in
                value.map { value in
                    Self.tenths(Double(index) * step) + ","
                        + Self.tenths(Self.height - value / top * (Self.height - 4) - 2)
                }
            }
            return Series(
                name: name, style: style, points: points.joined(separator: " "),
                latest: values.last.flatMap { $0 }.map(format) ?? "–")
        }
        summary = "\(title), \(from) to \(to): " + series.map { "\($0.name) now \($0.latest)" }.joined(separator: ", ")
    }
}
