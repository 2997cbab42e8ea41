// Every crash fixture, in debug and release, run as a subprocess: it must die by the expected
// signal, leave exactly one complete record, and that record's frames must read (through
// llvm-symbolizer, an independent oracle) as the fixture's known stack down to level1.
import CrashReportModel
import CrashTestSupport
import Foundation
import Glibc
import Testing

/// What a fixture's record must show.
struct CrashExpectation: Sendable {
    var signal: Int32
    var code: Int32?
    /// A function that frame 0's inline chain must mention.
    var frame0: String? = nil
    /// Names (functions or modules, innermost first) that must appear in order before level5.
    var innerFrames: [String] = []
    var levels = true
    var fatalMessage: String? = nil
    var crashedOnMainThread = true
    var threadName: String? = nil
}

struct FixtureCase: Sendable, CustomTestStringConvertible {
    var name: String
    var configuration: BuildConfiguration
    var expectation: CrashExpectation
    var testDescription: String { "\(name) (\(configuration))" }
}

let SEGV_MAPERR_CODE: Int32 = 1
let SI_TKILL_CODE: Int32 = -6
let SI_KERNEL_CODE: Int32 = 0x80

func expectation(for name: String, _ configuration: BuildConfiguration) -> CrashExpectation {
    let debug = configuration == .debug
    switch name {
    case "null-pointer-write":
        return .init(signal: SIGSEGV, code: SEGV_MAPERR_CODE, frame0: "cfs_write_null_pointer")
    case "abort-from-c":
        return .init(signal: SIGABRT, code: SI_TKILL_CODE, frame0: "libc", innerFrames: ["libc", "cfs_abort"])
    case "array-index-out-of-range":
        return debug
            ? .init(signal: SIGILL, code: 2, innerFrames: ["indexOutOfRange"], fatalMessage: "Index out of range")
            : .init(signal: SIGILL, code: 2, frame0: "Swift runtime failure: Index out of range", innerFrames: ["indexOutOfRange"])
    case "force-unwrap-nil":
        return debug
            ? .init(signal: SIGILL, code: 2, innerFrames: ["forceUnwrap"], fatalMessage: "Unexpectedly found nil")
            : .init(signal: SIGILL, code: 2, frame0: "Swift runtime failure: Unexpectedly found nil", innerFrames: ["forceUnwrap"])
    case "fatal-error":
        return .init(signal: SIGILL, code: 2, innerFrames: ["callFatalError"], fatalMessage: "Fatal error: fixture: the ledger does not balance")
    case "integer-division-by-zero":
        return .init(signal: SIGFPE, code: 1 /* FPE_INTDIV */, frame0: "cfs_divide")
    case "truncated-mapping-bus-error":
        return .init(signal: SIGBUS, code: 2 /* BUS_ADRERR */, frame0: "cfs_touch_truncated_mapping")
    case "trap-instruction":
        return .init(signal: SIGTRAP, code: SI_KERNEL_CODE, frame0: "cfs_trap_instruction")
    case "background-thread-crash", "concurrent-crashes":
        return .init(signal: SIGSEGV, code: SEGV_MAPERR_CODE, frame0: "cfs_write_null_pointer",
                     crashedOnMainThread: false, threadName: "fixture-worker")
    case "task-crash":
        return .init(signal: SIGSEGV, code: SEGV_MAPERR_CODE, frame0: "cfs_write_null_pointer", crashedOnMainThread: false)
    case "qsort-comparator-crash":
        return .init(signal: SIGSEGV, code: SEGV_MAPERR_CODE, frame0: "cfs_write_null_pointer",
                     innerFrames: ["crashInComparator", "libc", "sortWithCrashingComparator"])
    case "previous-handler-chained":
        return .init(signal: SIGSEGV, code: SEGV_MAPERR_CODE, frame0: "cfs_write_null_pointer")
    case "force-crash":
        return .init(signal: SIGILL, code: 2, innerFrames: ["forceCrash"], fatalMessage: "CrashReporter.forceCrash() was called")
    case "null-function-pointer-call":
        // Frame 0 is pc 0 (no function there); the unwind starts from the return address at [sp].
        return .init(signal: SIGSEGV, code: SEGV_MAPERR_CODE, innerFrames: ["cfs_call_null_function_pointer"])
    case "seccomp-trapped-system-call":
        return .init(signal: SIGSYS, code: 1 /* SYS_SECCOMP */, innerFrames: ["cfs_trapped_system_call"])
    default:
        fatalError("no expectation for \(name)")
    }
}

let standardFixtures = [
    "null-pointer-write", "abort-from-c", "array-index-out-of-range", "force-unwrap-nil", "fatal-error",
    "integer-division-by-zero", "truncated-mapping-bus-error", "trap-instruction", "background-thread-crash",
    "task-crash", "qsort-comparator-crash", "previous-handler-chained", "concurrent-crashes",
    "seccomp-trapped-system-call", "null-function-pointer-call",
]

let standardCases: [FixtureCase] = BuildConfiguration.allCases.flatMap { configuration in
    standardFixtures.map { FixtureCase(name: $0, configuration: configuration, expectation: expectation(for: $0, configuration)) }
} + [FixtureCase(name: "force-crash", configuration: .debug, expectation: expectation(for: "force-crash", .debug))]

/// Checks shared by every complete record: signal, frame 0 = the faulting pc, modules real.
func checkCompleteRecord(_ record: CrashRecord, run: FixtureRun, signal: Int32) throws {
    #expect(run.terminatedBySignal == signal, "exit: signal \(run.terminatedBySignal.map(String.init) ?? "none"), status \(run.exitStatus.map(String.init) ?? "none")")
    #expect(record.hasEnd, "record has no end line")
    #expect(record.problems.isEmpty, "unreadable lines: \(record.problems)")
    #expect(record.signal?.number == signal)
    // A fault address only for a signal the CPU raised; a sent one (abort's tgkill) names its sender.
    if let raised = record.signal, raised.code > 0 {
        #expect(raised.faultAddress != nil && raised.senderPID == nil)
    } else {
        #expect(record.signal?.faultAddress == nil && record.signal?.senderPID == record.processID, "\(String(describing: record.signal))")
    }
    #expect(record.appID == "com.example.crash-fixture")
    #expect(run.newFiles.isEmpty, "new/ still holds \(run.newFiles.map(\.lastPathComponent))")
    let frame0 = try #require(record.frames.first)
    #expect(frame0.kind == .programCounter)
    #expect(frame0.address == record.registers["rip"], "frame 0 is not the faulting instruction")
    #expect(record.frames.count <= 50)
    #expect(record.durableNanoseconds != nil)
    try checkModules(record)
}

/// Every module with a file on disk has the build-id the record says.
func checkModules(_ record: CrashRecord) throws {
    let executable = try #require(record.modules.first, "no modules recorded")
    #expect(executable.path.hasSuffix("/CrashFixture"))
    var checked = 0
    for module in record.modules where FileManager.default.fileExists(atPath: module.path) {
        let onDisk = BuildID(elfFileAtPath: module.path)
        #expect(onDisk == (module.buildID.isEmpty ? nil : module.buildID), "build-id of \(module.path)")
        checked += 1
    }
    #expect(checked >= 3, "only \(checked) modules had files")
    #expect(record.modules.contains { $0.path.contains("libswiftCore.so") })
}

/// The indices of frames that mention each name, in the order given; fails if any is missing or
/// out of order.
func checkOrder(_ names: [String], in frames: [SymbolizedFrame], after start: Int = -1) -> Int? {
    var last = start
    for name in names {
        guard let index = frames.firstIndex(where: { $0.index > last && $0.mentions(name) }) else {
            Issue.record("\(name) not found after frame \(last) in:\n\(describe(frames))")
            return nil
        }
        last = frames[index].index
    }
    return last
}

