// How `start` behaves around errors and process ends, observed from outside the process.
import CrashReportModel
import CrashTestSupport
import Foundation
import Glibc
import Testing

@Suite("Start and process lifecycle")
struct LifecycleTests {
    @Test("bad directory and second start throw clear errors and install nothing extra")
    func startErrors() throws {
        let run = try FixtureRun.run("start-errors", .debug)
        #expect(run.exitStatus == 0)
        let lines = run.standardOutput.split(separator: "\n").map(String.init)
        try #require(lines.count == 3, "output: \(run.standardOutput)")
        #expect(lines[0] == "unusable-directory: reportsDirectoryUnusable: cannot create /etc/hostname/crashes: Not a directory | handler-changed=false started=false")
        #expect(lines[1] == "first-start: ok | handler-changed=true started=true")
        #expect(lines[2] == "second-start: alreadyStarted: CrashReporter.start was already called in this process | handler-changed=true started=true")
        #expect(run.pendingRecords.isEmpty)
        #expect(run.newFiles.isEmpty)
    }

    @Test("a clean exit leaves nothing behind", arguments: BuildConfiguration.allCases)
    func cleanExit(_ configuration: BuildConfiguration) throws {
        let run = try FixtureRun.run("clean-exit", configuration)
        #expect(run.exitStatus == 0)
        #expect(run.pendingRecords.isEmpty)
        #expect(run.newFiles.isEmpty)
    }

    @Test("a killed process's unused record file is removed by the next start, its session reported as abnormal")
    func killedThenRestarted() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("crash-fixture-killed-\(UUID().uuidString.prefix(8))")
        let binary = BuildConfiguration.debug.fixtureURL
        let process = Process()
        process.executableURL = binary
        process.arguments = ["wait-for-kill", directory.path]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let ready = out.fileHandleForReading.availableData
        #expect(String(decoding: ready, as: UTF8.self) == "ready\n")
        #expect(FixtureRun.files(in: directory.appendingPathComponent("new")).count == 1)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL)
        #expect(FixtureRun.files(in: directory.appendingPathComponent("new")).count == 1, "SIGKILL leaves the file")

        // "relaunch" waits for the next launch's background work: whether it ran before the exit
        // is not left to chance.
        let next = try FixtureRun.run("relaunch", .debug, reportsDirectory: directory)
        #expect(next.exitStatus == 0)
        #expect(next.newFiles.isEmpty)
        let record = try next.onlyRecord()
        #expect(record.termination?.kind == "abnormal" && record.frames.isEmpty, "only the killed session's report")
    }

    @Test("collection enabled or not is remembered across launches")
    func collectionSwitchPersists() throws {
        let directory = temporaryFolder("collection")
        var seen: [String] = []
        for _ in 0..<3 {
            let run = try FixtureRun.run("collection-toggle", .debug, reportsDirectory: directory)
            #expect(run.exitStatus == 0)
            seen.append(run.standardOutput)
        }
        #expect(seen == ["enabled=true\n", "enabled=false\n", "enabled=true\n"])
    }

    @Test("a record cut short in new/ is moved to pending/ by the next start and read as partial")
    func abandonedPartialRecordIsKept() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("crash-fixture-partial-\(UUID().uuidString.prefix(8))")
        let newFolder = directory.appendingPathComponent("new")
        try FileManager.default.createDirectory(at: newFolder, withIntermediateDirectories: true)
        let partial = """
            {"format":"swift-crash-reporting.crash-record","version":1,"id":"abc","app_id":"x","app_version":"","pid":1,"timestamp_ns":1,"arch":"x86_64"}
            {"type":"signal","signo":11,"name":"SIGSEGV","code":1,"code_name":"SEGV_MAPERR","fault_address":"0x0"}
            {"type":"frame","index":0,"address":"0x1234","ki
            """
        try Data(partial.utf8).write(to: newFolder.appendingPathComponent("abc.crash"))

        let run = try FixtureRun.run("clean-exit", .debug, reportsDirectory: directory)
        #expect(run.exitStatus == 0)
        // Not onlyRecord(): its schema check would refuse the line this test cuts on purpose.
        #expect(run.pendingRecords.count == 1)
        let record = try CrashRecord(contentsOf: try #require(run.pendingRecords.first))
        #expect(record.id == "abc")
        #expect(record.isPartial)
        #expect(record.signal?.number == 11)
        #expect(record.problems.count == 1)
    }
}
