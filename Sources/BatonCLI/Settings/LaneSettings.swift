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
        try sectionEntries(
            value, file: file, section: "lanes", mapping: "lanes (or prefixes ending in *) to settings", what: "lane",
            shape: "a lane's settings are an object, as {width: 3}", known: ["width"],
            unknown: "unknown lane setting; there is width"
        ) { lane, fields, refuse in
            guard let width = fields["width"]?.numberValue?.integer(as: Int.self), LaneSetting.widths.contains(width)
            else {
                throw refuse(
                    "width", "a whole number from \(LaneSetting.widths.lowerBound) to \(LaneSetting.widths.upperBound)")
            }
            return LaneSetting(lane: lane, width: width, source: .settings)
        }
    }
}

/// The `rate_limits:` of a settings file, as `PUT /v1/rate-limits/KEY` takes each; what it lists is
/// what is set, as for `lanes:`:
///
/// ```yaml
/// rate_limits:
///   partner-api: {rate: 10, per: 1s, burst: 20}
/// ```
struct RateLimitSettings: Sendable {
    var value: JSONValue
    var file: String

    func limits() throws -> [RateLimit] {
        try sectionEntries(
            value, file: file, section: "rate_limits", mapping: "keys to limits", what: "rate limit key",
            shape: "a limit is an object, as {rate: 10, per: 1s}", known: ["rate", "per", "burst"],
            unknown: "unknown; a limit has rate, per and burst"
        ) { key, fields, refuse in
            guard let rate = fields["rate"]?.numberValue?.integer(as: Int.self), RateLimit.rates.contains(rate) else {
                throw refuse("rate", "a whole number from 1 to 1000000")
            }
            guard let text = fields["per"]?.stringValue, let per = DurationFormat.parse(text),
                RateLimit.periods.contains(per)
            else {
                throw refuse("per", "a period from 1ms to 31d, such as 1s, 1m or 1h")
            }
            var burst: Int?
            if let value = fields["burst"] {
                guard let number = value.numberValue?.integer(as: Int.self), RateLimit.rates.contains(number) else {
                    throw refuse("burst", "a whole number from 1 to 1000000")
                }
                burst = number
            }
            return RateLimit(key: key, rate: rate, per: per, burst: burst, source: .settings)
        }
    }
}