func describe(_ frames: [SymbolizedFrame]) -> String {
    frames.map { frame in
        let chain = frame.locations.map { "\($0.function) \(($0.file as NSString).lastPathComponent):\($0.line)" }.joined(separator: " <- ")
        return "#\(frame.index) \((frame.module as NSString).lastPathComponent) \(chain)"
    }.joined(separator: "\n")
}

@Suite("Crash fixtures")
struct CrashFixtureTests {
    @Test("record is complete and the stack reads level5…level1", arguments: standardCases)
    func fixture(_ fixture: FixtureCase) throws {
        let expected = fixture.expectation
        let run = try FixtureRun.run(fixture.name, fixture.configuration)
        let record = try run.onlyRecord()
        try checkCompleteRecord(record, run: run, signal: expected.signal)
        if let code = expected.code { #expect(record.signal?.code == code) }
        #expect(record.signal?.stackOverflow == nil, "not a stack overflow")
        #expect(record.stack?.unwinder == "libunwind")
        #expect(record.stack?.isTruncated == false)
        // Nothing was loaded or unloaded since start: the whole list is confirmed in one read.
        #expect(record.moduleTable?.source == "link_map")
        #expect(record.moduleTable?.unchanged == record.modules.count, "\(String(describing: record.moduleTable))")

        let thread = try #require(record.thread)
        #expect(thread.isMain == expected.crashedOnMainThread)
        if let name = expected.threadName { #expect(thread.name == name) }
        if let message = expected.fatalMessage {
            #expect(record.fatalMessage?.contains(message) == true, "fatal message: \(record.fatalMessage ?? "none")")
        }

        let frames = try LLVMSymbolizer.symbolize(record)
        if let name = expected.frame0 {
            #expect(frames[0].mentions(name), "frame 0 should mention \(name):\n\(describe(frames))")
        }
        let innermost = checkOrder(expected.innerFrames, in: frames)
        if expected.levels, let after = innermost {
            _ = checkOrder(["level5", "level4", "level3", "level2", "level1"], in: frames, after: after)
        }
        // Frames the oracle resolves in the fixture must carry its source file and a line.
        let fixtureLines = frames.flatMap(\.locations).filter { $0.function.contains("level") }
        #expect(fixtureLines.count >= 5)
        #expect(fixtureLines.allSatisfy { $0.file.hasSuffix("CrashFixture/main.swift") && $0.line > 0 })

        if fixture.name == "previous-handler-chained" {
            let marker = run.reportsDirectory.appendingPathComponent("previous-handler.marker")
            #expect((try? String(contentsOf: marker, encoding: .utf8)) == "previous handler ran for signal 11\n")
        }
    }

    @Test("stack overflow is recorded from the alternate stack", arguments: BuildConfiguration.allCases, ["main-thread-stack-overflow", "background-thread-stack-overflow"])
    func stackOverflow(_ configuration: BuildConfiguration, _ name: String) throws {
        let run = try FixtureRun.run(name, configuration)
        let record = try run.onlyRecord()
        try checkCompleteRecord(record, run: run, signal: SIGSEGV)
        #expect(record.thread?.isMain == (name == "main-thread-stack-overflow"))
        #expect(record.signal?.stackOverflow == true, "the signal line says stack_overflow")
        let stack = try #require(record.stack)
        #expect(record.frames.count == 50)
        #expect(stack.isTruncated)
        #expect(stack.depth > 1000, "an overflowing stack is deep; depth \(stack.depth)")
        let frames = try LLVMSymbolizer.symbolize(record)
        let recursive = frames.filter { $0.mentions("recurseWithoutEnd") }.count
        #expect(recursive >= 40, "frames:\n\(describe(frames))")
        // The outer frames, with their true indices: the 10 where the recursion's pattern ends (where
        // it was entered, and from where) and the outermost 10, the two merged where they meet.
        #expect((10...20).contains(record.outerFrames.count), "\(record.outerFrames.count) outer frames")
        #expect(record.outerFrames.first.map { $0.index > 50 } == true)
        #expect(zip(record.outerFrames, record.outerFrames.dropFirst()).allSatisfy { $0.index < $1.index })
        if !stack.depthIsLowerBound { #expect(record.outerFrames.last?.index == stack.depth - 1) }
        var outer = record
        outer.frames = record.outerFrames
        let outermost = try LLVMSymbolizer.symbolize(outer)
        // They reach past the recursion to the code that started it, crash(_:), and its callers
        // level5…level1, also on a Thread, whose start takes more than 10 frames in debug builds
        // (the outermost 10 alone began at level4 there).
        #expect(outermost.contains { $0.mentions("level5") } && outermost.contains { $0.mentions("level1") },
                "outer frames:\n\(describe(outermost))")
        if configuration == .debug {
            #expect(outermost.contains { $0.mentions("crash(") }, "outer frames:\n\(describe(outermost))")
        }
    }

    @Test("a crash three awaits deep lists the awaiting callers as async frames, as Swift's backtracer does", arguments: BuildConfiguration.allCases)
    func asyncCallers(_ configuration: BuildConfiguration) throws {
        let run = try FixtureRun.run("async-chain-crash", configuration)
        let record = try run.onlyRecord()
        #expect(record.hasEnd && record.problems.isEmpty)
        // After a suspension the synchronous stack ends in the executor: fetchInvoice's callers are
        // only in its async context chain.
        let synchronous = try LLVMSymbolizer.symbolize(record)
        #expect(!synchronous.contains { $0.mentions("loadOrder") }, "\(describe(synchronous))")
        #expect(record.asyncFrames.count >= 3 && record.asyncFrames.allSatisfy { $0.kind == .async })
        #expect(record.asyncFrames.first?.index == record.stack?.depth, "async frames follow the synchronous ones")
        var awaiting = record
        awaiting.frames = record.asyncFrames
        let callers = try LLVMSymbolizer.symbolize(awaiting)
        _ = checkOrder(["loadOrder", "handleRequest", "runCorpusBug"], in: callers)
        // Marked where a person reads them.
        let (status, text, _) = try crashtool(["symbolicate", run.pendingRecords[0].path])
        #expect(status == 0 && text.contains("[async] loadOrder(_:)") && text.contains("[async] handleRequest(_:)"), "\(text)")
    }

    @Test("a 50-frame cut keeps the innermost frames and the true depth", arguments: BuildConfiguration.allCases)
    func deepStack(_ configuration: BuildConfiguration) throws {
        let run = try FixtureRun.run("deep-stack", configuration)
        let record = try run.onlyRecord()
        try checkCompleteRecord(record, run: run, signal: SIGSEGV)
        let stack = try #require(record.stack)
        #expect(record.frames.count == 50)
        #expect(stack.isTruncated)
        #expect(stack.depthIsLowerBound == false)
        // 61 recursion frames + crash + level1…5 + main + libc start-up frames.
        #expect(stack.depth >= 68 && stack.depth <= 80, "depth \(stack.depth)")
        let frames = try LLVMSymbolizer.symbolize(record)
        #expect(frames[0].mentions("cfs_write_null_pointer"))
        #expect(frames[1...].allSatisfy { $0.mentions("recurseThenCrash") }, "frames:\n\(describe(frames))")
    }

    @Test("forceCrash logs and returns in release builds")
    func forceCrashInRelease() throws {
        let run = try FixtureRun.run("force-crash", .release)
        #expect(run.exitStatus == 0)
        #expect(run.standardOutput.contains("forceCrash returned"))
        #expect(run.standardError.contains("forceCrash() ignored"))
        #expect(run.pendingRecords.isEmpty)
        #expect(run.newFiles.isEmpty)
    }

    @Test("chains to Swift's own backtracer, which still prints its report")
    func chainsToSwiftBacktracer() throws {
        let run = try FixtureRun.run("null-pointer-write", .debug, environment: ["SWIFT_BACKTRACE": "enable=yes,interactive=no,symbolicate=off"])
        let record = try run.onlyRecord()
        try checkCompleteRecord(record, run: run, signal: SIGSEGV)
        #expect(run.standardError.contains("Program crashed"), "stderr: \(run.standardError.prefix(400))")
    }
}

@Suite("Handler failure paths")
struct HandlerFailureTests {
    @Test("a fault inside the handler leaves a minimal record and the process still dies", arguments: BuildConfiguration.allCases)
    func faultInHandler(_ configuration: BuildConfiguration) throws {
        let run = try FixtureRun.run("fault-in-handler", configuration, environment: ["CRASH_REPORTING_TEST_MISBEHAVIOUR": "fault-in-handler"])
        #expect(run.terminatedBySignal == SIGSEGV)
        let record = try run.onlyRecord()
        #expect(record.isPartial)
        #expect(record.signal?.number == SIGSEGV)
        #expect(record.registers["rip"] != nil)
        let nested = try #require(record.nestedCrash)
        #expect(nested.signal == SIGSEGV)
        #expect(nested.stage == 1)
        #expect(record.frames.isEmpty)
        try checkModules(record)   // written with the fixed facts, before the fault
    }

    @Test("without libunwind, start still succeeds and a crash right after it is recorded by frame pointers, saying why", arguments: BuildConfiguration.allCases)
    func withoutLibunwind(_ configuration: BuildConfiguration) throws {
        // libunwind is loaded on the pipeline's thread after start returns; the crash waits for
        // that load, which fails here: the stack comes from the saved frame pointers.
        let run = try FixtureRun.run("null-pointer-write", configuration, environment: ["CRASH_REPORTING_TEST_MISBEHAVIOUR": "libunwind-missing"])
        let record = try run.onlyRecord()
        #expect(record.hasEnd && record.problems.isEmpty, "\(record.problems)")
        #expect(record.stack?.unwinder == "frame-pointer (libunwind not loaded)")
        #expect(run.standardError.contains("cannot load libunwind.so.8"), "stderr: \(run.standardError.prefix(600))")
        #expect(record.moduleTable?.source == "link_map" && record.moduleTable?.unchanged == record.modules.count)
        try checkModules(record)
        _ = checkOrder(["cfs_write_null_pointer"], in: try LLVMSymbolizer.symbolize(record))
    }

    @Test("a NULL function pointer call finished by the watchdog's frame-pointer walk: frame 0 is 0x0, the caller is frame 1")
    func nullPCFramePointerWalk() throws {
        let run = try FixtureRun.run("null-function-pointer-call", .debug, environment: ["CRASH_REPORTING_TEST_MISBEHAVIOUR": "hang-in-handler"])
        let record = try run.onlyRecord()
        #expect(record.watchdog != nil)
        #expect(record.stack?.unwinder == "frame-pointer")
        #expect(record.frames.first?.address == Address(0))
        let frames = try LLVMSymbolizer.symbolize(record)
        let caller = checkOrder(["cfs_call_null_function_pointer", "level5"], in: frames)
        #expect(caller != nil)
        #expect(frames.first { $0.mentions("cfs_call_null_function_pointer") }?.index == 1, "\(describe(frames))")
    }

    @Test("the frame-pointer walk keeps the caller of a frameless leaf (its return address at [sp])", arguments: BuildConfiguration.allCases)
    func framelessLeafCaller(_ configuration: BuildConfiguration) throws {
        // hang-in-handler: the watchdog finishes the record with the frame-pointer walk from the
        // saved context; the leaf left rbp at its caller's frame, so [rbp+8] skips the caller.
        let run = try FixtureRun.run("frameless-leaf-crash", configuration, environment: ["CRASH_REPORTING_TEST_MISBEHAVIOUR": "hang-in-handler"])
        #expect(run.terminatedBySignal == SIGSEGV)
        let record = try run.onlyRecord()
        #expect(record.watchdog != nil)
        #expect(record.stack?.unwinder == "frame-pointer")
        let frames = try LLVMSymbolizer.symbolize(record)
        let leaf = checkOrder(["cfs_frameless_leaf", "cfs_call_frameless_leaf"], in: frames)
        #expect(leaf == 1, "the caller is frame 1:\n\(describe(frames))")
        if configuration == .debug {
            _ = checkOrder(["cfs_call_frameless_leaf", "level5", "level4"], in: frames)
        }
    }

    @Test("libunwind's step from a frame whose unwind info is wrong lands outside every module: an error, and the frame-pointer walk goes on", arguments: BuildConfiguration.allCases)
    func framelessLeafLibunwind(_ configuration: BuildConfiguration) throws {
        // cfs_call_frameless_leaf is naked assembly that pushes a frame its unwind info does not
        // describe: libunwind's step from it gives the saved rbp, a stack address, as the return
        // address (the record used to end there, as a complete stack of 3 frames).
        let run = try FixtureRun.run("frameless-leaf-crash", configuration)
        #expect(run.terminatedBySignal == SIGSEGV)
        let record = try run.onlyRecord()
        #expect(record.watchdog == nil)
        let stack = try #require(record.stack)
        #expect(stack.unwinder == "libunwind+frame-pointer")
        #expect(stack.unwindError == -6, "UNW_EINVALIDIP")
        #expect(stack.depthIsLowerBound)
        let frames = try LLVMSymbolizer.symbolize(record)
        let leaf = checkOrder(["cfs_frameless_leaf", "cfs_call_frameless_leaf"], in: frames)
        #expect(leaf == 1, "the caller is frame 1:\n\(describe(frames))")
        // No frame outside every module (the stack address is gone), and the walk went on past it.
        for frame in record.frames.dropFirst() {
            #expect(record.modules.contains { $0.start <= frame.address && frame.address < $0.end }, "\(frame.address) in no module:\n\(describe(frames))")
        }
        #expect(record.frames.count > 3, "\(describe(frames))")
        if configuration == .debug {
            _ = checkOrder(["cfs_call_frameless_leaf", "level5", "level4"], in: frames)
        }
    }

    @Test("a handler that hangs is finished by the watchdog within its timeout", arguments: BuildConfiguration.allCases)
    func hangInHandler(_ configuration: BuildConfiguration) throws {
        let run = try FixtureRun.run("hang-in-handler", configuration, environment: ["CRASH_REPORTING_TEST_MISBEHAVIOUR": "hang-in-handler"])
        // Ended by its own signal, which only the watchdog can deliver here: a handler left hanging
        // would run until FixtureRun's kill (SIGKILL). No bound on the time (load moves it).
        #expect(run.terminatedBySignal == SIGSEGV, "took \(run.elapsed)")
        let record = try run.onlyRecord()
        let watchdog = try #require(record.watchdog)
        #expect(watchdog.waitedMilliseconds >= 1900)
        #expect(record.stack?.unwinder == "frame-pointer")
        #expect(record.hasEnd)
        #expect(record.frames.first?.address == record.registers["rip"])
        try checkModules(record)
        if configuration == .debug {
            // Debug builds keep frame pointers, so the fallback walk still reads the whole chain.
            let frames = try LLVMSymbolizer.symbolize(record)
            _ = checkOrder(["cfs_write_null_pointer", "level5", "level4", "level3", "level2", "level1"], in: frames)
        }
    }

    @Test("a crash before the watchdog thread exists (start leaves it to the pipeline's thread) is finished by it")
    func hangBeforeWatchdogThread() throws {
        let run = try FixtureRun.run("hang-in-handler", .release, environment: [
            "CRASH_REPORTING_TEST_MISBEHAVIOUR": "hang-in-handler", "CRASH_REPORTING_TEST_WATCHDOG_AFTER_CRASH": "1",
        ])
        #expect(run.terminatedBySignal == SIGSEGV, "took \(run.elapsed)")
        let record = try run.onlyRecord()
        let watchdog = try #require(record.watchdog)
        #expect(watchdog.waitedMilliseconds >= 1900)
        #expect(record.hasEnd)
        #expect(record.frames.first?.address == record.registers["rip"])
    }

    @Test("an app that closes the watchdog's read end, or puts a pipe of its own under its number, loses no byte and sets no thread spinning; a hanging handler is still finished",
          arguments: ["closed", "replaced"])
    func watchdogPipeTakenByApp(_ mode: String) throws {
        // The watchdog looks every 300 ms here; the fixture waits until it has given the number
        // up, then reads the watchdog thread's CPU time over 1 s. Then the handler hangs. Steady
        // state: start's background work done, so that none of it opens a file under the closed
        // number meanwhile.
        let run = try FixtureRun.run("hang-in-handler", .release, environment: [
            "CRASH_REPORTING_TEST_MISBEHAVIOUR": "hang-in-handler", "CRASH_FIXTURE_WATCHDOG_TIMEOUT_MS": "300",
            "CRASH_FIXTURE_WATCHDOG_PIPE": mode, "CRASH_FIXTURE_STEADY_STATE": "1",
        ])
        let line = try #require(run.standardError.split(separator: "\n").first { $0.hasPrefix("watchdog-gave-up ") }, "\(run.standardError)")
        var values: [String: Int] = [:]
        let words = line.split(separator: " ")
        for index in stride(from: 0, to: words.count - 1, by: 2) { values[String(words[index])] = Int(words[index + 1]) }
        #expect(values["watchdog-gave-up"] == 1, "\(line)")
        if mode == "replaced" { #expect(values["app-pipe-bytes-left"] == 9, "the watchdog read the app's bytes: \(line)") }
        // A thread spinning on the number would use most of that second (100 ticks); an idle one, none.
        #expect((values["watchdog-cpu-ticks"] ?? 100) <= 10, "\(line)")
        #expect(run.terminatedBySignal == SIGSEGV, "took \(run.elapsed)")
        let record = try run.onlyRecord()
        let watchdog = try #require(record.watchdog)
        #expect(watchdog.waitedMilliseconds >= 300)
        #expect(record.hasEnd && record.stack?.unwinder == "frame-pointer")
    }

    @Test("an unwinder error is recorded as one, and the walk goes on by frame pointers (debug keeps them)")
    func unwinderError() throws {
        let run = try FixtureRun.run("null-pointer-write", .debug, environment: ["CRASH_REPORTING_TEST_MISBEHAVIOUR": "unwind-step-fails"])
        #expect(run.terminatedBySignal == SIGSEGV)
        let record = try run.onlyRecord()
        #expect(record.hasEnd && record.problems.isEmpty)
        let stack = try #require(record.stack)
        #expect(stack.unwindError == -7 && stack.unwinder == "libunwind+frame-pointer" && stack.depthIsLowerBound, "\(stack)")
        // Three frames from libunwind, the rest from the third frame's saved frame pointer.
        #expect(record.frames.count > 3 && stack.depth == record.frames.count)
        let frames = try LLVMSymbolizer.symbolize(record)
        _ = checkOrder(["cfs_write_null_pointer", "level5", "level4", "level3", "level2", "level1"], in: frames)
        // Said where a person reads it.
        let (status, shown, _) = try crashtool(["show", run.pendingRecords[0].path])
        #expect(status == 0 && shown.contains("libunwind error -7"), "\(shown)")
    }

    @Test("libunwind's signal-mask calls are skipped while a handler of ours walks, and go to libc otherwise", arguments: BuildConfiguration.allCases)
    func unwindMaskCalls(_ configuration: BuildConfiguration) throws {
        let run = try FixtureRun.run("unwind-masks", configuration)
        #expect(run.exitStatus == 0, "\(run.standardError)")
        var values: [String: Int] = [:]
        for field in run.standardOutput.split(whereSeparator: \.isWhitespace) {
            let parts = field.split(separator: "=")
            if parts.count == 2, let value = Int(parts[1]) { values[String(parts[0])] = value }
        }
        #expect(values["redirected"] == 1, "\(run.standardOutput)")
        // The handler's walk reached libc's sigprocmask not once; the same walk outside a handler did
        // (libunwind's cache lock, at least a pair a step), so the count sees libunwind's calls.
        #expect(values["handler-passed"] == 0, "\(run.standardOutput)")
        #expect((values["plain-passed"] ?? 0) >= 2 * (values["plain-steps"] ?? 0), "\(run.standardOutput)")
        #expect((values["handler-frames"] ?? 0) >= 3 && (values["plain-steps"] ?? 0) >= 3, "\(run.standardOutput)")
    }

    @Test("libunwind's memory checks in the crashing thread's walk are guarded copies: the same stack as with its own system calls, and a fault in a check is caught",
          arguments: BuildConfiguration.allCases)
    func unwindChecksByCopy(_ configuration: BuildConfiguration) throws {
        let steady = ["CRASH_FIXTURE_STEADY_STATE": "1"]
        func crash(_ knob: String?) throws -> (CrashRecord, [SymbolizedFrame]) {
            var environment = steady
            if let knob { environment["CRASH_REPORTING_TEST_MISBEHAVIOUR"] = knob }
            let run = try FixtureRun.run("null-pointer-write", configuration, environment: environment)
            #expect(run.terminatedBySignal == SIGSEGV, "took \(run.elapsed)")
            let record = try run.onlyRecord()
            #expect(record.nestedCrash == nil, "a check's fault was taken for a crash in the handler")
            #expect(record.hasEnd && record.problems.isEmpty, "\(record.problems)")
            let frames = try LLVMSymbolizer.symbolize(record)
            #expect(frames.first?.mentions("cfs_write_null_pointer") == true, "frames:\n\(describe(frames))")
            _ = checkOrder(["cfs_write_null_pointer", "level5", "level4", "level3", "level2", "level1"], in: frames)
            return (record, frames)
        }
        let (copied, copiedFrames) = try crash(nil)
        let copiedStack = try #require(copied.stack)
        #expect(copiedStack.unwinder == "libunwind" && copiedStack.unwindError == nil, "\(copiedStack)")
        #expect((copiedStack.copyChecks ?? 0) >= 1 && copiedStack.copyCheckFaults == 0, "\(copiedStack)")
        // libunwind's own checks (mincore, its pipe): the same walk.
        let (kernel, kernelFrames) = try crash("unwind-checks-by-kernel")
        let kernelStack = try #require(kernel.stack)
        #expect(kernelStack.copyChecks == nil && kernelStack.unwinder == "libunwind", "\(kernelStack)")
        #expect(kernelStack.depth == copiedStack.depth && kernel.frames.count == copied.frames.count)
        #expect(kernelFrames.map { $0.locations.map(\.function) } == copiedFrames.map { $0.locations.map(\.function) })
        // The first check made of page 0, which is never mapped: the copy faults, libunwind's read
        // fails, and the walk goes on from the saved frame pointers.
        let (faulted, _) = try crash("unwind-check-faults")
        let faultedStack = try #require(faulted.stack)
        #expect(faultedStack.copyCheckFaults == 1, "the check did not fault: \(faultedStack)")
        #expect(faultedStack.unwinder == "libunwind+frame-pointer" && faultedStack.unwindError != nil && faultedStack.depthIsLowerBound,
                "\(faultedStack)")
    }

    @Test("libunwind's look-ups in the crashing thread's walk come from the module table: the same stack as through the loader's dl_iterate_phdr",
          arguments: BuildConfiguration.allCases)
    func unwindLookupsFromTable(_ configuration: BuildConfiguration) throws {
        func crash(_ knob: String?) throws -> (CrashRecord, [SymbolizedFrame]) {
            var environment = ["CRASH_FIXTURE_STEADY_STATE": "1"]
            if let knob { environment["CRASH_REPORTING_TEST_MISBEHAVIOUR"] = knob }
            let run = try FixtureRun.run("deep-stack", configuration, environment: environment)
            #expect(run.terminatedBySignal == SIGSEGV, "took \(run.elapsed)")
            let record = try run.onlyRecord()
            #expect(record.hasEnd && record.problems.isEmpty, "\(record.problems)")
            return (record, try LLVMSymbolizer.symbolize(record))
        }
        let (table, tableFrames) = try crash(nil)
        let tableStack = try #require(table.stack)
        #expect(tableStack.unwinder == "libunwind" && tableStack.unwindError == nil, "\(tableStack)")
        // Every look-up answered by the table: x86_64's libunwind would go on by the frame pointers
        // after one that found nothing, and the frames below could still agree.
        #expect((tableStack.tableLookups ?? 0) > 0 && tableStack.tableMisses == nil && tableStack.tableScans == nil, "\(tableStack)")
        let (loader, loaderFrames) = try crash("unwind-lookups-by-loader")
        let loaderStack = try #require(loader.stack)
        #expect(loaderStack.tableLookups == nil && loaderStack.tableMisses == nil && loaderStack.unwinder == "libunwind", "\(loaderStack)")
        // The deep-stack fixture's whole walk (a 50-frame record of a 70-frame stack): the same
        // depth, frames, outermost frames and functions both ways.
        #expect(tableStack.depth == loaderStack.depth && tableStack.depth > 50, "\(tableStack) \(loaderStack)")
        #expect(table.frames.count == loader.frames.count && table.outerFrames.count == loader.outerFrames.count)
        #expect(tableFrames.map { $0.locations.map(\.function) } == loaderFrames.map { $0.locations.map(\.function) })
        func offsets(_ record: CrashRecord, _ frames: [CrashRecord.Frame]) -> [UInt64?] {
            frames.map { frame in record.module(containing: frame.lookupAddress).map { frame.address.value &- $0.bias.value } }
        }
        #expect(offsets(table, table.outerFrames) == offsets(loader, loader.outerFrames))
    }

    @Test("a request's screen view and http breadcrumb, which take no add on the session's counter, are listed in the order things happened on two threads with rings of their own",
          arguments: BuildConfiguration.allCases)
    func requestBreadcrumbsInOrderAcrossThreads(_ configuration: BuildConfiguration) throws {
        // CrashFixture request-breadcrumb-order: two fresh threads take turns (semaphore handoffs):
        // a request begun on one, an ordinary breadcrumb on the other, the request ended, the same
        // the other way round; then two overlapping requests, whose four breadcrumbs read the same
        // counter and are ordered by their clock reads alone (Decision 0058).
        let run = try FixtureRun.run("request-breadcrumb-order", configuration)
        #expect(run.exitStatus == 0, "\(run.standardError)")
        let lines = run.standardOutput.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
        let listed = lines.map { "\($0.count > 1 ? $0[1] : "") \($0.count > 2 ? $0[2] : "")" }
        #expect(listed == [
            "screen /order/0", " /order ordinary 1", "http GET /order/0 200", " /order ordinary 3",
            "screen /order/4", " /order ordinary 5", "http GET /order/4 200",
            "screen /order/7", "screen /order/8", "http GET /order/7 200", "http GET /order/8 200",
        ], "\(run.standardOutput)")
        // The threads' own rings (in one shared ring the slots' order alone would list them right):
        // thread 0 wrote steps 0, 2, 5, 7, 9; thread 1 steps 1, 3, 4, 6, 8, 10.
        let rings = lines.map { $0.first.flatMap { Int($0) } ?? -1 }
        if rings.count == 11 {
            let first = Set([0, 2, 5, 7, 9].map { rings[$0] }), second = Set([1, 3, 4, 6, 8, 10].map { rings[$0] })
            #expect(first.count == 1 && second.count == 1 && first != second && !first.contains(0) && !second.contains(0),
                    "rings \(rings)")
        }
    }

    @Test("the handler's calls into libc were bound at install: the dynamic linker binds nothing after the crash (LD_DEBUG=bindings)",
          arguments: BuildConfiguration.allCases)
    func noLazyBindingInTheHandler(_ configuration: BuildConfiguration) throws {
        // SwiftPM links without -z now: a PLT slot is bound at its first call, a look-up through
        // every loaded library's symbols. Setup/ccr_bind.c makes those first calls at install;
        // without it the handler bound sigismember, sigemptyset and __errno_location itself.
        for threadsOff in [true, false] {
            var environment = ["LD_DEBUG": "bindings", "CRASH_FIXTURE_PRINT_CRASH_TIME": "1", "CRASH_FIXTURE_STEADY_STATE": "1"]
            if threadsOff { environment["CRASH_FIXTURE_THREADS_OFF"] = "1" }
            let run = try FixtureRun.run("deep-stack", configuration, environment: environment)
            #expect(run.terminatedBySignal == SIGSEGV)
            _ = try run.onlyRecord()
            let lines = run.standardError.split(separator: "\n")
            let crashAt = try #require(lines.firstIndex { $0.hasPrefix("crash-at-ns ") }, "no crash-at-ns line")
            #expect(lines[..<crashAt].contains { $0.contains("binding file") }, "LD_DEBUG=bindings printed nothing: the check would see nothing")
            let late = lines[crashAt...].filter { $0.contains("binding file") }
            #expect(late.isEmpty, "threads \(threadsOff ? "off" : "on"): bound in the handler:\n\(late.joined(separator: "\n"))")
        }
    }

    @Test("a request in flight is in the record; with none ever begun, there is no request line", arguments: BuildConfiguration.allCases)
    func requestsInFlight(_ configuration: BuildConfiguration) throws {
        // The table is read only once a request began (Decision 0042): both sides of that gate.
        let serving = try FixtureRun.run("null-pointer-write", configuration, environment: ["CRASH_FIXTURE_REQUEST_IN_FLIGHT": "/orders/:id"])
        let record = try serving.onlyRecord()
        #expect(record.requests.count == 1, "\(record.requests)")
        #expect(record.requests.first?.route == "/orders/:id" && record.requests.first?.requestID == "fixture-request-1")
        #expect(record.requests.first?.startedOnCrashedThread == true)
        let idle = try FixtureRun.run("null-pointer-write", configuration)
        #expect(try idle.onlyRecord().requests.isEmpty)
    }

    @Test("a crash while another thread holds the loader lock does not hang", arguments: BuildConfiguration.allCases)
    func loaderLockHeld(_ configuration: BuildConfiguration) throws {
        let run = try FixtureRun.run("loader-lock-held", configuration)
        // Right after start: libunwind's deferred load waits for the loader lock, so the handler
        // waits for it at most 50 ms and walks by frame pointers. A hang would last until
        // FixtureRun's kill (SIGKILL). No bound on the time: load moves it.
        #expect(run.terminatedBySignal == SIGSEGV, "took \(run.elapsed)")
        let record = try run.onlyRecord()
        #expect(record.hasEnd)
        #expect(record.frames.first?.address == record.registers["rip"])
        let frames = try LLVMSymbolizer.symbolize(record)
        #expect(frames[0].mentions("cfs_write_null_pointer"))
        // Steady state: libunwind was loaded before the lock was taken. Its look-ups of the object
        // an address is in come from the module table, not the loader (Decision 0059), so the
        // handler's own walk completes; it used to wait for the lock until the watchdog finished
        // the record by frame pointers.
        let steady = try FixtureRun.run("loader-lock-held", configuration, environment: ["CRASH_FIXTURE_STEADY_STATE": "1"])
        #expect(steady.terminatedBySignal == SIGSEGV, "took \(steady.elapsed)")
        let steadyRecord = try steady.onlyRecord()
        #expect(steadyRecord.hasEnd && steadyRecord.problems.isEmpty, "\(steadyRecord.problems)")
        let stack = try #require(steadyRecord.stack)
        #expect(stack.unwinder == "libunwind" && (stack.tableLookups ?? 0) > 0 && stack.tableMisses == nil && stack.tableScans == nil, "\(stack)")
        _ = checkOrder(["cfs_write_null_pointer", "level5", "level4", "level3", "level2", "level1"],
                       in: try LLVMSymbolizer.symbolize(steadyRecord))
    }
}

