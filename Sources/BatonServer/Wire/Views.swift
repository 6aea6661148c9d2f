import Baton
import BatonPostgres
import Foundation

/// How the control plane shows what the store returns. Field names are the API's contract (see
/// the OpenAPI document); times are RFC 3339 in UTC.
enum Views {
    static func time(_ date: Date?) -> JSONValue {
        guard let date else { return .null }
        return .string(date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
    }

    static func string(_ string: String?) -> JSONValue { string.map(JSONValue.string) ?? .null }

    static func int<I: BinaryInteger>(_ value: I?) -> JSONValue { value.map { .number(Double($0)) } ?? .null }

    /// A job with every stage: state, attempts, output and errors.
    static func job(_ job: JobRecord, members: [MemberRecord] = []) -> JSONValue {
        let stages = job.chain.enumerated().map { index, spec in
            stage(index, spec, of: job, members: members.filter { $0.stage == index })
        }
        return [
            "id": int(job.id), "queue": .string(job.queue), "priority": int(job.priority),
            "state": .string(job.state.rawValue), "run_at": time(job.runAt), "created_at": time(job.createdAt),
            "finished_at": time(job.finishedAt), "metadata": job.metadata, "input": job.input,
            "output": job.output ?? .null, "current_stage": int(job.stage), "stages": .array(stages),
            "idempotency_key": string(job.idempotencyKey), "parent_id": int(job.parentID),
        ]
    }

    private static func stage(_ index: Int, _ spec: StageSpec, of job: JobRecord, members: [MemberRecord]) -> JSONValue
    {
        let finished = index < job.stage || (index == job.stage && job.state == .completed)
        let result = finished && job.results.indices.contains(index) ? job.results[index] : nil
        let state: String
        let attempts: Int
        var startedAt: JSONValue = .null
        if finished {
            state = JobState.completed.rawValue
            attempts = result?.attempts ?? 0
            startedAt = string(result?.startedAt)
        } else if index == job.stage {
            state = job.state.rawValue
            attempts = job.attempt
            if job.attempt > 0 { startedAt = time(job.attemptedAt) }
        } else {
            state = "pending"
            attempts = 0
        }
        var view: JSONValue = [
            "index": int(index), "name": string(spec.name), "task": string(spec.task?.task),
            "lane": string(spec.lane), "state": .string(state), "attempts": int(attempts),
            "max_attempts": int(spec.task?.retry.maxAttempts), "started_at": startedAt,
            "finished_at": string(result?.finishedAt), "output": result?.output ?? .null,
            "errors": .array(job.errors.filter { $0.stage == index }.map(error)),
        ]
        if case .group = spec.body, case .object(var fields) = view {
            fields["members"] = .array(members.map(member))
            view = .object(fields)
        }
        return view
    }

    private static func error(_ error: JobRecord.AttemptError) -> JSONValue {
        [
            "attempt": int(error.attempt), "at": .string(error.at), "worker": string(error.worker),
            "error": .string(error.error),
        ]
    }

    private static func member(_ member: MemberRecord) -> JSONValue {
        [
            "index": int(member.index), "id": int(member.id), "state": .string(member.state.rawValue),
            "attempts": int(member.attempt), "output": member.output ?? .null,
            "errors": .array(member.errors.map(error)),
        ]
    }

    /// A job in a listing.
    static func summary(_ job: JobSummary) -> JSONValue {
        [
            "id": int(job.id), "queue": .string(job.queue), "priority": int(job.priority),
            "state": .string(job.state.rawValue), "current_stage": int(job.stage), "stage_count": int(job.stageCount),
            "task": string(job.task), "lane": string(job.lane), "attempts": int(job.attempt),
            "run_at": time(job.runAt), "created_at": time(job.createdAt), "finished_at": time(job.finishedAt),
            "last_error": string(job.lastError),
        ]
    }

    static func enqueued(_ job: EnqueuedJob) -> JSONValue {
        [
            "id": int(job.id), "queue": .string(job.queue), "state": .string(job.state.rawValue),
            "inserted": .bool(job.inserted),
        ]
    }

    static func queue(_ queue: QueueStatus, now: Date) -> JSONValue {
        let counts = Dictionary(
            uniqueKeysWithValues: JobState.allCases.map { ($0.rawValue, int(queue.counts[$0] ?? 0)) })
        return [
            "name": .string(queue.name), "paused": .bool(queue.paused), "counts": .object(counts),
            "oldest_available_at": time(queue.oldestAvailable),
            "oldest_available_age_seconds": queue.oldestAvailable.map { .number(max(0, now.timeIntervalSince($0))) }
                ?? .null,
        ]
    }

    static func lane(_ lane: LaneStatus) -> JSONValue {
        let head: JSONValue =
            lane.head.map { head in
                [
                    "id": int(head.id), "queue": .string(head.queue), "state": .string(head.state.rawValue),
                    "stage": int(head.stage), "task": string(head.task), "attempts": int(head.attempt),
                    "run_at": time(head.runAt), "last_error": string(head.lastError),
                ]
            } ?? .null
        return [
            "lane": .string(lane.lane), "head": head, "head_state": string(lane.head?.state.rawValue),
            "waiting": int(lane.waiting),
        ]
    }

    static func worker(_ worker: WorkerRecord) -> JSONValue {
        [
            "id": .string(worker.id), "host": .string(worker.host), "pid": int(worker.pid),
            "queues": .array(worker.queues.map(JSONValue.string)), "tasks": .array(worker.tasks.map(JSONValue.string)),
            "started_at": time(worker.startedAt), "last_heartbeat_at": time(worker.heartbeatAt),
            "running_jobs": .array(worker.runningJobs.map { int($0) }),
        ]
    }
}
