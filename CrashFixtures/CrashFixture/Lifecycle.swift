// Non-crashing fixture modes: how `start` behaves around errors and process ends.
import CrashReporting
import Foundation
import Glibc

enum LifecycleMode: String, CaseIterable {
    /// A start with an unusable directory, then a good start, then a second start; prints one
    /// line per step as `step: outcome` and whether a SIGSEGV handler is installed after each.
    case startErrors = "start-errors"
    /// Starts and exits normally: nothing may remain in new/ or pending/.
    case cleanExit = "clean-exit"
    /// Starts, prints "ready", and waits to be killed (SIGKILL leaves its record file in new/).
    case waitForKill = "wait-for-kill"
    /// Times one `start` and prints "start-ns <n>" (for tools/bench-capture).
    case startCost = "start-cost"
}

/// CLOCK_MONOTONIC in nanoseconds: the clock the benchmark's parent process reads too.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// The current SIGSEGV action's handler address (Swift's backtracer has one before we start).
func segvHandlerAddress() -> Int {
    var current = sigaction()
    sigaction(SIGSEGV, nil, &current)
    return unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self)
}

func runLifecycle(_ mode: LifecycleMode, reportsDirectory: String) -> Never {
    let configuration = CrashReporter.Configuration(appID: "com.example.crash-fixture", reportsDirectory: reportsDirectory)
    switch mode {
    case .startErrors:
        let unusable = CrashReporter.Configuration(appID: "com.example.crash-fixture", reportsDirectory: "/etc/hostname/crashes")
        let initial = segvHandlerAddress()
        for (step, config) in [("unusable-directory", unusable), ("first-start", configuration), ("second-start", configuration)] {
            var outcome = "ok"
            do {
                try CrashReporter.start(config)
            } catch let error as CrashReporter.StartError {
                outcome = "\(error.kind): \(error.message)"
            } catch {
                outcome = "unexpected: \(error)"
            }
            print("\(step): \(outcome) | handler-changed=\(segvHandlerAddress() != initial) started=\(CrashReporter.isStarted)")
        }
        exit(0)
    case .cleanExit:
        try! CrashReporter.start(configuration)
        exit(0)
    case .startCost:
        let before = monotonicNanoseconds()
        try! CrashReporter.start(configuration)
        let after = monotonicNanoseconds()
        print("start-ns \(after - before)")
        exit(0)
    case .waitForKill:
        try! CrashReporter.start(configuration)
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        while true { sleep(60) }
    }
}