@Suite("Handler and the process around it")
struct HandlerProcessTests {
    /// The child's pid the fork fixtures print ("child <pid> ended by …", "daemon <pid> started").
    func printedPID(_ run: FixtureRun, after word: String) -> Int32? {
        guard let range = run.standardError.range(of: word + " ") else { return nil }
        return Int32(run.standardError[range.upperBound...].prefix { $0.isNumber })
    }

    /// The two records of a fork fixture: (the child's, the parent's).
    func childAndParentRecords(_ run: FixtureRun, child: Int32) throws -> (CrashRecord, CrashRecord) {
        let records = try run.pendingRecords.map { try validatedRecord(at: $0) }
        #expect(records.count == 2, "records: \(run.pendingRecords.map(\.lastPathComponent)); stderr: \(run.standardError.prefix(600))")
        let childRecord = try #require(records.first { $0.processID == child }, "no record with the child's pid \(child)")
        let parentRecord = try #require(records.first { $0.processID != child }, "no record of the parent's")
        return (childRecord, parentRecord)
    }

    @Test("a forked child's crash gets its own record; the parent's later crash gets its own", arguments: BuildConfiguration.allCases)
    func forkedChildCrash(_ configuration: BuildConfiguration) throws {
        let run = try FixtureRun.run("fork-child-crash-then-parent-crash", configuration)
        #expect(run.standardError.contains("ended by signal 11"), "stderr: \(run.standardError.prefix(600))")
        let child = try #require(printedPID(run, after: "child"))
        let (childRecord, record) = try childAndParentRecords(run, child: child)
        try checkCompleteRecord(record, run: run, signal: SIGSEGV)
        #expect(record.watchdog == nil)
        #expect(record.forkedFromProcessID == nil)
        #expect(record.thread?.id == record.processID, "the record is the parent's main thread's")
        #expect(record.thread?.isMain == true)
        #expect(record.sessionID != nil, "the parent's record names its session")
        _ = checkOrder(["cfs_write_null_pointer", "level5", "level4", "level3", "level2", "level1"], in: try LLVMSymbolizer.symbolize(record))

        // The child's own record: its pid, its id, the parent named; nothing of the parent's session.
        #expect(childRecord.hasEnd && childRecord.problems.isEmpty, "problems: \(childRecord.problems)")
        #expect(childRecord.signal?.number == SIGSEGV)
        #expect(childRecord.id != record.id)
        #expect(childRecord.forkedFromProcessID == record.processID)
        #expect(childRecord.forkedFromRecordID == record.id)
        #expect(childRecord.thread?.id == child && childRecord.thread?.isMain == true)
        #expect(childRecord.sessionID == nil, "a child must not mark the parent's session crashed")
        #expect(childRecord.watchdog == nil)
        #expect(childRecord.otherThreads.isEmpty, "a child has one thread: \(childRecord.otherThreads.map(\.thread.id))")
        // The module walk's pipe is shared with the parent: the child never uses it (its handler,
        // inherited, catches a fault in the guarded copy as the parent's does).
        #expect(childRecord.moduleTable?.read == "direct", "\(String(describing: childRecord.moduleTable))")
        #expect(record.moduleTable?.read == "direct", "\(String(describing: record.moduleTable))")
        _ = checkOrder(["cfs_write_null_pointer", "cfs_fork_child_that_faults"], in: try LLVMSymbolizer.symbolize(childRecord))
        let childFile = try #require(run.pendingRecords.first { $0.lastPathComponent.hasPrefix(childRecord.id) })
        let (status, text, _) = try crashtool(["symbolicate", childFile.path])
        #expect(status == 0)
        #expect(text.contains("Forked:    a child of pid \(record.processID)"), "crashtool: \(text.prefix(400))")
    }

