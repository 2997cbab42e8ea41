// Hang fixture modes (Configuration.hangs, threshold 300 ms): a worker thread that beats a
// heartbeat, then blocks in a known function; the cooperative pool starved by blocking tasks.
import CFixtureSupport
import CrashReporting
import Foundation
import Glibc

enum HangMode: String, CaseIterable {
    /// A worker beats "worker", blocks 1.5 s in `blockedInHang()`, beats again; exits once the hang
    /// report is in pending/. Prints "worker-tid <tid>".
    case hangThenResume = "hang-then-resume"
    /// The same worker blocks for good; prints "hung" once the hang report is in new/, then waits to be killed.
    case hangThenWaitForKill = "hang-then-wait-for-kill"
    /// Every cooperative pool thread blocks 1.5 s in `blockPoolThread()`; exits once the pool's
    /// hang report is in pending/.
    case poolStarvation = "pool-starvation"
    /// tools/bench-hangs: started (with hang detection, 2 s threshold, the pool watched, unless
    /// CRASH_FIXTURE_HANGS=0), idle for CRASH_FIXTURE_IDLE_S seconds (default 10); prints
    /// "cpu-us <user+system µs of the whole process>".
    case idle = "hang-idle"
    /// Run with the threads-stay-after-hang-answer misbehaviour: the worker hangs for good; the
    /// threads that answer the hang capture stay in their handler; once the hang report is whole
    /// in new/, another thread, which blocks the real-time signals (never asked), crashes in
    /// `crashAfterHangCapture()`. Prints "worker-tid <tid>".
    case crashDuringHangAnswers = "crash-during-hang-answers"
    /// The main queue is drained (dispatchMain, as an async main does); one block on it stays
    /// 1.5 s in `blockedInHang()`; exits once the main queue's hang report is in pending/.
    case mainThreadHang = "main-thread-hang"
    /// Starts with the configuration's default hang detection; prints "hangs <threshold ms>" or
    /// "hangs off", and exits.
    case hangDefault = "hang-default"
}

@inline(never) func crashAfterHangCapture() {
    let pointer = UnsafeMutablePointer<Int>(bitPattern: 8)!
    pointer.pointee = 42
}

/// Sleeps until `seconds` have passed, whatever interrupts it (a hang capture's signal cuts a
/// nanosleep short, as any signal does).
@inline(never) func sleepThrough(_ seconds: Double) {
    let deadline = monotonicNanoseconds() + UInt64(seconds * 1e9)
    while monotonicNanoseconds() < deadline { usleep(10_000) }
}

@inline(never) func blockedInHang(forever: Bool) {
    repeat { sleepThrough(1.5) } while forever
    sink &+= 1
}

/// Pool threads block every signal: one long sleep, so that a capture finds them in it.
@inline(never) func blockPoolThread() {
    var request = timespec(tv_sec: 1, tv_nsec: 500_000_000)
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    sink &+= 1
}

private func records(in folder: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".crash") }
}

/// Waits (bounded) until a file in `folder` contains `text`.
private func waitForRecord(in folder: String, containing text: String) -> Bool {
    for _ in 0..<3000 {
        for name in records(in: folder) {
            if let contents = try? String(contentsOfFile: folder + "/" + name, encoding: .utf8), contents.contains(text) { return true }
        }
        usleep(10_000)
    }
    return false
}

