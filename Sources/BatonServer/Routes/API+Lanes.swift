import Baton
import BatonAPI
import BatonPostgres
import Foundation

/// `/v1/lanes` and `/v1/lane-settings`: what holds and waits in each lane, and how wide lanes are.
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
    /// in the same transaction).
    func setLaneSetting(_ input: Operations.SetLaneSetting.Input) async throws -> Operations.SetLaneSetting.Output {
        guard case .json(let request) = input.body else { throw Problem.invalid("", "the body must be JSON") }
        let lane = try Self.laneName(input.path.lane)
        guard LaneSetting.widths.contains(request.width) else {
            throw Problem.invalid(
                "width",
                "a lane's width is \(LaneSetting.widths.lowerBound) to \(LaneSetting.widths.upperBound), not \(request.width)"
            )
        }
        if try await laneSetting(lane)?.source == .settings { throw Self.laneOwnedBySettings(lane) }
        try await store.setLaneWidth(request.width, lane: lane)
        RequestScope.logger.notice("lane width set", metadata: ["lane": .string(lane), "width": "\(request.width)"])
        guard let saved = try await laneSetting(lane) else { throw Problem.notFound("no setting for lane \"\(lane)\"") }
        return .ok(.init(body: .json(.init(saved))))
    }

    func deleteLaneSetting(_ input: Operations.DeleteLaneSetting.Input) async throws
        -> Operations.DeleteLaneSetting.Output
    {
        let lane = try Self.laneName(input.path.lane)
        guard let setting = try await laneSetting(lane) else {
            throw Problem.notFound("no setting for lane \"\(lane)\"")
        }
        guard setting.source == .api else { throw Self.laneOwnedBySettings(lane) }
        try await store.setLaneWidth(nil, lane: lane)
        RequestScope.logger.notice("lane width deleted", metadata: ["lane": .string(lane)])
        return .noContent(.init())
    }

    private func laneSetting(_ lane: String) async throws -> LaneSetting? {
        try await store.laneSettings().first { $0.lane == lane }
    }

    private static func laneName(_ name: String) throws -> String {
        do {
            try ChainDefinition.checkName(name, path: "lane", what: "lane")
        } catch {
            throw Problem.invalid(error)
        }
        return name
    }

    private static func laneOwnedBySettings(_ lane: String) -> Problem {
        Problem.conflict("the setting of lane \"\(lane)\" is defined in the settings file: change it there")
    }
}