    @Test("a forked child whose crash stalls is finished by its own watchdog; the parent's watchdog stays the parent's", arguments: BuildConfiguration.allCases)
    func forkedChildCrashWithStallingHandler(_ configuration: BuildConfiguration) throws {
        // Under hang-in-handler every handler hangs: the child's is ended by its alarm(2) watchdog
        // (had it written to the parent's pipe, the parent's watchdog would have finished the
        // parent's file for the child's crash), then the parent's own by the watchdog thread.
        let run = try FixtureRun.run("fork-child-crash-then-parent-crash", configuration,
                                     environment: ["CRASH_REPORTING_TEST_MISBEHAVIOUR": "hang-in-handler"])
        #expect(run.standardError.contains("ended by signal 11"), "stderr: \(run.standardError.prefix(600))")
        #expect(run.terminatedBySignal == SIGSEGV)
        let child = try #require(printedPID(run, after: "child"))
        let (childRecord, record) = try childAndParentRecords(run, child: child)
        #expect(record.thread?.id == record.processID)
        let watchdog = try #require(record.watchdog, "the parent's own stall is finished by its watchdog")
        #expect(watchdog.waitedMilliseconds >= 1900)
        #expect(record.hasEnd)
        let childWatchdog = try #require(childRecord.watchdog, "the child's stall is finished by its alarm")
        #expect(childWatchdog.waitedMilliseconds >= 1900)
        #expect(childRecord.hasEnd)
        #expect(childRecord.forkedFromProcessID == record.processID)
        _ = checkOrder(["cfs_write_null_pointer", "cfs_fork_child_that_faults"], in: try LLVMSymbolizer.symbolize(childRecord))
    }

