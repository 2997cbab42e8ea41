// Memory before the end, so that a process killed by the OOM killer is reported as such: a
// sampler thread (every `Configuration.memorySampleInterval`, 5 s by default) keeps the last 60
// readings of the process's RSS and its memory cgroup's usage in `sessions/<id>.session.memory`,
// beside the session file, with the cgroup's limit and its OOM-kill counters (and its ancestors', since a
// restarted container gets a new cgroup in the same pod) as they were at start. When the next launch
// finds the session ended without a record (SIGKILL), a counter that rose since means the OOM killer
// ended it: the abnormal-termination report says `oom_kill`, with the limit and the timeline.
// cgroup v2 (memory.current, memory.max, memory.events) and v1 (memory.usage_in_bytes,
// memory.limit_in_bytes, memory.oom_control) both; outside any limited cgroup, RSS alone.
import CCrashCapture
import CrashReportModel
import Foundation
import Glibc

/// The memory cgroup this process is in, found from /proc/self/cgroup and /proc/self/mountinfo.
struct MemoryCgroup: Equatable {
    var version: Int
    /// The cgroup's folder, e.g. /sys/fs/cgroup/system.slice/api.service.
    var directory: String
    /// Its folder and its ancestors' (nearest first, at most 4, the root excluded).
    var lineage: [String]

    var usageFile: String { directory + (version == 2 ? "/memory.current" : "/memory.usage_in_bytes") }
    var limitFile: String { directory + (version == 2 ? "/memory.max" : "/memory.limit_in_bytes") }
    static func eventsFile(_ directory: String, version: Int) -> String {
        directory + (version == 2 ? "/memory.events" : "/memory.oom_control")
    }

    /// A small file's text (cgroup and /proc files) through open/read. `String(contentsOfFile:)`,
    /// `trimmingCharacters` and `components(separatedBy:)` here were the first use of that
    /// Foundation code in a launch: ~4 ms of CPU on the pipeline's thread while the app started
    /// (perf of 15 launches of the release Hummingbird example, 2026-11-27).
    static func text(_ path: String) -> String? {
        (try? readFile(path)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The number a cgroup or /proc file holds, ASCII white space around it ignored.
    static func number(_ text: Substring) -> Int? {
        HostMetadata.asciiTrimmed(text.utf8).flatMap { Int(text[$0]) }
    }

    static func current() -> MemoryCgroup? {
        guard let cgroups = text("/proc/self/cgroup"), let mounts = text("/proc/self/mountinfo") else { return nil }
        let (v1Mount, v2Mount) = memoryMounts(mountinfo: mounts)
        var v1Path: String?, v2Path: String?
        for line in cgroups.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3 else { continue }
            if parts[0] == "0" && parts[1].isEmpty { v2Path = String(parts[2]) }
            if parts[1].split(separator: ",").contains("memory") { v1Path = String(parts[2]) }
        }
        // A hybrid host mounts both: the memory controller is where v1 has it.
        if let mount = v1Mount, let path = v1Path, let cgroup = make(version: 1, mount: mount, path: path) { return cgroup }
        if let mount = v2Mount, let path = v2Path, let cgroup = make(version: 2, mount: mount, path: path) { return cgroup }
        return nil
    }

    /// Where the v1 memory controller and the v2 hierarchy are mounted, from /proc/self/mountinfo.
    static func memoryMounts(mountinfo mounts: String) -> (v1: String?, v2: String?) {
        // mountinfo: "id parent major:minor root mountpoint options … - fstype source superoptions"
        // (spaces in paths are written \040, so the fields split on single spaces).
        var v1Mount: String?, v2Mount: String?
        for line in mounts.split(separator: "\n") {
            let all = line.split(separator: " ", omittingEmptySubsequences: false)
            guard all.count > 6, let dash = all[6...].firstIndex(of: "-") else { continue }   // after the six fixed fields
            let fields = all[..<dash], tail = all[(dash + 1)...]
            guard fields.count >= 5, let type = tail.first else { continue }
            if type == "cgroup2" { v2Mount = String(fields[4]) }
            if type == "cgroup", tail.count >= 3, tail[tail.startIndex + 2].split(separator: ",").contains("memory") { v1Mount = String(fields[4]) }
        }
        return (v1Mount, v2Mount)
    }

    private static func make(version: Int, mount: String, path: String) -> MemoryCgroup? {
        let directory = path == "/" ? mount : mount + path
        guard access(directory + (version == 2 ? "/memory.current" : "/memory.usage_in_bytes"), R_OK) == 0 else { return nil }
        var lineage: [String] = []
        var components = path.split(separator: "/").map(String.init)
        while !components.isEmpty && lineage.count < 4 {
            lineage.append(mount + "/" + components.joined(separator: "/"))
            components.removeLast()
        }
        return MemoryCgroup(version: version, directory: directory, lineage: lineage)
    }

    /// The OOM-kill counter of the cgroup at `directory` ("oom_kill N" in either version's file).
    static func oomKills(_ directory: String, version: Int) -> Int? {
        guard let text = text(eventsFile(directory, version: version)) else { return nil }
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, parts[0] == "oom_kill" { return Int(parts[1]) }
        }
        return nil
    }

    /// The limit in bytes, nil when there is none ("max" in v2, a page-rounded huge value in v1).
    func limitBytes() -> Int? {
        guard let text = Self.text(limitFile), let value = Self.number(text[...]), value < Int(1) << 60 else { return nil }
        return value
    }
}

