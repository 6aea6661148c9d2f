import BatonTestSupport
import Foundation
import LocalPostgres
import Testing

/// The private PostgreSQL of `baton dev` and the tests.
@Suite struct LocalPostgresTests {
    /// Stopping returns once the server has gone, not at its 30 s deadline: here the server is a
    /// zombie until PID 1 reaps it, and a container's PID 1 may never do so.
    /// A port for a test's server lies below the ephemeral range, so that no outgoing connection
    /// takes it as its source port and, while the server is stopped, connects to itself.
    @Test func aFreePortIsNoEphemeralOne() throws {
        let range = try String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
        let lowest = try #require(range.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) })
        for _ in 0..<50 { #expect(try LocalPostgres.freePort() < lowest) }
    }

    @Test func stoppingReturnsOnceTheServerHasGoneAndLeavesNothingBehind() async throws {
        for blocking in [false, true] {
            let cluster = try await LocalPostgres.start(LocalPostgres.Options(fast: true))
            let took = await ContinuousClock().measure {
                if blocking {
                    // On a thread of its own, as an exit handler runs it: never on one that runs tasks.
                    await withCheckedContinuation { stopped in
                        Thread.detachNewThread {
                            cluster.stop()
                            stopped.resume()
                        }
                    }
                } else {
                    await cluster.shutdown()
                }
            }
            #expect(took < .seconds(15), "stopping took \(took)")
            #expect(!FileManager.default.fileExists(atPath: cluster.socketDirectory.deletingLastPathComponent().path))
        }
    }
}