    @Test("a forked child that used up its descriptors (EMFILE) still gets its own record")
    func forkedChildOutOfDescriptors() throws {
        let run = try FixtureRun.run("fork-child-out-of-descriptors-crash", .debug)
        #expect(run.standardError.contains("ended by signal 11"), "stderr: \(run.standardError.prefix(600))")
        #expect(run.terminatedBySignal == SIGSEGV)
        let child = try #require(printedPID(run, after: "child"))
        let (childRecord, record) = try childAndParentRecords(run, child: child)
        #expect(childRecord.forkedFromProcessID == record.processID)
        #expect(childRecord.hasEnd && childRecord.signal?.number == SIGSEGV)
        _ = checkOrder(["cfs_write_null_pointer", "cfs_fork_child_out_of_descriptors_that_faults"], in: try LLVMSymbolizer.symbolize(childRecord))
    }

    @Test("a forked child that closed its inherited descriptors and reused their numbers keeps its own files",
          arguments: ["", "unwind-checks-by-pipe", "unwind-checks-by-kernel"])
    func forkedChildReusingDescriptors(_ misbehaviour: String) throws {
        // The record file's and the watchdog pipe's numbers hold the child's own file when it
        // crashes; taking over the crash, the handler closes only what is still the inherited
        // file (a handler that closed those numbers left "own files kept 24 of 28").
        // unwind-checks-by-pipe: libunwind's page checks come without mincore, as libunwind 1.8
        // makes them: its pipe's read and one-byte write are answered in the walk all the same.
        // unwind-checks-by-kernel: libunwind makes its own checks (no guarded copies).
        let run = try FixtureRun.run("fork-child-reusing-descriptors-crash", .debug,
                                     environment: misbehaviour.isEmpty ? [:] : ["CRASH_REPORTING_TEST_MISBEHAVIOUR": misbehaviour])
        #expect(run.terminatedBySignal == SIGSEGV)
        let child = try #require(printedPID(run, after: "child"))
        let (childRecord, record) = try childAndParentRecords(run, child: child)
        #expect(childRecord.forkedFromProcessID == record.processID)
        #expect(childRecord.hasEnd && childRecord.signal?.number == SIGSEGV)
        let line = try #require(run.standardError.split(separator: "\n").first { $0.hasPrefix("own files kept ") },
                                "the child's chained handler did not run; stderr: \(run.standardError.prefix(600))")
        let counts = line.split(separator: " ").compactMap { Int($0) }
        #expect(counts.count == 3 && counts[1] >= 2, "\(line)")   // the record file and the pipe at least
        #expect(counts.count == 3 && counts[0] == counts[1], "\(line)")
        // Under libunwind's pipe numbers too: its page checks never reach the kernel in the
        // crashing thread's walk (Decision 0064): nothing read from, closed or written into the
        // child's file (a check's byte written there would give it a size), and the walk is
        // libunwind's. Before, the pipe's identity was checked and the stack came from frame pointers.
        #expect(counts.count == 3 && counts[2] == 0, "bytes written into the child's own file: \(line)")
        if misbehaviour == "unwind-checks-by-kernel" {
            // libunwind's checks would go to the kernel: its pipe's identity is checked first, and
            // the numbers are the child's files now, so the stack comes from the saved frame pointers.
            #expect(childRecord.stack?.unwinder == "frame-pointer (libunwind's pipe was replaced)")
        } else {
            #expect(childRecord.stack?.unwinder == "libunwind")
            #expect((childRecord.stack?.copyChecks ?? 0) >= 1, "the walk checked its pages by copies")
        }
        _ = checkOrder(["cfs_write_null_pointer", "cfs_fork_child_reusing_descriptors_that_faults"], in: try LLVMSymbolizer.symbolize(childRecord))
        #expect(record.stack?.unwinder == "libunwind", "the parent's own crash still unwinds with libunwind")
    }

    @Test("a stalled handler's facts and modules, still in its buffer, are written by the child's alarm and by the parent's watchdog thread")
    func stalledHandlersBufferedFacts() throws {
        // hang-in-handler: each handler stalls with its fixed facts and modules in memory (the
        // record is written once, when whole: Decision 0064). The child's watchdog is an alarm on
        // its crashing thread, the parent's a thread; each writes them before its own lines.
        let run = try FixtureRun.run("fork-child-crash-then-parent-crash", .debug, environment: ["CRASH_REPORTING_TEST_MISBEHAVIOUR": "hang-in-handler"])
        #expect(run.terminatedBySignal == SIGSEGV, "stderr: \(run.standardError.prefix(600))")
        let child = try #require(printedPID(run, after: "child"))
        let (childRecord, record) = try childAndParentRecords(run, child: child)   // both follow the schema: header first
        for (name, stalled) in [("child", childRecord), ("parent", record)] {
            #expect(stalled.watchdog != nil, "\(name): not finished by its watchdog")
            #expect(stalled.hasEnd && stalled.signal?.number == SIGSEGV && stalled.registers["rip"] != nil, "\(name)")
            #expect(stalled.moduleTable != nil, "\(name): no modules line")
            try checkModules(stalled)
        }
        #expect(childRecord.forkedFromProcessID == record.processID)
    }

    @Test("in a crashing child, only the watchdog's own alarm counts: a SIGALRM from kill(2) is not taken for it")
    func forkedChildSIGALRMFromKill() throws {
        // Under hang-in-handler the child's handler stalls; the parent sends the child a SIGALRM
        // with kill(2) once the child's record has its module table. Taken for the watchdog's, it
        // would have finished the record at once.
        // After-write: the parent watches the child's file for its module table.
        let run = try FixtureRun.run("fork-child-crash-then-parent-crash", .debug,
                                     environment: ["CRASH_REPORTING_TEST_MISBEHAVIOUR": "hang-in-handler-after-write", "CRASH_FIXTURE_CHILD_SIGALRM": "1"])
        let child = try #require(printedPID(run, after: "child"))
        let (childRecord, _) = try childAndParentRecords(run, child: child)
        let childWatchdog = try #require(childRecord.watchdog, "the child's stall is finished by its alarm")
        #expect(childWatchdog.waitedMilliseconds >= 1900, "a kill(2) SIGALRM sent at once did not end the wait early")
    }

    @Test("a child forked while the parent's crash handler runs gets its own record of its own crash")
    func forkDuringParentCrash() throws {
        // Under hang-in-handler both handlers stall and are finished by their watchdogs. The child
        // may outlive the parent (its alarm starts later): wait for its record, bounded.
        // After-write: the forking thread watches the parent's file for its module table.
        let run = try FixtureRun.run("fork-during-parent-crash", .debug, environment: ["CRASH_REPORTING_TEST_MISBEHAVIOUR": "hang-in-handler-after-write"])
        #expect(run.terminatedBySignal == SIGSEGV, "stderr: \(run.standardError.prefix(600))")
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(30)
        while run.pendingRecords.count < 2, clock.now < deadline { usleep(10_000) }
        let records = try run.pendingRecords.map { try validatedRecord(at: $0) }
        #expect(records.count == 2, "records: \(run.pendingRecords.map(\.lastPathComponent)); new/: \(run.newFiles.map(\.lastPathComponent))")
        let parent = try #require(records.first { $0.forkedFromProcessID == nil })
        let child = try #require(records.first { $0.forkedFromProcessID != nil }, "no record of the child's crash")
        #expect(child.forkedFromProcessID == parent.processID && child.forkedFromRecordID == parent.id)
        #expect(child.processID != parent.processID)
        #expect(child.signal?.number == SIGSEGV && child.hasEnd)
        #expect(child.watchdog != nil, "the child's stall is finished by its own alarm")
        #expect(parent.watchdog != nil && parent.hasEnd && parent.thread?.id == parent.processID)
        _ = checkOrder(["cfs_write_null_pointer", "cfs_fork_child_that_faults"], in: try LLVMSymbolizer.symbolize(child))
    }

    @Test("a daemonised child's crash is recorded after its parent exit()ed", arguments: BuildConfiguration.allCases)
    func daemonisedChildCrash(_ configuration: BuildConfiguration) throws {
        let run = try FixtureRun.run("daemonised-child-crash", configuration)
        #expect(run.exitStatus == 0, "stderr: \(run.standardError.prefix(600))")
        let daemon = try #require(printedPID(run, after: "daemon"))
        // The daemon outlives the fixture: wait until it is dead (gone, or a zombie where nothing
        // reaps orphans), bounded so a daemon that never crashes fails the test instead of hanging it.
        func dead() -> Bool {
            guard kill(daemon, 0) == 0 else { return true }
            let stat = (try? String(contentsOfFile: "/proc/\(daemon)/stat", encoding: .utf8)) ?? ""
            return stat.contains(") Z ") || stat.contains(") X ")
        }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(60)
        while !dead(), clock.now < deadline { usleep(10_000) }
        #expect(dead(), "the daemon \(daemon) is still running")
        let records = try run.pendingRecords.map { try validatedRecord(at: $0) }
        #expect(records.count == 1, "records: \(run.pendingRecords.map(\.lastPathComponent))")
        let record = try #require(records.first)
        #expect(record.processID == daemon)
        #expect(record.forkedFromProcessID != nil && record.forkedFromProcessID != daemon)
        #expect(record.hasEnd && record.problems.isEmpty)
        #expect(record.signal?.number == SIGSEGV)
        #expect(run.newFiles.isEmpty, "new/ still holds \(run.newFiles.map(\.lastPathComponent))")
        _ = checkOrder(["cfs_write_null_pointer", "cfs_daemonise_then_fault"], in: try LLVMSymbolizer.symbolize(record))
    }

    @Test("an app's SIGTERM handler cannot run on the crashing thread mid-crash", arguments: BuildConfiguration.allCases)
    func sigtermDuringCrash(_ configuration: BuildConfiguration) throws {
        // After-write: the signalling thread watches the file for the record's start.
        let run = try FixtureRun.run("sigterm-during-crash", configuration,
                                     environment: ["CRASH_REPORTING_TEST_MISBEHAVIOUR": "hang-in-handler-after-write"])
        #expect(run.standardError.contains("sending SIGTERM to the crashing thread"), "stderr: \(run.standardError.prefix(600))")
        #expect(run.exitStatus == nil, "exited with status \(run.exitStatus.map(String.init) ?? "")")
        #expect(run.terminatedBySignal == SIGSEGV)
        let record = try run.onlyRecord()
        #expect(record.watchdog != nil)
        #expect(record.hasEnd)
        #expect(record.signal?.number == SIGSEGV)
    }
}

