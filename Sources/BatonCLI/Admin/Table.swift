/// Rows in aligned columns that fit the console's width: columns that may shrink are cut (with
/// `…`) in the order given, down to their minimum, before anything spills over.
struct Table {
    struct Column {
        var title: String
        var alignRight = false
        /// Nil: never cut. Else the narrowest this column may become.
        var minimumWidth: Int? = nil
        /// Colours a cell by its (plain) text, e.g. a state.
        var color: (@Sendable (String) -> Console.Color?)? = nil
    }

    var columns: [Column]
    var rows: [[String]] = []
    /// Indices of the columns to cut first, in order.
    var shrinkOrder: [Int] = []

    init(_ columns: [Column], shrinkOrder: [Int] = []) {
        self.columns = columns
        self.shrinkOrder = shrinkOrder
    }

    mutating func append(_ row: [String]) { rows.append(row.map(Text.printable)) }

    func render(on console: Console) -> String {
        var widths = columns.indices.map { column in
            rows.reduce(columns[column].title.count) { max($0, $1[column].count) }
        }
        let gap = 2
        var excess = widths.reduce(0, +) + gap * (widths.count - 1) - console.width
        for column in shrinkOrder where excess > 0 {
            let minimum = min(widths[column], columns[column].minimumWidth ?? widths[column])
            let cut = min(excess, widths[column] - minimum)
            widths[column] -= cut
            excess -= cut
        }
        let last = columns.count - 1
        func line(_ cells: [String], header: Bool) -> String {
            var text = ""
            for (index, cell) in cells.enumerated() {
                let width = widths[index]
                let fitted = Text.truncate(cell, to: width)
                let padding = String(repeating: " ", count: width - fitted.count)
                var painted = fitted
                if header {
                    painted = console.paint(fitted, .bold)
                } else if let color = columns[index].color {
                    painted = console.paint(fitted, color(cell))
                }
                if columns[index].alignRight {
                    text += padding + painted
                } else {
                    text += painted + (index == last ? "" : padding)
                }
                if index != last { text += String(repeating: " ", count: gap) }
            }
            // A last column left empty would leave trailing blanks.
            return String(text.reversed().drop(while: { $0 == " " }).reversed())
        }
        return ([line(columns.map(\.title), header: true)] + rows.map { line($0, header: false) })
            .joined(separator: "\n")
    }
}
