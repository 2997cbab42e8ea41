// All threads at a crash (Docs/Decisions/0010): the named-threads fixture starts four named
// threads, each waiting in a function of its own, and one that blocks every signal; then the
// main thread crashes. The record must list each of them, after the crashed thread, with its
// name, and each named thread's own function among its frames (read by llvm-symbolizer).
import CrashReportModel
import CrashTestSupport
import Foundation
import Glibc
import Testing

@Suite("All threads at a crash")
struct AllThreadsTests {
    /// One name holds a backslash: the kernel writes it doubled in the status file names are read
    /// from, and the record must give it once. Another starts with a tab, which must be kept.
    static let named = [("fixture-alpha", "waitInAlpha"), ("\tfixture-beta", "waitInBeta"),
                        (#"fixture\gamma"#, "waitInGamma"), ("fixture-delta", "waitInDelta")]

    @Test("every thread is listed with its name and its own stack, the crashed one first", arguments: BuildConfiguration.allCases)
    func namedThreads(_ configuration: BuildConfiguration) throws {
        // Every named thread must answer: the wait is the longest the handler allows (half of what is
        // left of the watchdog's 2 s), not the default 250 ms, which a busy machine's scheduling
        // could outlast. The wait ends when the last thread answers.
        let run = try FixtureRun.run("named-threads-then-crash", configuration,
                                     environment: ["CRASH_FIXTURE_PRINT_THREAD_NAMES": "1", "CRASH_FIXTURE_THREAD_WAIT_MS": "5000"])
        let record = try run.onlyRecord()
        try checkCompleteRecord(record, run: run, signal: SIGSEGV)
        #expect(record.version == 2)
        // Only threads that make no threads and queue no work carry a "crash-" name of their own:
        // Linux threads inherit their creator's name, and a libdispatch worker made while the hang
        // monitor queued its heartbeat was listed as an app thread called "crash-hangs".
        let ownNames = try #require(run.standardError.split(separator: "\n").first { $0.hasPrefix("thread-names: ") })
            .dropFirst("thread-names: ".count).split(separator: "|").map(String.init)
        #expect(ownNames.filter { $0.hasPrefix("crash-") }.allSatisfy { ["crash-watchdog", "crash-memory"].contains($0) }, "\(ownNames)")

        // The crashed thread is the first thread line, marked crashed; its frames are the level chain.
        let text = try String(contentsOf: run.pendingRecords[0], encoding: .utf8)
        let threadLines = text.split(separator: "\n").filter { $0.hasPrefix(#"{"type":"thread","#) }
        #expect(threadLines.first?.contains(#""crashed":true"#) == true)
        #expect(threadLines.dropFirst().allSatisfy { $0.contains(#""crashed":false"#) })
        #expect(record.thread?.isMain == true)
        let crashedFrames = try LLVMSymbolizer.symbolize(record)
        _ = checkOrder(["cfs_write_null_pointer", "level5", "level4", "level3", "level2", "level1"], in: crashedFrames)

        // Main, the watchdog, the uploader, four named threads and the masked one, at least.
        #expect(record.otherThreads.count >= 6, "threads: \(record.otherThreads.map(\.thread.name))")
        #expect(!record.otherThreads.contains { $0.thread.id == record.thread?.id })
        let summary = try #require(record.threadsSummary)
        #expect(summary.listed == record.otherThreads.count + 1)
        #expect(summary.answered >= 4)

        for (name, function) in Self.named {
            let other = try #require(record.otherThreads.first { $0.thread.name == name }, "no thread named \(name)")
            #expect(other.state == "answered")
            #expect(other.stack?.unwinder == "libunwind")
            #expect(other.frames.first?.kind == .programCounter)
            var alone = record
            alone.frames = other.frames
            let frames = try LLVMSymbolizer.symbolize(alone)
            #expect(frames.contains { $0.mentions(function) }, "\(name) should be in \(function):\n\(describe(frames))")
            for (_, otherFunction) in Self.named where otherFunction != function {
                #expect(!frames.contains { $0.mentions(otherFunction) }, "\(name) shows \(otherFunction)")
            }
        }
        let masked = try #require(record.otherThreads.first { $0.thread.name == "fixture-masked" })
        #expect(masked.state == "blocked_signal")
        // It cannot be asked; while it waits in a system call its stack is scanned from the sp and
        // pc the kernel gives (a thread caught between two calls has none). It waits under a
        // 9000-byte frame, so startNamedThreads' closure is found only past the scan's first two
        // 4 KiB windows.
        if !masked.frames.isEmpty {
            #expect(masked.stack?.unwinder == "stack-scan")
            var alone = record
            alone.frames = masked.frames
            #expect(try LLVMSymbolizer.symbolize(alone).contains { $0.mentions("startNamedThreads") })
        }
        // This library's own threads (the watchdog, the pipeline, the memory sampler) are listed, not asked.
        let reporters = record.otherThreads.filter { $0.state == "crash_reporter" }
        #expect(reporters.count >= 2 && reporters.allSatisfy { $0.frames.isEmpty }, "\(reporters.map(\.thread.name))")
        // The record gives their names (written, not read from /proc; the pipeline and the hang
        // monitor do not rename themselves).
        let names = Set(reporters.map(\.thread.name))
        #expect(names.isSubset(of: ["crash-watchdog", "crash-pipeline", "crash-hangs", "crash-memory"]), "\(names)")
        #expect(names.contains("crash-watchdog") && names.contains("crash-pipeline"), "\(names)")
        let misnamed = record.otherThreads.filter { $0.thread.name.hasPrefix("crash-") && $0.state != "crash_reporter" }
        #expect(misnamed.isEmpty, "\(misnamed.map { "\($0.thread.name) \($0.state ?? "-") frames: \($0.frames.count)" })")
    }

    @Test("a thread whose libunwind walk is not done by the deadline keeps its frame-pointer walk")
    func framePointerWalkAtDeadline() throws {
        let run = try FixtureRun.run("named-threads-then-crash", .debug, environment: [
            "CRASH_REPORTING_TEST_MISBEHAVIOUR": "threads-stall-after-frame-pointers", "CRASH_FIXTURE_THREAD_WAIT_MS": "100",
        ])
        let record = try run.onlyRecord()
        try checkCompleteRecord(record, run: run, signal: SIGSEGV)
        #expect(record.watchdog == nil)
        for (name, _) in Self.named {
            let other = try #require(record.otherThreads.first { $0.thread.name == name })
            #expect(other.state == "answered")
            #expect(other.stack?.unwinder == "frame-pointer")
            #expect(other.frames.first?.kind == .programCounter)
        }
        let summary = try #require(record.threadsSummary)
        #expect(summary.waitNanoseconds >= 100_000_000, "waited \(summary.waitNanoseconds) ns")
    }

    @Test("threads that never answer are listed as such, and the wait is bounded by the watchdog's budget")
    func neverAnswer() throws {
        // Asked for 5 s; the watchdog's 2 s budget allows at most half of what is left (about 1 s).
        let run = try FixtureRun.run("named-threads-then-crash", .debug, environment: [
            "CRASH_REPORTING_TEST_MISBEHAVIOUR": "threads-never-answer", "CRASH_FIXTURE_THREAD_WAIT_MS": "5000",
        ])
        let record = try run.onlyRecord()
        try checkCompleteRecord(record, run: run, signal: SIGSEGV)
        #expect(record.watchdog == nil, "the watchdog finished the record")
        for (name, _) in Self.named {
            let other = try #require(record.otherThreads.first { $0.thread.name == name })
            #expect(other.state == "no_answer")
            // No walk of its own; its stack is scanned from the system call it waits in, if any.
            #expect(other.frames.isEmpty || other.stack?.unwinder == "stack-scan")
        }
        #expect(record.otherThreads.first { $0.thread.name == "fixture-masked" }?.state == "blocked_signal")
        let summary = try #require(record.threadsSummary)
        #expect(summary.answered == 0)
        // Asked for 5 s, it waited about half of the watchdog's 2 s. No upper bound on the time
        // (a late wake-up on a busy machine moves it): a wait past the budget would have let the
        // watchdog finish the record, which `record.watchdog == nil` above rules out.
        #expect(summary.waitNanoseconds >= 500_000_000, "waited \(summary.waitNanoseconds) ns")
    }

    @Test("when another handler took the signal since start, threads are listed but not asked")
    func signalTaken() throws {
        let run = try FixtureRun.run("named-threads-then-crash", .debug, environment: ["CRASH_FIXTURE_TAKE_THREAD_SIGNAL": "1"])
        let record = try run.onlyRecord()
        try checkCompleteRecord(record, run: run, signal: SIGSEGV)
        let summary = try #require(record.threadsSummary)
        #expect(summary.signalTaken)
        #expect(summary.asked == 0 && summary.answered == 0)
        for (name, _) in Self.named {
            let other = try #require(record.otherThreads.first { $0.thread.name == name })
            #expect(other.state == "not_asked")
            #expect(other.frames.isEmpty || other.stack?.unwinder == "stack-scan", "not asked: no walk of its own")
        }
    }

    @Test("a thread that crashes while another's crash is recorded is listed as crashed too, with the stack where it crashed", arguments: BuildConfiguration.allCases)
    func crashedToo(_ configuration: BuildConfiguration) throws {
        // Two workers fault together; the one-crash guard lets one record. The test knob makes the
        // recording thread list the threads only once the other's crash is noted (at most 5 s), so
        // the record is the one of two crashes at once, whatever the scheduler does.
        let run = try FixtureRun.run("concurrent-crashes", configuration,
                                     environment: ["CRASH_REPORTING_TEST_MISBEHAVIOUR": "wait-for-second-crash", "CRASH_FIXTURE_THREAD_WAIT_MS": "5000"])
        let record = try run.onlyRecord()
        try checkCompleteRecord(record, run: run, signal: SIGSEGV)
        #expect(record.thread?.name == "fixture-worker")
        let second = try #require(record.otherThreads.first { $0.crashedToo != nil }, "\(record.otherThreads.map { ($0.thread.name, $0.state) })")
        #expect(record.otherThreads.filter { $0.crashedToo != nil }.count == 1)
        #expect(second.thread.name == "fixture-worker" && second.thread.id != record.thread?.id)
        #expect(second.crashedToo?.number == SIGSEGV && second.crashedToo?.code == 1 && second.crashedToo?.faultAddress == Address(0))
        // Its frames are where it crashed, not the handler it waited in.
        #expect(second.state == "answered")
        var alone = record
        alone.frames = second.frames
        let frames = try LLVMSymbolizer.symbolize(alone)
        #expect(frames.first?.mentions("cfs_write_null_pointer") == true, "\(describe(frames))")
        if configuration == .debug {   // -O makes cfs_write_null_pointer a tail call of crashTogether's
            #expect(frames.contains { $0.mentions("crashTogether") }, "\(describe(frames))")
        }
        #expect(frames.count >= 3, "\(describe(frames))")
        #expect(!frames.contains { $0.mentions("wait_for_other_crash") || $0.mentions("ccr_signal_handler") }, "\(describe(frames))")
        let (status, text, _) = try crashtool(["symbolicate", run.pendingRecords[0].path])
        #expect(status == 0)
        #expect(text.contains("Crashed too, while this crash was being recorded: SIGSEGV at 0x0"), "\(text)")
    }

    @Test("a process out of file descriptors still lists its threads; without the held descriptor, the record says they are unknown")
    func outOfDescriptors() throws {
        let run = try FixtureRun.run("named-threads-then-crash", .debug,
                                     environment: ["CRASH_FIXTURE_USE_UP_DESCRIPTORS": "1", "CRASH_FIXTURE_THREAD_WAIT_MS": "5000"])
        let record = try run.onlyRecord()
        try checkCompleteRecord(record, run: run, signal: SIGSEGV)
        let summary = try #require(record.threadsSummary)
        #expect(summary.listErrno == nil)
        for (name, _) in Self.named {
            #expect(record.otherThreads.contains { $0.thread.name == name && $0.state == "answered" }, "no answer from \(name)")
        }

        let kept = try FixtureRun.run("named-threads-then-crash", .debug,
                                      environment: ["CRASH_FIXTURE_USE_UP_DESCRIPTORS": "1", "CRASH_REPORTING_TEST_MISBEHAVIOUR": "threads-spare-kept"])
        let unknown = try kept.onlyRecord()
        #expect(kept.terminatedBySignal == SIGSEGV)
        #expect(unknown.threadsSummary?.listErrno == Int(EMFILE))
        #expect(unknown.otherThreads.isEmpty)
        let (status, text, _) = try crashtool(["symbolicate", kept.pendingRecords[0].path])
        #expect(status == 0)
        #expect(text.contains("Other threads: unknown (/proc/self/task could not be opened at the crash: errno 24, EMFILE"), "\(text)")
    }

    @Test("a main thread that exited (a zombie) is listed as exited, not asked", arguments: BuildConfiguration.allCases)
    func zombieMainThread(_ configuration: BuildConfiguration) throws {
        let run = try FixtureRun.run("named-threads-then-crash", configuration, environment: ["CRASH_FIXTURE_MAIN_EXITS": "1"])
        let record = try run.onlyRecord()
        try checkCompleteRecord(record, run: run, signal: SIGSEGV)
        #expect(record.thread?.isMain == false)
        // Every read of the process's memory still works with its main thread gone (by the
        // process's id, process_vm_readv answers ESRCH then): the modules' build-ids were read
        // again (checkCompleteRecord), the stack walked, the module lines' ranges kept.
        #expect(record.modules.allSatisfy { $0.end > $0.start }, "\(record.modules.filter { $0.end <= $0.start }.map(\.path))")
        let crashed = try LLVMSymbolizer.symbolize(record)
        _ = checkOrder(["cfs_write_null_pointer", "crash_once_main_is_a_zombie"], in: crashed)
        // The thread that blocks every signal is scanned with process_vm_readv: past its pc, its
        // callers are found (it waits in a system call; one caught between two has no frames).
        let masked = try #require(record.otherThreads.first { $0.thread.name == "fixture-masked" })
        if !masked.frames.isEmpty {
            var alone = record
            alone.frames = masked.frames
            #expect(try LLVMSymbolizer.symbolize(alone).contains { $0.mentions("startNamedThreads") }, "\(masked.frames.count) frames")
        }
        let main = try #require(record.otherThreads.first { $0.thread.isMain }, "\(record.otherThreads.map(\.thread.id))")
        #expect(main.state == "exited")
        #expect(main.frames.isEmpty)
        // Not asked: it could never answer. The named threads still are.
        #expect(record.threadsSummary.map { $0.asked >= Self.named.count } == true)
    }

    @Test("threads beyond the limit are counted, and the report says how many were not listed")
    func beyondTheLimit() throws {
        let run = try FixtureRun.run("named-threads-then-crash", .debug, environment: ["CRASH_FIXTURE_MAX_THREADS": "3"])
        let record = try run.onlyRecord()
        try checkCompleteRecord(record, run: run, signal: SIGSEGV)
        let summary = try #require(record.threadsSummary)
        #expect(record.otherThreads.count == 3 && summary.listed == 4)
        #expect(summary.total >= summary.listed + 4, "\(summary)")   // 7 others at least: the named four, the masked one, the reporter's two
        let (status, text, _) = try crashtool(["symbolicate", run.pendingRecords[0].path])
        #expect(status == 0)
        #expect(text.contains("Other threads: \(summary.total - summary.listed) more not listed (\(summary.total) in the process"), "\(text)")
    }

    @Test("with threads turned off the record lists the crashed thread only")
    func threadsOff() throws {
        let run = try FixtureRun.run("named-threads-then-crash", .debug, environment: ["CRASH_FIXTURE_THREADS_OFF": "1"])
        let record = try run.onlyRecord()
        try checkCompleteRecord(record, run: run, signal: SIGSEGV)
        #expect(record.otherThreads.isEmpty)
        #expect(record.threadsSummary == nil)
    }
}