@Suite("How the handler ends the process", .serialized)
struct HandlerEndingTests {
    /// Runs fixture `name` under gdb with `commands` (each an -ex) after SIGSEGV is set to stop and
    /// every other signal to pass; returns gdb's whole output (read to its end) and the reports folder.
    func runUnderGDB(_ name: String, _ configuration: BuildConfiguration, commands: [String]) throws -> (output: String, directory: URL) {
        let directory = temporaryFolder("crash-fixture-gdb-\(name)")
        let process = Process()
        // Through python3 to clear the signal mask: the test runner's threads block SIGCHLD, which
        // gdb would inherit and then wait forever for its inferior. Under timeout(1): once, on a
        // loaded machine, gdb stayed in waitpid for 25 minutes after its inferior had died (both of
        // its threads zombies, everything asked printed): gdb is killed after 5 minutes, and the
        // test judges what it printed.
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let unmask = ["timeout", "-s", "KILL", "300",
                      "python3", "-c", "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execvp(sys.argv[1], sys.argv[1:])"]
        process.arguments = unmask + ["gdb", "-batch", "-nx", "--readnever",
                                      "-ex", "handle all nostop noprint pass", "-ex", "handle SIGSEGV stop print pass"]
            + commands.flatMap { ["-ex", $0] } + ["--args", configuration.fixtureURL.path, name, directory.path]
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let collected = OutputCollector(out.fileHandleForReading)
        process.waitUntilExit()
        return (collected.text(), directory)
    }

