import Foundation

/// CPU time used so far (user and system, seconds): by this process, the bench's producer and
/// worker, and, when the bench runs its own PostgreSQL, by that server's processes (those alive,
/// and those it has reaped). Two samples around the run give the CPU per job on each side, which
/// says which of the two a run is bound by on a machine they share.
struct CPUTime {
    var baton: Double
    var postgres: Double?

    /// Now; `postmaster`: the private server's first process, read from its data directory.
    static func now(postmaster: Int32?) -> CPUTime {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let baton =
            Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
        return CPUTime(baton: baton, postgres: postmaster.flatMap(serverSeconds))
    }

    /// The postmaster's own time and its reaped children's, and each live child's.
    private static func serverSeconds(_ postmaster: Int32) -> Double? {
        guard let own = stat(postmaster) else { return nil }
        var ticks = own.user + own.system + own.reapedChildren
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for name in processes {
            guard let pid = Int32(name), pid != postmaster, let child = stat(pid), child.parent == postmaster else {
                continue
            }
            ticks += child.user + child.system
        }
        return Double(ticks) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Fields of `/proc/PID/stat` (man 5 proc), read after the command name, which may hold
    /// spaces and parentheses.
    private static func stat(_ pid: Int32) -> (parent: Int32, user: Int, system: Int, reapedChildren: Int)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = text.lastIndex(of: ")")
        else { return nil }
        // From field 3 (state) on: ppid is field 4, utime 14, stime 15, cutime 16, cstime 17.
        let fields = text[text.index(after: end)...].split(separator: " ")
        guard fields.count > 14, let parent = Int32(fields[1]), let user = Int(fields[11]),
            let system = Int(fields[12]), let childUser = Int(fields[13]), let childSystem = Int(fields[14])
        else { return nil }
        return (parent, user, system, childUser + childSystem)
    }

    /// The first line of `postmaster.pid` in `dataDirectory`.
    static func postmaster(in dataDirectory: URL) -> Int32? {
        guard let text = try? String(contentsOf: dataDirectory.appending(path: "postmaster.pid"), encoding: .utf8)
        else { return nil }
        return text.split(separator: "\n").first.flatMap { Int32($0) }
    }
}
