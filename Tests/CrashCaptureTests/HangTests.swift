// Hang detection (Configuration.hangs): fixtures whose heartbeat stops (threshold 300 ms), as
// subprocesses. Durations are asserted only as lower bounds the fixture guarantees (a worker that
// beat, slept 1.5 s, then beat again).
import CrashReportModel
import CrashTestSupport
import Foundation
import Glibc
import Testing

@Suite("Hangs")
struct HangTests {
    func workerTID(_ output: String) -> Int32? {
        output.split(separator: "\n").first { $0.hasPrefix("worker-tid ") }.flatMap { Int32($0.dropFirst("worker-tid ".count)) }
    }

    @Test("a worker blocked past the threshold: a hang report with its stack first, every other thread, the breadcrumbs, and the hang's duration once it beats again", arguments: BuildConfiguration.allCases)
    func hangThenResume(_ configuration: BuildConfiguration) throws {
        let run = try FixtureRun.run("hang-then-resume", configuration)
        #expect(run.exitStatus == 0, "stdout: \(run.standardOutput) stderr: \(run.standardError.prefix(800))")
        let worker = try #require(workerTID(run.standardOutput))
        let record = try run.onlyRecord()
        let hang = try #require(record.hang)
        #expect(hang.name == "worker")
        #expect(hang.threadID == worker)
        #expect(record.thread?.id == worker, "the hung thread is the record's first")
        #expect(hang.ageMilliseconds >= 300)
        #expect((hang.durationMilliseconds ?? 0) >= 1500, "it slept 1.5 s between two beats: \(String(describing: hang.durationMilliseconds))")
        #expect(record.hasEnd && record.problems.isEmpty, "\(record.problems)")
        #expect(record.otherThreads.contains { $0.thread.isMain && $0.state == "answered" && !$0.frames.isEmpty })
        #expect(record.breadcrumbs.contains { $0.message == "before the hang" })
        #expect(record.signal == nil)
        let frames = try LLVMSymbolizer.symbolize(record)
        _ = checkOrder(["sleepThrough", "blockedInHang"], in: frames)
        let (status, text, _) = try crashtool(["symbolicate", run.pendingRecords[0].path])
        #expect(status == 0)
        #expect(text.contains("Hang:      worker did not respond for"), "crashtool: \(text.prefix(600))")
        #expect(text.contains("Hung thread \(worker)"))
    }