func runHangMode(_ mode: HangMode, reportsDirectory: String) -> Never {
    var configuration = fixtureConfiguration(reportsDirectory)
    if mode == .idle {
        configuration.hangs = ProcessInfo.processInfo.environment["CRASH_FIXTURE_HANGS"] == "0" ? nil : .init()
        try! CrashReporter.start(configuration)
        CrashReporter.waitForBackgroundWork(timeout: .seconds(10))
        let before = processCPUMicroseconds()
        sleepThrough(Double(ProcessInfo.processInfo.environment["CRASH_FIXTURE_IDLE_S"].flatMap(Int.init) ?? 10))
        say("cpu-us \(processCPUMicroseconds() - before)")
        exit(0)
    }
    if mode == .hangDefault {
        try! CrashReporter.start(configuration)
        say("hangs " + (CrashReporter.hangThreshold.map { "\($0.components.seconds * 1000 + $0.components.attoseconds / 1_000_000_000_000_000)" } ?? "off"))
        exit(0)
    }
    configuration.hangs = .init(threshold: .milliseconds(300), watchesCooperativePool: mode == .poolStarvation)
    try! CrashReporter.start(configuration)
    CrashReporter.waitForBackgroundWork(timeout: .seconds(10))
    CrashReporter.log("before the hang")
    switch mode {
    case .crashDuringHangAnswers:
        let heartbeat = CrashReporter.heartbeat(named: "worker")
        let worker = Thread {
            say("worker-tid \(gettidNumber())")
            heartbeat.beat()
            blockedInHang(forever: true)
        }
        worker.start()
        let crasher = Thread {
            var signals = sigset_t()
            sigfillset(&signals)
            for signal in [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP] { sigdelset(&signals, signal) }
            pthread_sigmask(SIG_BLOCK, &signals, nil)
            guard waitForRecord(in: reportsDirectory + "/new", containing: #""type":"end""#) else { say("no hang report"); exit(3) }
            crashAfterHangCapture()
        }
        crasher.start()
        while true { pause() }
    case .mainThreadHang:
        say("main-tid \(gettidNumber())")
        DispatchQueue.main.asyncAfter(deadline: .now() + 0.5) { blockedInHang(forever: false) }
        Thread {
            guard waitForRecord(in: reportsDirectory + "/pending", containing: #""type":"hang_end""#) else { say("no resolved hang report"); exit(3) }
            say("hang-done")
            exit(0)
        }.start()
        dispatchMain()
    case .hangDefault:
        break
    case .hangThenResume, .hangThenWaitForKill:
        let heartbeat = CrashReporter.heartbeat(named: "worker")
        let worker = Thread {
            say("worker-tid \(gettidNumber())")
            for _ in 0..<5 { heartbeat.beat(); usleep(20_000) }
            heartbeat.beat()
            blockedInHang(forever: mode == .hangThenWaitForKill)
            for _ in 0..<20 { heartbeat.beat(); usleep(20_000) }
        }
        worker.start()
        if mode == .hangThenWaitForKill {
            guard waitForRecord(in: reportsDirectory + "/new", containing: #""type":"end""#) else { say("no hang report"); exit(3) }
            say("hung")
            while true { pause() }
        }
    case .idle:
        break
    case .poolStarvation:
        let pool = max(ProcessInfo.processInfo.activeProcessorCount, 1)
        for _ in 0..<pool {
            Task.detached { blockPoolThread() }
        }
    }
    if mode == .hangThenResume {
        // With uploads on, a pass may send the finished record (and take it out of pending/) before
        // a look at pending/ finds it: the record leaving new/ is what says the hang was resolved.
        guard waitForRecordToLeave(reportsDirectory + "/new", containing: #""type":"hang""#) else { say("no resolved hang report"); exit(3) }
    } else {
        guard waitForRecord(in: reportsDirectory + "/pending", containing: #""type":"hang_end""#) else { say("no resolved hang report"); exit(3) }
    }
    say("hang-done")
    exit(0)
}

/// Waits for a record containing `text` to appear in `folder`, then for it to leave (at most 30 s each).
private func waitForRecordToLeave(_ folder: String, containing text: String) -> Bool {
    var found: String?
    for _ in 0..<3000 where found == nil {
        found = records(in: folder).first { name in
            (try? String(contentsOfFile: folder + "/" + name, encoding: .utf8))?.contains(text) == true
        }
        if found == nil { usleep(10_000) }
    }
    guard let found else { return false }
    for _ in 0..<3000 {
        if access(folder + "/" + found, F_OK) != 0 { return true }
        usleep(10_000)
    }
    return false
}

func gettidNumber() -> Int32 { cfs_gettid() }

/// User + system CPU time of the whole process so far, in µs.
func processCPUMicroseconds() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1_000_000 + Int(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
}
