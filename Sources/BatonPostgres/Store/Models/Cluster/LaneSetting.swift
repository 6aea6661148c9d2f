import Baton
import Foundation

/// A lane's width as an operator set it: for one lane, or for every lane a prefix ending in `*` starts.
public struct LaneSetting: Sendable, Hashable {
    public var lane: String
    public var width: Int
    public var source: SettingSource
    public var updatedAt: Date

    /// Widths an operator may set.
    public static let widths = 1...10_000

    public init(lane: String, width: Int, source: SettingSource = .api, updatedAt: Date = Date()) {
        self.lane = lane
        self.width = width
        self.source = source
        self.updatedAt = updatedAt
    }
}