    @Test("a SIGABRT that comes while an asked thread walks its stack for a hang report: recorded at once by frame pointers, not left to the watchdog", arguments: BuildConfiguration.allCases)
    func abortDuringAskedWalk(_ configuration: BuildConfiguration) throws {
        // The thread's libunwind walk holds libunwind's cache lock when the signal comes (the test
        // knob sends it from inside that walk); a second walk on the same thread would wait for
        // that lock until the watchdog ended the process.
        let run = try FixtureRun.run("hang-then-resume", configuration,
                                     environment: ["CRASH_REPORTING_TEST_MISBEHAVIOUR": "abort-during-asked-walk"])
        #expect(run.terminatedBySignal == SIGABRT, "stderr: \(run.standardError.prefix(800))")
        let record = try run.onlyRecord()
        #expect(record.signal?.name == "SIGABRT")
        #expect(record.watchdog == nil, "the watchdog had to finish the record: \(String(describing: record.watchdog))")
        #expect(record.stack?.unwinder == "frame-pointer (crash during a libunwind walk)",
                "\(String(describing: record.stack))")
        #expect(record.hasEnd && !record.frames.isEmpty)
    }

    @Test("a crash while threads are still in their hang answers: they answer the crash too (the hang capture's memory is its own)")
    func crashDuringHangAnswers() throws {
        let run = try FixtureRun.run("crash-during-hang-answers", .debug,
                                     environment: ["CRASH_REPORTING_TEST_MISBEHAVIOUR": "threads-stay-after-hang-answer"])
        #expect(run.terminatedBySignal == SIGSEGV, "stdout: \(run.standardOutput) stderr: \(run.standardError.prefix(800))")
        let worker = try #require(workerTID(run.standardOutput))
        let crash = try run.onlyRecord()
        #expect(crash.signal?.name == "SIGSEGV")
        #expect(crash.hasEnd && crash.problems.isEmpty, "\(crash.problems)")
        // The worker and the main thread were held in their handlers after answering the hang
        // capture, their own signal blocked: they answered the crash from there.
        let workerThread = try #require(crash.otherThreads.first { $0.thread.id == worker }, "\(crash.otherThreads.map(\.thread))")
        #expect(workerThread.state == "answered" && !workerThread.frames.isEmpty)
        #expect(crash.otherThreads.contains { $0.thread.isMain && $0.state == "answered" && !$0.frames.isEmpty })
        let frames = try LLVMSymbolizer.symbolize(crash)
        _ = checkOrder(["crashAfterHangCapture"], in: frames)
        // The hang report was whole before the crash, the hung thread first, every thread answered.
        let hang = try validatedRecord(at: try #require(run.newFiles.first, "no hang record in new/"))
        #expect(hang.hang?.threadID == worker && hang.thread?.id == worker)
        #expect(hang.hasEnd)
        #expect(hang.otherThreads.contains { $0.thread.isMain && $0.state == "answered" })
    }

    @Test("a block stuck on the main queue (the main actor's): a hang of the \"main queue\" heartbeat, the thread draining it first, resolved")
    func mainQueueHang() throws {
        let run = try FixtureRun.run("main-thread-hang", .debug)
        #expect(run.exitStatus == 0, "stdout: \(run.standardOutput) stderr: \(run.standardError.prefix(800))")
        let record = try run.onlyRecord()
        let hang = try #require(record.hang)
        #expect(hang.name == "main queue")
        // After dispatchMain() a dispatch thread drains the main queue, not the process's first.
        #expect(hang.threadID != 0 && record.thread?.id == hang.threadID, "the thread that beat it is the record's first")
        #expect((hang.durationMilliseconds ?? 0) >= 1500, "it blocked 1.5 s: \(String(describing: hang.durationMilliseconds))")
        _ = checkOrder(["sleepThrough", "blockedInHang"], in: try LLVMSymbolizer.symbolize(record))
    }

    @Test("hang detection is on by default in a release build (2 s) and off in a debug build", arguments: BuildConfiguration.allCases)
    func defaultByBuild(_ configuration: BuildConfiguration) throws {
        let run = try FixtureRun.run("hang-default", configuration)
        #expect(run.exitStatus == 0)
        #expect(run.standardOutput.contains(configuration == .release ? "hangs 2000\n" : "hangs off\n"), "\(run.standardOutput)")
    }

    @Test("a process killed during a hang (a liveness probe): the next launch sends the hang as unresolved and its abnormal termination names it")
    func hangThenKill() throws {
        let directory = temporaryFolder("hang-kill")
        // "hung" once the report is whole in new/ (the fixture waits for it, bounded).
        let (process, said) = try FixtureRun.startUntil("hang-then-wait-for-kill", line: "hung", reportsDirectory: directory)
        #expect(said.contains("hung\n"), "fixture said: \(said)")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()

        let relaunch = try FixtureRun.run("relaunch", .debug, reportsDirectory: directory)
        #expect(relaunch.standardOutput.contains("processed"))
        let records = try relaunch.pendingRecords.map { try validatedRecord(at: $0) }
        let hangRecord = try #require(records.first { $0.hang != nil }, "records: \(relaunch.pendingRecords.map(\.lastPathComponent))")
        #expect(hangRecord.hang?.name == "worker")
        #expect(hangRecord.hang?.durationMilliseconds == nil, "never resumed")
        let termination = try #require(records.first { $0.termination != nil })
        #expect(termination.terminationAfterHang?.name == "worker")
        #expect(termination.terminationAfterHang?.reportID == hangRecord.id)
    }

    @Test("every cooperative pool thread blocked: a hang of the \"cooperative pool\" heartbeat, with the blocking tasks' stacks")
    func poolStarvation() throws {
        let run = try FixtureRun.run("pool-starvation", .debug)
        #expect(run.exitStatus == 0, "stdout: \(run.standardOutput) stderr: \(run.standardError.prefix(800))")
        let record = try run.onlyRecord()
        #expect(record.hang?.name == "cooperative pool")
        #expect((record.hang?.durationMilliseconds ?? 0) > 0)
        var blocked = 0
        for other in [record.frames] + record.otherThreads.map(\.frames) where !other.isEmpty {
            var alone = record
            alone.frames = other
            if try LLVMSymbolizer.symbolize(alone).contains(where: { $0.mentions("blockPoolThread") }) { blocked += 1 }
        }
        #expect(blocked >= 1, "no thread in blockPoolThread")
    }

    @Test("a hang report reaches the collector as kind \"hang\", the hung thread first, valid against the schema")
    func hangUploaded() throws {
        let scenario = try UploadScenario("hang")
        let hung = try scenario.run("hang-then-resume")
        #expect(hung.exitStatus == 0)
        let worker = try #require(workerTID(hung.standardOutput))
        let next = try scenario.run("upload-pass")
        #expect(try uploadStatus(next)["failure"] == "none")
        try scenario.expectAllValid()
        let state = try scenario.state()
        #expect(state.uniqueKeys.count == 1)
        let payload = try #require(state.stored.last?.payload)
        let report = try #require((payload["crash_reports"] as? [[String: Any]])?.first)
        #expect(report["kind"] as? String == "hang")
        #expect(report["exception_type"] as? String == "hang")
        #expect((report["exception_message"] as? String)?.hasPrefix("worker did not respond for") == true)
        let first = try #require((report["thread_info"] as? [[String: Any]])?.first)
        #expect(first["id"] as? Int == Int(worker))
    }
}
