import ArgumentParser
import Baton
import BatonPostgres
import BatonWorker
import Foundation
import Logging

/// The sections of a settings file that hold things kept in the database rather than settings of
/// the process: `schedules`, `lanes`, `rate_limits` and `fair_keys`, read apart from the others.
/// Each is checked when `baton worker`, `serve` or `dev` starts (a problem names the file and the
/// field, and the command refuses to start) and then made so: what a section lists is saved, and
/// what it listed before and no longer does is deleted; a file without a section leaves those as
/// they are; what was set through the API stays the API's.
struct SettingsFileSections: Sendable {
    /// The sections' names, as a file spells them.
    static let names = ["schedules", "lanes", "rate_limits", "fair_keys"]

    var schedules: ScheduleSettings?
    var lanes: LaneSettings?
    var rateLimits: RateLimitSettings?
    var fairKeys: FairKeySettings?

    /// Takes the sections out of `object`, a file's top level, leaving the other settings.
    init(taking object: inout [String: JSONValue], file: String) {
        schedules = object.removeValue(forKey: "schedules").map { ScheduleSettings(value: $0, file: file) }
        lanes = object.removeValue(forKey: "lanes").map { LaneSettings(value: $0, file: file) }
        rateLimits = object.removeValue(forKey: "rate_limits").map { RateLimitSettings(value: $0, file: file) }
        fairKeys = object.removeValue(forKey: "fair_keys").map { FairKeySettings(value: $0, file: file) }
    }

    init() {}

    /// Every section checked, ready to be saved: throws the first problem.
    func checked() throws -> Checked {
        Checked(
            schedules: try schedules?.definitions(), lanes: try lanes?.settings(), rateLimits: try rateLimits?.limits(),
            fairKeys: try fairKeys?.sources())
    }

    struct Checked: Sendable {
        var schedules: [ScheduleDefinition]?
        var lanes: [LaneSetting]?
        var rateLimits: [RateLimit]?
        var fairKeys: [(queue: String, from: FairKeySource)]?

        /// Saves what the file lists and deletes what it no longer does, a section at a time.
        func save(_ pool: DatabasePool, logger: Logger) async throws {
            let store = Store(pool: pool, logger: logger, checkingArgs: TaskRegistry().argsCheck)
            if let schedules {
                try await store.syncSettingsSchedules(schedules, now: Date())
                logger.info("schedules from the settings file", metadata: ["names": "\(schedules.map(\.name))"])
            }
            if let rateLimits {
                try await store.syncSettingsRateLimits(rateLimits)
                logger.info("rate limits from the settings file", metadata: ["keys": "\(rateLimits.map(\.key))"])
            }
            if let fairKeys {
                try await store.syncSettingsFairKeySources(fairKeys)
                logger.info("fairness keys from the settings file", metadata: ["queues": "\(fairKeys.map(\.queue))"])
            }
            // Logged last (tests wait for it).
            if let lanes {
                try await store.syncSettingsLanes(lanes)
                logger.info("lane settings from the settings file", metadata: ["lanes": "\(lanes.map(\.lane))"])
            }
        }
    }
}

/// The `fair_keys:` of a settings file: where each queue's jobs that name no fairness key take one,
/// as `PUT /v1/queues/{name}/fair-key` takes it; what it lists is what is set, as for `lanes:`:
///
/// ```yaml
/// fair_keys:
///   exports: {from: metadata.tenant}
/// ```
struct FairKeySettings: Sendable {
    var value: JSONValue
    var file: String

    func sources() throws -> [(queue: String, from: FairKeySource)] {
        try sectionEntries(
            value, file: file, section: "fair_keys", mapping: "queues to {from: metadata.tenant}", what: "queue name",
            shape: "a queue's fairness key is an object, as {from: metadata.tenant}", known: ["from"],
            unknown: "unknown; there is from"
        ) { queue, fields, refuse in
            do throws(BatonError) {
                return (queue, try FairKeySource(parsing: fields["from"]?.stringValue ?? "", field: "from"))
            } catch {
                guard case .invalidChain(_, let reason) = error else { throw refuse("from", "\(error)") }
                throw refuse("from", reason)
            }
        }
    }
}

/// The entries of a section that maps names to objects of fields (`lanes:`, `rate_limits:`,
/// `fair_keys:`), in name order: each name checked as the API checks it (`what`), its value an
/// object (`shape` says which, as `{width: 3}`) of the `known` fields only (`unknown` says so of
/// another); `read` makes each entry, with `refuse(field, reason)` naming the file and the field
/// ("" for the entry itself) of a problem.
func sectionEntries<Entry>(
    _ value: JSONValue, file: String, section: String, mapping: String, what: String, shape: String,
    known: [String], unknown: String,
    _ read: (_ name: String, _ fields: [String: JSONValue], _ refuse: (String, String) -> ValidationError) throws
        -> Entry
) throws -> [Entry] {
    guard case .object(let entries) = value else {
        throw ValidationError("config file \(file): \(section) must map \(mapping)")
    }
    return try entries.keys.sorted().map { name in
        let path = "\(section).\(name)"
        func refuse(_ field: String, _ reason: String) -> ValidationError {
            ValidationError("config file \(file): \(path)\(field.isEmpty ? "" : ".")\(field): \(reason)")
        }
        do {
            try ChainDefinition.checkName(name, path: path, what: what)
        } catch {
            throw refuse("", "\(error)")
        }
        guard case .object(let fields) = entries[name] ?? .null else { throw refuse("", shape) }
        if let other = fields.keys.sorted().first(where: { !known.contains($0) }) { throw refuse(other, unknown) }
        return try read(name, fields, refuse)
    }
}
