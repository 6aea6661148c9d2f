import Baton
import Foundation

/// A lane as `GET /v1/lanes` shows it: the job holding it, and how many wait behind.
public struct LaneView: Codable, Sendable, Hashable {
    /// The job holding the lane.
    public struct Head: Codable, Sendable, Hashable {
        public var id: Int64
        public var queue: String
        public var state: JobState
        public var stage: Int
        public var task: String?
        public var attempts: Int
        /// When it runs (again): for a retrying head, when the lane may move.
        public var runAt: Date
        public var lastError: String?

        public init(
            id: Int64, queue: String, state: JobState, stage: Int, task: String?, attempts: Int, runAt: Date,
            lastError: String?
        ) {
            self.id = id
            self.queue = queue
            self.state = state
            self.stage = stage
            self.task = task
            self.attempts = attempts
            self.runAt = runAt
            self.lastError = lastError
        }

        public enum CodingKeys: String, CodingKey, CaseIterable {
            case id, queue, state, stage, task, attempts, runAt = "run_at", lastError = "last_error"
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(queue, forKey: .queue)
            try container.encode(state, forKey: .state)
            try container.encode(stage, forKey: .stage)
            try container.encode(task, forKey: .task)
            try container.encode(attempts, forKey: .attempts)
            try container.encode(runAt, forKey: .runAt)
            try container.encode(lastError, forKey: .lastError)
        }
    }

    public var lane: String
    /// Nil only for an instant while the lane changes hands.
    public var head: Head?
    public var headState: JobState?
    public var waiting: Int

    public init(lane: String, head: Head?, waiting: Int) {
        self.lane = lane
        self.head = head
        self.headState = head?.state
        self.waiting = waiting
    }

    /// A lane is blocked when its holder failed and waits to retry: ordered means ordered, so
    /// nothing behind it moves until it succeeds, is discarded or is cancelled.
    public var isBlocked: Bool { head?.state == .retryable }

    public enum CodingKeys: String, CodingKey, CaseIterable {
        case lane, head, waiting, headState = "head_state"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(lane, forKey: .lane)
        try container.encode(head, forKey: .head)
        try container.encode(headState, forKey: .headState)
        try container.encode(waiting, forKey: .waiting)
    }
}

/// A page of `GET /v1/lanes`, by lane name.
public struct LanePage: Codable, Sendable, Hashable {
    public var lanes: [LaneView]
    public var nextCursor: String?

    public init(lanes: [LaneView], nextCursor: String?) {
        self.lanes = lanes
        self.nextCursor = nextCursor
    }

    public enum CodingKeys: String, CodingKey { case lanes, nextCursor = "next_cursor" }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(lanes, forKey: .lanes)
        try container.encode(nextCursor, forKey: .nextCursor)
    }
}
