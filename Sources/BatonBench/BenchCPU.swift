import Foundation
import LocalPostgres

/// CPU time used so far (user and system, seconds): by this process, the bench's producer and
/// worker, and, when the bench runs its own PostgreSQL, by that server's processes (those alive,
/// and those it has reaped). Two samples around the run give the CPU per job on each side, which
/// says which of the two a run is bound by on a machine they share.
struct CPUTime {
    var baton: Double
    var postgres: Double?

    /// Now; `postmaster`: the private server's first process.
    static func now(postmaster: pid_t?) -> CPUTime {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let baton =
            Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
        return CPUTime(baton: baton, postgres: postmaster.flatMap(serverSeconds))
    }

    /// The postmaster's own time and its reaped children's, and each live child's. Fields of
    /// `/proc/PID/stat` from the state on: ppid 1, utime 11, stime 12, cutime 13, cstime 14.
    private static func serverSeconds(_ postmaster: pid_t) -> Double? {
        func ticks(_ stat: [Substring], _ fields: [Int]) -> Int { fields.reduce(0) { $0 + (Int(stat[$1]) ?? 0) } }
        guard let own = LocalPostgres.processStat(postmaster), own.count > 14 else { return nil }
        var total = ticks(own, [11, 12, 13, 14])
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(name), pid != postmaster, let stat = LocalPostgres.processStat(pid),
                stat.count > 12, pid_t(stat[1]) == postmaster
            else { continue }
            total += ticks(stat, [11, 12])
        }
        return Double(total) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
