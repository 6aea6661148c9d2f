import ArgumentParser
import Baton
import BatonAPI
import BatonPostgres
import BatonServer
import BatonWorker
import Foundation

/// The `schedules:` of a settings file: what it lists is what runs (the file's schedules are
/// saved, and those it no longer lists deleted, when `baton worker`, `serve` or `dev` starts; a
/// settings file without `schedules:` leaves them as they are). Each entry is a schedule request
/// as `PUT /v1/schedules/NAME` takes it:
///
/// ```yaml
/// schedules:
///   nightly-report:
///     cron: "0 2 * * *"
///     time_zone: Europe/Paris
///     misfire: latest
///     job: {queue: reports, stages: [{task: http, args: {method: POST, url: "https://reports.example/run"}}]}
/// ```
struct ScheduleSettings: Sendable {
    /// The `schedules` object as the file holds it (numbers exact, whether JSON or YAML), and the file's name.
    var value: JSONValue
    var file: String

    /// Each schedule, checked as the API checks one: a problem names the file and the field.
    func definitions() throws -> [ScheduleDefinition] {
        guard case .object(let entries) = value else {
            throw ValidationError("config file \(file): schedules must map names to schedules")
        }
        let argsCheck = TaskRegistry().argsCheck
        return try entries.keys.sorted().map { name in
            do {
                return try scheduleDefinition(
                    name: name, entries[name] ?? .null, path: "schedules.\(name).",
                    checkingArgs: argsCheck)
            } catch let error as ScheduleDefinitionError {
                throw ValidationError("config file \(file): \(error.path): \(error.reason)")
            }
        }
    }
}
