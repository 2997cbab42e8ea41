// OOM kills told apart from other SIGKILLs: a fixture allocates inside a memory cgroup made here
// with a 64 MiB limit until the kernel's OOM killer ends it; the next launch reports `oom_kill`
// with the limit and the memory samples before the end. The same cgroup, a SIGKILL sent by hand:
// `abnormal`. Needs a memory cgroup this process can create (root, cgroup v1's memory hierarchy or
// v2 with the memory controller delegated); elsewhere the tests are skipped, and say why.
import CrashReportModel
import CrashTestSupport
import Foundation
import Glibc
import Testing

/// A memory cgroup created for one test, removed by `remove()`.
struct TestMemoryCgroup {
    let directory: String
    let version: Int

    /// Where a child cgroup with a memory limit can be made here, or nil.
    static let parent: (directory: String, version: Int)? = {
        if access("/sys/fs/cgroup/memory/cgroup.procs", W_OK) == 0 { return ("/sys/fs/cgroup/memory", 1) }
        for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
            if let controls = try? String(contentsOfFile: root + "/cgroup.subtree_control", encoding: .utf8),
               controls.split(separator: " ").contains(where: { $0.trimmingCharacters(in: .whitespacesAndNewlines) == "memory" }),
               access(root + "/cgroup.procs", W_OK) == 0 {
                return (root, 2)
            }
        }
        return nil
    }()

    init(limitBytes: Int) throws {
        let parent = try #require(Self.parent)
        directory = parent.directory + "/crash-reporting-test-" + UUID().uuidString.prefix(8).lowercased()
        version = parent.version
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        try "\(limitBytes)".write(toFile: directory + (version == 2 ? "/memory.max" : "/memory.limit_in_bytes"),
                                  atomically: false, encoding: .utf8)
        if version == 2 { try? "0".write(toFile: directory + "/memory.swap.max", atomically: false, encoding: .utf8) }
    }

    func remove() { rmdir(directory) }

    /// Runs the fixture in this cgroup (the shell joins it, then execs) and returns the process.
    func start(_ fixture: URL, _ mode: String, reports: URL, environment: [String: String] = [:], until marker: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", #"echo $$ > "$0/cgroup.procs" && exec "$1" "$2" "$3""#, directory, fixture.path, mode, reports.path]
        process.environment = ["SWIFT_BACKTRACE": "enable=no"].merging(environment) { $1 }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        // "allocating" / "ready": the reporter has started in the cgroup.
        var seen = Data()
        let deadline = ContinuousClock.now + .seconds(30)
        while !String(decoding: seen, as: UTF8.self).contains(marker + "\n") && ContinuousClock.now < deadline {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        return process
    }
}

@Suite("Memory: OOM kills")
struct MemoryTests {
    @Test("a process the OOM killer ends is reported as oom_kill, with its cgroup's limit and the memory before the end",
          .enabled(if: TestMemoryCgroup.parent != nil, "no memory cgroup can be created here (not root, or no memory controller)"))
    func oomKill() throws {
        let cgroup = try TestMemoryCgroup(limitBytes: 64 << 20)
        defer { cgroup.remove() }
        let reports = temporaryFolder("oom-kill")
        let process = try cgroup.start(BuildConfiguration.debug.fixtureURL, "allocate-until-killed", reports: reports, until: "allocating")
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL)

        let record = try relaunch(reports)
        #expect(record.termination?.kind == "oom_kill")
        let memory = try #require(record.memory)
        #expect(memory.cgroup == cgroup.directory)
        #expect(memory.limitBytes == 64 << 20)
        #expect(memory.samples.count >= 2, "\(memory.samples.count) samples")
        #expect(zip(memory.samples, memory.samples.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp })
        // Growing towards the limit: the last sample holds more than the first.
        let usage = memory.samples.compactMap(\.cgroupBytes)
        #expect(usage.count == memory.samples.count && usage.last! > usage.first!, "\(usage)")
        #expect(memory.samples.allSatisfy { ($0.residentBytes ?? 0) > 0 })
        #expect(record.breadcrumbs.contains { $0.message == "allocating until killed" })
    }

    @Test("a SIGKILL sent by hand in the same kind of cgroup stays abnormal",
          .enabled(if: TestMemoryCgroup.parent != nil, "no memory cgroup can be created here (not root, or no memory controller)"))
    func sigkillIsNotOOM() throws {
        let cgroup = try TestMemoryCgroup(limitBytes: 256 << 20)
        defer { cgroup.remove() }
        let reports = temporaryFolder("sigkill-in-cgroup")
        let process = try cgroup.start(BuildConfiguration.debug.fixtureURL, "context-then-wait-for-kill", reports: reports,
                                       environment: ["CRASH_FIXTURE_BREADCRUMBS": "10"], until: "ready")
        // Killed once the sampler has written its sidecar (it starts with start's background work).
        let sessions = reports.appendingPathComponent("sessions").path
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline,
              !((try? FileManager.default.contentsOfDirectory(atPath: sessions)) ?? []).contains(where: { $0.hasSuffix(".memory") }) {
            usleep(5_000)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL)
        let record = try relaunch(reports)
        #expect(record.termination?.kind == "abnormal")
        #expect(record.memory?.cgroup == cgroup.directory, "the sampler ran; the counter did not move")
        #expect(record.memory?.limitBytes == 256 << 20)
    }
}