    /// Stopping at every SIGSEGV and printing si_code, si_addr and the pc at each stop.
    func runUnderGDB(_ name: String, _ configuration: BuildConfiguration) throws -> (output: String, directory: URL) {
        let show = ["p $_siginfo.si_code", "p $_siginfo._sifields._sigfault.si_addr", "p/x $pc"]
        return try runUnderGDB(name, configuration, commands: ["run"] + show + ["continue"] + show + ["continue"])
    }

    @Test("a forked child's own record has the frames gdb shows for the child (set follow-fork-mode child)", arguments: BuildConfiguration.allCases)
    func forkedChildMatchesGDB(_ configuration: BuildConfiguration) throws {
        // Read to its end: the detached parent holds gdb's pipe until it has crashed too.
        let (output, directory) = try runUnderGDB("fork-child-crash-then-parent-crash", configuration, commands: [
            "set follow-fork-mode child", "set detach-on-fork on", "run", "bt", "continue", "continue",
        ])
        // gdb's backtrace of the child at its fault, down to main: "#1  0x… in name (args) at file:line".
        let gdbNames = output.split(separator: "\n").filter { $0.hasPrefix("#") }.compactMap { line -> String? in
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let index = words.firstIndex(where: { $0 == "in" }).map({ $0 + 1 }) ?? (words.count > 1 ? 1 : nil), index < words.count else { return nil }
            return String(words[index])
        }
        #expect(gdbNames.first == "cfs_write_null_pointer", "gdb output:\n\(output.suffix(3000))")
        #expect(gdbNames.count >= 3, "gdb output:\n\(output.suffix(3000))")
        let records = try FixtureRun.files(in: directory.appendingPathComponent("pending")).map { try validatedRecord(at: $0) }
        let child = try #require(records.first { $0.forkedFromProcessID != nil }, "no child record; gdb output:\n\(output.suffix(2000))")
        let frames = try LLVMSymbolizer.symbolize(child)
        _ = checkOrder(gdbNames, in: frames)
    }

