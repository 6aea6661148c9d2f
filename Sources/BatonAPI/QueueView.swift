import Baton
import Foundation

/// One queue as `GET /v1/queues` shows it.
public struct QueueView: Codable, Sendable, Hashable {
    /// Jobs of the queue in each state.
    public struct Counts: Codable, Sendable, Hashable {
        public var scheduled = 0
        public var available = 0
        public var running = 0
        public var retryable = 0
        public var waiting = 0
        public var completed = 0
        public var discarded = 0
        public var cancelled = 0

        public init() {}

        public subscript(state: JobState) -> Int {
            get {
                switch state {
                case .scheduled: scheduled
                case .available: available
                case .running: running
                case .retryable: retryable
                case .waiting: waiting
                case .completed: completed
                case .discarded: discarded
                case .cancelled: cancelled
                }
            }
            set {
                switch state {
                case .scheduled: scheduled = newValue
                case .available: available = newValue
                case .running: running = newValue
                case .retryable: retryable = newValue
                case .waiting: waiting = newValue
                case .completed: completed = newValue
                case .discarded: discarded = newValue
                case .cancelled: cancelled = newValue
                }
            }
        }
    }

    public var name: String
    public var paused: Bool
    public var counts: Counts
    /// When the oldest available job became due: how long the queue has kept work waiting.
    public var oldestAvailableAt: Date?
    public var oldestAvailableAgeSeconds: Double?

    public init(
        name: String, paused: Bool, counts: Counts, oldestAvailableAt: Date?, oldestAvailableAgeSeconds: Double?
    ) {
        self.name = name
        self.paused = paused
        self.counts = counts
        self.oldestAvailableAt = oldestAvailableAt
        self.oldestAvailableAgeSeconds = oldestAvailableAgeSeconds
    }

    public enum CodingKeys: String, CodingKey, CaseIterable {
        case name, paused, counts
        case oldestAvailableAt = "oldest_available_at", oldestAvailableAgeSeconds = "oldest_available_age_seconds"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(paused, forKey: .paused)
        try container.encode(counts, forKey: .counts)
        try container.encode(oldestAvailableAt, forKey: .oldestAvailableAt)
        try container.encode(oldestAvailableAgeSeconds, forKey: .oldestAvailableAgeSeconds)
    }
}

/// The answer to `GET /v1/queues`.
public struct QueueList: Codable, Sendable, Hashable {
    public var queues: [QueueView]

    public init(queues: [QueueView]) { self.queues = queues }
}

/// The answer to `POST /v1/queues/{name}/pause` and `/resume`.
public struct QueuePauseState: Codable, Sendable, Hashable {
    public var name: String
    public var paused: Bool

    public init(name: String, paused: Bool) {
        self.name = name
        self.paused = paused
    }
}