/// Samples memory off the hot path into the sidecar file. One per process. The file is written once
/// at start (a header slot, then `keptSamples` empty sample slots) and each sample then overwrites
/// one slot in place with pwrite: no temporary file that an exit or a SIGKILL could leave behind,
/// and a sample written after a clean end (which unlinks the file) goes nowhere.
final class MemorySampler: @unchecked Sendable {
    static let keptSamples = 60
    static let headerBytes = 2048
    static let slotBytes = 128
    private let path: String
    private let interval: Duration
    private let cgroup: MemoryCgroup?
    private var fd: Int32 = -1
    private var taken = 0

    /// `sidecar`: sessions/<id>.session.memory.
    init(sidecar: String, interval: Duration) {
        path = sidecar
        self.interval = interval
        cgroup = MemoryCgroup.current()
    }

    func start() {
        var context = RecordLine(.memory_context)
        if let cgroup {
            context = context.string("cgroup", cgroup.directory).integer("cgroup_version", cgroup.version)
            if let limit = cgroup.limitBytes() { context = context.integer("limit_bytes", limit) }
            let counters = cgroup.lineage.compactMap { directory in
                MemoryCgroup.oomKills(directory, version: cgroup.version).map {
                    #"{"cgroup":\#(CrashReporter.quoted(directory)),"oom_kill":\#($0)}"#
                }
            }
            context = context.json("oom_kill_counters", "[" + counters.joined(separator: ",") + "]")
        }
        var header = Array(context.text.utf8)
        guard header.count < Self.headerBytes else { return }   // cgroup paths of absurd length: no timeline
        header += [UInt8](repeating: UInt8(ascii: " "), count: Self.headerBytes - 1 - header.count) + [UInt8(ascii: "\n")]
        let blank = [UInt8](repeating: UInt8(ascii: " "), count: Self.slotBytes - 1) + [UInt8(ascii: "\n")]
        // Made while the session runs, under the lock a clean end takes (see ccr_session.c), so that
        // an exit on another thread never leaves it behind.
        guard ccr_session_sidecar_begin() == 1 else { return }
        defer { ccr_session_sidecar_end() }
        // Whole before it has its name: a SIGKILL during creation leaves no half-written sidecar.
        let temporary = path + ".tmp"
        fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return }
        guard CrashReporter.writeAll(fd, Data(header + Array([[UInt8]](repeating: blank, count: Self.keptSamples).joined()))),
              rename(temporary, path) == 0 else {
            close(fd)
            unlink(temporary)
            fd = -1
            return
        }
        sample()
        let thread = Thread { [self] in
            ccr_threads_mark_reporter("crash-memory", 1)   // it only samples: named for gdb and top -H
            while true {
                let components = interval.components
                var pause = timespec(tv_sec: Int(components.seconds), tv_nsec: Int(components.attoseconds / 1_000_000_000))
                var remaining = timespec()
                while nanosleep(&pause, &remaining) != 0 && errno == EINTR { pause = remaining }
                guard ccr_session_sidecar_begin() == 1 else { return }   // the session ended cleanly
                ccr_session_sidecar_end()
                sample()
            }
        }
        thread.qualityOfService = .utility
        thread.start()
    }

    private func sample() {
        var line = RecordLine(.memory_sample).unsigned("timestamp_ns", CrashReporter.wallClockNanoseconds())
        if let rss = Self.residentBytes() { line = line.integer("rss_bytes", rss) }
        if let cgroup, let text = MemoryCgroup.text(cgroup.usageFile), let usage = MemoryCgroup.number(text[...]) {
            line = line.integer("cgroup_bytes", usage)
        }
        var bytes = Array(line.text.utf8)
        guard bytes.count < Self.slotBytes else { return }
        bytes += [UInt8](repeating: UInt8(ascii: " "), count: Self.slotBytes - 1 - bytes.count) + [UInt8(ascii: "\n")]
        let offset = Self.headerBytes + (taken % Self.keptSamples) * Self.slotBytes
        taken += 1
        _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
    }

    /// Resident set size from /proc/self/statm (its second field, in pages).
    static func residentBytes() -> Int? {
        guard let text = MemoryCgroup.text("/proc/self/statm") else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count >= 2, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// What the next launch makes of a dead session's sidecar.
enum MemoryVerdict {
    /// "oom_kill" when one of the recorded cgroups counts more OOM kills now than at start, else
    /// "abnormal"; and the sidecar's lines to carry into the record.
    static func classify(sidecar: String) -> (kind: String, lines: [String]) {
        guard let text = try? String(contentsOfFile: sidecar, encoding: .utf8) else { return ("abnormal", []) }
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard let first = lines.first, let header = try? JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any],
              header["type"] as? String == RecordLineType.memory_context.rawValue else { return ("abnormal", []) }
        // The ring's slots, oldest first.
        let samples = lines.dropFirst().compactMap { line -> (UInt64, String)? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  object["type"] as? String == RecordLineType.memory_sample.rawValue, let time = object["timestamp_ns"] as? NSNumber else { return nil }
            return (time.uint64Value, line)
        }.sorted { $0.0 < $1.0 }.map(\.1)
        let version = header["cgroup_version"] as? Int ?? 2
        let counters = header["oom_kill_counters"] as? [[String: Any]] ?? []
        let killed = counters.contains { counter in
            guard let directory = counter["cgroup"] as? String, let before = counter["oom_kill"] as? Int,
                  let now = MemoryCgroup.oomKills(directory, version: version) else { return false }
            return now > before
        }
        return (killed ? "oom_kill" : "abnormal", [first] + samples)
    }
}