    @Test("a hardware fault is delivered again with its original siginfo (the core dump shows the real fault)", arguments: BuildConfiguration.allCases)
    func faultRefiresWithOriginalSiginfo(_ configuration: BuildConfiguration) throws {
        let (output, directory) = try runUnderGDB("null-pointer-write", configuration)
        // $1…$3: the first delivery (our handler runs); $4…$6: the second, after the handler
        // returned under SIG_DFL. A re-raise with tgkill would show si_code -6 (SI_TKILL) there.
        func value(_ n: Int) -> String? {
            output.split(separator: "\n").first { $0.hasPrefix("$\(n) = ") }.map { String($0.dropFirst("$\(n) = ".count)) }
        }
        let stops = output.components(separatedBy: "received signal SIGSEGV").count - 1
        #expect(stops == 2, "gdb output:\n\(output.suffix(3000))")
        #expect(value(1) == "1", "first si_code")
        #expect(value(4) == "1", "second si_code (SEGV_MAPERR), not SI_TKILL:\n\(output.suffix(3000))")
        #expect(value(2) == "(void *) 0x0")
        #expect(value(5) == "(void *) 0x0")
        #expect(value(3) != nil && value(3) == value(6), "the same faulting pc both times")
        let records = FixtureRun.files(in: directory.appendingPathComponent("pending"))
        #expect(records.count == 1)
        if let first = records.first {
            let record = try validatedRecord(at: first)
            #expect(record.hasEnd)
            #expect(record.signal?.code == SEGV_MAPERR_CODE)
        }
    }
}
