import Baton
import BatonAPI
import BatonPostgres
import Foundation

/// `/v1/lanes`, `/v1/lane-settings` and `/v1/rate-limits`: flow control. What holds and waits in
/// each lane, how wide lanes are, and how often the stages of a key may start.
extension API {
    /// `GET /v1/lanes`: each lane's head (a holder waiting to retry, else the oldest), how many
    /// hold it and may, and how many jobs wait; by lane name, `limit` at a time.
    func listLanes(_ input: Operations.ListLanes.Input) async throws -> Operations.ListLanes.Output {
        let limit = try Self.limit(input.query.limit, default: 100)
        var after: String?
        if let key = try Cursor.decode(input.query.cursor) {
            guard key.hasPrefix("lane:") else {
                throw Problem.invalid("cursor", "cursor is not one this server handed out")
            }
            after = String(key.dropFirst(5))
        }
        let lanes = try await store.lanes(after: after, limit: limit + 1, blocked: input.query.blocked ?? false)
        let page = lanes.prefix(limit)
        let next = lanes.count > limit ? Cursor.encode("lane:" + page.last!.lane) : nil
        return .ok(.init(body: .json(.init(lanes: page.map(Components.Schemas.Lane.init), nextCursor: next))))
    }

    func listLaneSettings(_ input: Operations.ListLaneSettings.Input) async throws
        -> Operations.ListLaneSettings.Output
    {
        .ok(
            .init(body: .json(.init(settings: try await store.laneSettings().map(Components.Schemas.LaneSetting.init))))
        )
    }

    /// `PUT /v1/lane-settings/{lane}`: takes effect at once (a wider lane admits its waiting stages
    /// in the same transaction). The lane's name and the width are checked by the store (400 naming
    /// `lane` or `width`).
    func setLaneSetting(_ input: Operations.SetLaneSetting.Input) async throws -> Operations.SetLaneSetting.Output {
        guard case .json(let request) = input.body else { throw Problem.invalid("", "the body must be JSON") }
        let lane = input.path.lane
        if try await laneSetting(lane)?.source == .settings {
            throw Problem.ownedBySettings("the setting of lane \"\(lane)\"")
        }
        try await store.setLaneWidth(request.width, lane: lane, by: actor)
        RequestScope.logger.notice("lane width set", metadata: ["lane": .string(lane), "width": "\(request.width)"])
        guard let saved = try await laneSetting(lane) else { throw Problem.notFound("no setting for lane \"\(lane)\"") }
        return .ok(.init(body: .json(.init(saved))))
    }

    func deleteLaneSetting(_ input: Operations.DeleteLaneSetting.Input) async throws
        -> Operations.DeleteLaneSetting.Output
    {
        let lane = try Self.name(input.path.lane, "lane") ?? ""
        guard let setting = try await laneSetting(lane) else {
            throw Problem.notFound("no setting for lane \"\(lane)\"")
        }
        guard setting.source == .api else { throw Problem.ownedBySettings("the setting of lane \"\(lane)\"") }
        try await store.setLaneWidth(nil, lane: lane, by: actor)
        RequestScope.logger.notice("lane width deleted", metadata: ["lane": .string(lane)])
        return .noContent(.init())
    }

    private func laneSetting(_ lane: String) async throws -> LaneSetting? {
        try await store.laneSettings().first { $0.lane == lane }
    }

    // MARK: rate limits

    func listRateLimits(_ input: Operations.ListRateLimits.Input) async throws -> Operations.ListRateLimits.Output {
        .ok(.init(body: .json(.init(rateLimits: try await store.rateLimits().map(Components.Schemas.RateLimit.init)))))
    }

    /// `PUT /v1/rate-limits/{key}`: in effect at the next claim. The key, rate, period's range and
    /// burst are checked by the store (400 naming the field).
    func setRateLimit(_ input: Operations.SetRateLimit.Input) async throws -> Operations.SetRateLimit.Output {
        guard case .json(let request) = input.body else { throw Problem.invalid("", "the body must be JSON") }
        let key = input.path.key
        guard let per = DurationFormat.parse(request.per) else {
            throw Problem.invalid("per", "per is a period from 1ms to 31d, such as \"1s\", \"1m\" or \"1h\"")
        }
        if try await rateLimit(key)?.source == .settings {
            throw Problem.ownedBySettings("the rate limit \"\(key)\"")
        }
        try await store.setRateLimit(RateLimit(key: key, rate: request.rate, per: per, burst: request.burst), by: actor)
        RequestScope.logger.notice(
            "rate limit set",
            metadata: ["key": .string(key), "rate": "\(request.rate)", "per": .string(request.per)])
        guard let saved = try await rateLimit(key) else { throw Problem.notFound("no rate limit for \"\(key)\"") }
        return .ok(.init(body: .json(.init(saved))))
    }

    func deleteRateLimit(_ input: Operations.DeleteRateLimit.Input) async throws -> Operations.DeleteRateLimit.Output {
        let key = try Self.name(input.path.key, "key") ?? ""
        guard let limit = try await rateLimit(key) else { throw Problem.notFound("no rate limit for \"\(key)\"") }
        guard limit.source == .api else { throw Problem.ownedBySettings("the rate limit \"\(key)\"") }
        try await store.deleteRateLimit(key, by: actor)
        RequestScope.logger.notice("rate limit deleted", metadata: ["key": .string(key)])
        return .noContent(.init())
    }

    private func rateLimit(_ key: String) async throws -> RateLimit? {
        try await store.rateLimits().first { $0.key == key }
    }
}
