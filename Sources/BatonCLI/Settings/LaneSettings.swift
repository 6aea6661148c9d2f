import ArgumentParser
import Baton
import BatonPostgres
import Foundation

/// The `lanes:` of a settings file: each lane's (or prefix's) width, as `PUT /v1/lane-settings/LANE`
/// takes it. What it lists is what is set: saved, and the settings it no longer lists deleted,
/// when `baton worker`, `serve` or `dev` starts (a file without `lanes:` leaves them as they are;
/// those set through the API are the API's):
///
/// ```yaml
/// lanes:
///   "customer-*": {width: 3}
///   customer-42: {width: 10}
/// ```
struct LaneSettings: Sendable {
    /// The `lanes` object as the file holds it, and the file's name.
    var value: JSONValue
    var file: String

    /// Each setting, checked as the API checks one: a problem names the file and the field.
    func settings() throws -> [LaneSetting] {
        guard case .object(let entries) = value else {
            throw ValidationError("config file \(file): lanes must map lanes (or prefixes ending in *) to settings")
        }
        return try entries.keys.sorted().map { lane in
            let path = "lanes.\(lane)"
            do {
                try ChainDefinition.checkName(lane, path: path, what: "lane")
            } catch {
                throw ValidationError("config file \(file): \(path): \(error)")
            }
            guard case .object(let fields) = entries[lane] ?? .null else {
                throw ValidationError("config file \(file): \(path): a lane's settings are an object, as {width: 3}")
            }
            if let unknown = fields.keys.sorted().first(where: { $0 != "width" }) {
                throw ValidationError("config file \(file): \(path).\(unknown): unknown lane setting; there is width")
            }
            guard let width = fields["width"]?.numberValue?.integer(as: Int.self), LaneSetting.widths.contains(width)
            else {
                throw ValidationError(
                    "config file \(file): \(path).width: a whole number from \(LaneSetting.widths.lowerBound) to "
                        + "\(LaneSetting.widths.upperBound)")
            }
            return LaneSetting(lane: lane, width: width, source: .settings)
        }
    }
}
