import Baton
import BatonAPI
import BatonPostgres

extension API {
    /// `POST /v1/jobs/{id}/signals/{name}`: the payload becomes the output of the job's stage that
    /// awaits `name`. With an admin token (checked before), or with the signal's one-time token
    /// (`?token=`, which then decides alone).
    func deliverSignal(_ input: Operations.DeliverSignal.Input) async throws -> Operations.DeliverSignal.Output {
        let id = try Self.jobID(input.path.id)
        let name = input.path.name
        do {
            try ChainDefinition.checkSignalName(name, path: "name")
        } catch {
            throw Problem.invalid(error)
        }
        // A `?token=` is judged alone (the access middleware let it through); else the caller is
        // an admin.
        if let token = input.query.token {
            guard try await client.signalTokens.verify(token, job: id, signal: name) else {
                throw Problem(
                    .unauthorized, type: "unauthorized", title: "The signal token is not valid here",
                    detail: "this token does not deliver signal \"\(name)\" to job \(id)")
            }
        } else {
            try await checkJobInScope(id)
        }
        guard case .json(let payload) = input.body else { throw Problem.invalid("", "the body must be JSON") }
        do {
            let (delivery, state) = try await client.deliver(name, to: id, payload: payload, by: actor)
            return .ok(
                .init(
                    body: .json(
                        .init(job: id, signal: name, outcome: .init(rawValue: delivery.rawValue)!, state: .init(state)))
                ))
        } catch let error as BatonError {
            throw Problem.invalid(error)
        } catch SignalRefusal.noJob {
            throw Problem.notFound("no job has id \(id)")
        } catch let refusal as SignalRefusal {
            throw Problem.conflict(refusal.description)
        }
    }
}
