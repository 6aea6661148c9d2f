import Baton
import BatonAPI
import BatonPostgres
import Foundation

/// `/v1/schedules`: jobs enqueued on a cron schedule.
extension API {
    func listSchedules(_ input: Operations.ListSchedules.Input) async throws -> Operations.ListSchedules.Output {
        let schedules = try await store.schedules().filter { Caller.current?.serves($0.job.queue) ?? true }
        return .ok(.init(body: .json(.init(schedules: schedules.map(Components.Schemas.Schedule.init)))))
    }

    func getSchedule(_ input: Operations.GetSchedule.Input) async throws -> Operations.GetSchedule.Output {
        .ok(.init(body: .json(.init(try await schedule(input.path.name)))))
    }

    /// `PUT /v1/schedules/{name}`: the request checked as `POST /v1/jobs` checks a job, and the
    /// expression, zone and misfire policy read, before anything is written.
    func putSchedule(_ input: Operations.PutSchedule.Input) async throws -> Operations.PutSchedule.Output {
        guard case .json(let request) = input.body else { throw Problem.invalid("", "the body must be JSON") }
        let name = try Self.name(input.path.name, "name") ?? ""
        let definition = try Self.definition(name, request, checkingArgs: store.argsCheck)
        try checkQueues(of: [definition.job], prefix: { _ in "job." })
        try await checkTasks([definition.job], unchecked: input.query.unchecked, path: "job.stages")
        if try await store.schedule(name)?.source == .settings { throw Problem.ownedBySettings("schedule \"\(name)\"") }
        // Another queue's schedule of this name is not replaced (its queue is not named).
        guard
            try await store.saveSchedule(definition, source: .api, now: Date(), replacing: scopedQueues, by: actor)
        else {
            throw Problem.outOfScope(
                "token \"\(Caller.current?.name ?? "")\" may not replace schedule \"\(name)\" of another queue",
                path: "name")
        }
        return .ok(.init(body: .json(.init(try await schedule(name)))))
    }

    func deleteSchedule(_ input: Operations.DeleteSchedule.Input) async throws -> Operations.DeleteSchedule.Output {
        let schedule = try await schedule(input.path.name)
        guard schedule.source == .api else { throw Problem.ownedBySettings("schedule \"\(schedule.name)\"") }
        _ = try await store.deleteSchedule(schedule.name, by: actor)
        return .noContent(.init())
    }

    func pauseSchedule(_ input: Operations.PauseSchedule.Input) async throws -> Operations.PauseSchedule.Output {
        .ok(.init(body: .json(.init(try await setPaused(input.path.name, true)))))
    }

    func resumeSchedule(_ input: Operations.ResumeSchedule.Input) async throws -> Operations.ResumeSchedule.Output {
        .ok(.init(body: .json(.init(try await setPaused(input.path.name, false)))))
    }

    func runSchedule(_ input: Operations.RunSchedule.Input) async throws -> Operations.RunSchedule.Output {
        let enqueued = try await store.runScheduleNow(try await schedule(input.path.name), now: Date(), by: actor)
        return .created(.init(body: .json(.init(enqueued))))
    }

    // MARK: helpers

    /// The schedule, if the caller may see it (another queue's is 404, as one that does not exist).
    private func schedule(_ name: String) async throws -> ScheduleRecord {
        guard let schedule = try await store.schedule(name), Caller.current?.serves(schedule.job.queue) ?? true
        else {
            throw Problem.notFound("no schedule named \"\(name)\"")
        }
        return schedule
    }

    private func setPaused(_ name: String, _ paused: Bool) async throws -> ScheduleRecord {
        _ = try await schedule(name)
        guard try await store.setSchedulePaused(name, paused, now: Date(), by: actor) else {
            throw Problem.notFound("no schedule named \"\(name)\"")
        }
        return try await schedule(name)
    }

    /// A schedule request as the store saves it, its job checked with `checkingArgs` as an
    /// enqueued one is; 400 naming the field at fault.
    static func definition(
        _ name: String, _ request: Components.Schemas.ScheduleRequest, prefix: String = "",
        checkingArgs: ChainDefinition.ArgsCheck?
    ) throws -> ScheduleDefinition {
        let cron: CronExpression
        do {
            cron = try CronExpression(request.cron)
        } catch {
            throw Problem.invalid(prefix + "cron", error.description)
        }
        let zoneName = request.timeZone ?? "UTC"
        guard let zone = TimeZone(identifier: zoneName) else {
            throw Problem.invalid(prefix + "time_zone", "\"\(zoneName)\" is not an IANA time zone (e.g. Europe/Paris)")
        }
        let misfire: MisfirePolicy
        do {
            misfire = try MisfirePolicy(parsing: request.misfire ?? "skip")
        } catch {
            throw Problem.invalid(prefix + "misfire", error.description)
        }
        for (field, given) in [
            ("run_at", request.job.runAt != nil), ("delay", request.job.delay != nil),
            ("idempotency_key", request.job.idempotencyKey != nil),
        ] where given {
            throw Problem.invalid(
                prefix + "job." + field,
                "a schedule's job runs at each slot, keyed by schedule and slot: leave out \(field)")
        }
        let reader = JobReader(prefix: prefix + "job.")
        let job = try reader.validated(reader.job(request.job), checkingArgs: checkingArgs).job
        let requestJSON = try JSONValue(encoding: request.job)
        return ScheduleDefinition(
            name: name, cron: cron, timeZone: zone, misfire: misfire, paused: request.paused ?? false, job: job,
            request: requestJSON)
    }
}

extension Components.Schemas.Schedule {
    init(_ schedule: ScheduleRecord) {
        self.init(
            name: schedule.name, cron: schedule.cron.description, timeZone: schedule.timeZone.identifier,
            misfire: schedule.misfire.name, paused: schedule.paused, source: .init(rawValue: schedule.source.rawValue)!,
            job: schedule.request ?? .null, nextRunAt: schedule.nextRunAt, upcoming: schedule.upcoming(5),
            lastRunAt: schedule.lastRunAt, lastJobId: schedule.lastJobID, createdAt: schedule.createdAt,
            updatedAt: schedule.updatedAt)
    }
}

/// Why a schedule (from the settings file) cannot be saved: the field at fault and what is wrong.
package struct ScheduleDefinitionError: Error, Sendable {
    package var path: String
    package var reason: String
}

/// A schedule given as JSON (an entry of the settings file's `schedules`), checked as
/// `PUT /v1/schedules/NAME` checks one, its fields named from `path` (`schedules.nightly.`).
package func scheduleDefinition(
    name: String, _ value: JSONValue, path: String, checkingArgs: ChainDefinition.ArgsCheck?
) throws -> ScheduleDefinition {
    do {
        try ChainDefinition.checkName(name, path: path.dropLast().description, what: "schedule name")
        let request = try RequestBody.decode(Components.Schemas.ScheduleRequest.self, from: value)
        return try API.definition(name, request, prefix: path, checkingArgs: checkingArgs)
    } catch let error as InvalidRequestBody {
        throw ScheduleDefinitionError(path: path + error.path, reason: error.reason)
    } catch let problem as Problem {
        throw ScheduleDefinitionError(path: problem.path ?? path, reason: problem.detail ?? problem.title)
    } catch let error as BatonError {
        guard case .invalidChain(let at, let reason) = error else {
            throw ScheduleDefinitionError(path: path, reason: "\(error)")
        }
        throw ScheduleDefinitionError(path: at, reason: reason)
    }
}
