// Non-crashing fixture modes: how `start` behaves around errors and process ends.
import CCrashCapture
import CFixtureSupport
import CrashReporting
import Foundation
import Glibc

enum LifecycleMode: String, CaseIterable {
    /// A start with an unusable directory, then a good start, then a second start; prints one
    /// line per step as `step: outcome` and whether a SIGSEGV handler is installed after each.
    case startErrors = "start-errors"
    /// Starts and exits normally: nothing may remain in new/ or pending/.
    case cleanExit = "clean-exit"
    /// Starts, ends the session, waits for start's background work (the memory sampler), sets a
    /// structured custom value (a sidecar write after the end), and exits normally.
    case writeAfterEnd = "write-after-end"
    /// Starts, prints "ready", and waits to be killed (SIGKILL leaves its record file in new/).
    case waitForKill = "wait-for-kill"
    /// Times one `start` and prints "start-ns <n>" (for tools/bench-capture).
    case startCost = "start-cost"
    /// No CrashReporter: times the disk's own write + fdatasync + rename of a record of
    /// CRASH_FIXTURE_FLOOR_SIZE bytes after CRASH_FIXTURE_FLOOR_IDLE_MS of idling, and prints
    /// "floor-ns <n>" (for tools/bench-capture).
    case syncFloor = "sync-floor"
    /// Starts, waits for the previous sessions to be processed, and exits normally.
    case relaunch = "relaunch"
    /// Starts, logs context (a screen view, an action, 700 breadcrumbs, keys, a user), prints
    /// "ready" and waits to be killed.
    case contextThenWaitForKill = "context-then-wait-for-kill"
    /// Reports non-fatal errors of every kind and prints one line per call: "receipt <id>",
    /// "none" or "refused <reason>".
    case nonFatalErrors = "non-fatal-errors"
    /// Prints "enabled=<bool>", then turns collection to the opposite (persisted).
    case collectionToggle = "collection-toggle"
    /// Samples memory every CRASH_FIXTURE_MEMORY_INTERVAL_MS (default 50), then allocates and
    /// touches 2 MiB every 10 ms until something kills it (the tests run it in a memory cgroup).
    case allocateUntilKilled = "allocate-until-killed"
    /// Starts with the fixture's configuration; prints "start: ok" (then waits for the
    /// background work) or "start: <kind>: <message>", and exits 0.
    case startOnly = "start-only"
    /// Starts, waits for libunwind, and walks its own stack as a handler of ours does and as a
    /// non-fatal report does; prints "redirected=<0|1> handler-frames=<n> handler-passed=<n>
    /// plain-steps=<n> plain-passed=<n>" (libunwind's sigprocmask calls that reached libc).
    case unwindMasks = "unwind-masks"
}

/// A nested Codable value for userInfo.
struct OrderContext: Codable {
    var orderID: Int
    var lines: [String]
    var totals: [String: Double]
}

struct PaymentDeclined: ReportableError {
    static let domain = "payments"
    var code: Int { 402 }
    var message: String { "card declined by issuer" }
    var userInfo: [ErrorPayloadKey: ErrorPayloadValue] {
        ["attempts": [1, 2, 3], "gateway": ["name": "acme", "region": "eu-west"],
         "order": (try? .encoding(OrderContext(orderID: 7, lines: ["tea", "cake"], totals: ["net": 9.5, "vat": 1.9]))) ?? nil,
         "retryable": false]
    }
}

struct RequestCancelled: ReportableError {
    static let domain = "network"
    var code: Int { -999 }
    var message: String { "cancelled" }
    var isReportable: Bool { false }
}

@inline(never) func reportNonFatalErrors() {
    func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
    func attempt(_ body: () throws -> NonFatalReceipt?) {
        do { say(try body().map { "receipt \($0.recordID)" } ?? "none") } catch { say("refused \(error)") }
    }
    CrashReporter.setUserID("user-7")
    CrashReporter.log("before errors")
    struct Flags: Codable { var new_feed_design = true; var beta_messaging = false }
    do {
        try CrashReporter.setCustomValue(Flags(), forKey: "feature_flags")
        try CrashReporter.setCustomValue(["login", "daily_feed", "photos"], forKey: "screens_visited")
        say("custom data set")
        try CrashReporter.setCustomValue([String(repeating: "x", count: 120_000)], forKey: "too_big")
        say("too big accepted")
    } catch {
        say("refused \(error)")
    }
    attempt { try CrashReporter.record(error: PaymentDeclined(), userInfo: ["attempts": [1, 2, 3, 4]]) }
    let root = NSError(domain: NSPOSIXErrorDomain, code: Int(ECONNREFUSED), userInfo: [NSLocalizedDescriptionKey: "connection refused"])
    let middle = NSError(domain: "com.example.http", code: 503, userInfo: [NSUnderlyingErrorKey: root])
    let outer = NSError(domain: "com.example.orders", code: 17, userInfo: [NSUnderlyingErrorKey: middle, "order_id": 7, "urls": [URL(string: "https://api.example.com/orders/7")!]])
    attempt { try CrashReporter.record(error: outer) }
    attempt { try CrashReporter.record(domain: CrashDomain.network, code: CrashErrorCode.networkTimeout, message: "orders API timed out") }
    attempt { try CrashReporter.post(payload: ["migration": "v42", "rows": 1200], message: "migration finished") }
    attempt { try CrashReporter.record(domain: "db", code: 1, message: "x", userInfo: ["domain": "clash"]) }
    attempt { try CrashReporter.record(error: RequestCancelled()) }
}

/// Context every context fixture sets: prints each evicted key as "evicted <name>".
func setContext(breadcrumbs: Int) {
    CrashReporter.setUserID("user-42")
    CrashReporter.logScreenView("checkout")
    CrashReporter.logAction("pay", parameters: ["amount": "12.50", "currency": "EUR"])
    for index in 0..<70 {
        if let evicted = CrashReporter.setCustomValue("value \(index)", forKey: "key-\(index)") {
            FileHandle.standardOutput.write(Data("evicted \(evicted)\n".utf8))   // unbuffered: the fixture may crash next
        }
    }
    // Over 1 KB of JSON: custom_data only, not the key table.
    _ = try? CrashReporter.setCustomValue(["screens_visited": Array(repeating: "daily_feed", count: 120)], forKey: "history")
    CrashReporter.setCustomValue(true, forKey: "feature_flag")
    CrashReporter.setCustomValue(42, forKey: "retry_count")
    CrashReporter.setCustomValue(1.5, forKey: "ratio")
    CrashReporter.setCustomValue("say \"hi\"\n", forKey: "quote")
    for index in 0..<breadcrumbs {
        switch index % 3 {
        case 0: CrashReporter.log("breadcrumb #\(index)")
        case 1: CrashReporter.log("breadcrumb #\(index)", level: .warning, tag: "orders", metadata: ["n": "\(index)"])
        default: CrashReporter.log("breadcrumb #\(index)", level: .error, tag: "db")
        }
    }
}

/// Waits (at most 20 s) until the memory sampler's sidecar (sessions/*.memory) ends with a sample
/// that `accept`s.
func waitForMemorySample(_ reportsDirectory: String, _ accept: ([String: Any]) -> Bool) {
    let sessions = reportsDirectory + "/sessions"
    let deadline = ContinuousClock.now + .seconds(20)
    while ContinuousClock.now < deadline {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: sessions)) ?? []
        for name in names where name.hasSuffix(".memory") {
            guard let text = try? String(contentsOfFile: sessions + "/" + name, encoding: .utf8),
                  let last = text.split(separator: "\n").last,
                  let sample = (try? JSONSerialization.jsonObject(with: Data(last.utf8))) as? [String: Any],
                  sample["type"] as? String == "memory_sample" else { continue }
            if accept(sample) { return }
        }
        usleep(5_000)
    }
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
    var configuration = fixtureConfiguration(reportsDirectory)
    let interval = ProcessInfo.processInfo.environment["CRASH_FIXTURE_MEMORY_INTERVAL_MS"].flatMap(Int.init) ?? 50
    configuration.memorySampleInterval = .milliseconds(interval)
    switch mode {
    case .allocateUntilKilled:
        try! CrashReporter.start(configuration)
        CrashReporter.log("allocating until killed", level: .warning, tag: "memory")
        var kept: [UnsafeMutableRawPointer] = []
        // Samples taken before and while it grows, whatever the machine's load: wait for the
        // sampler's first reading, allocate 32 MiB, wait for a reading that shows them.
        waitForMemorySample(reportsDirectory) { _ in true }
        print("allocating")
        fflush(nil)
        for _ in 0..<16 {
            let chunk = malloc(2 << 20)!
            memset(chunk, 0x5a, 2 << 20)
            kept.append(chunk)
        }
        waitForMemorySample(reportsDirectory) { ($0["cgroup_bytes"] as? Int ?? $0["rss_bytes"] as? Int ?? 0) >= 32 << 20 }
        while true {
            let chunk = malloc(2 << 20)!
            memset(chunk, 0x5a, 2 << 20)   // touched: resident, charged to the cgroup
            kept.append(chunk)
            usleep(10_000)
        }
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
    case .writeAfterEnd:
        try! CrashReporter.start(configuration)
        CrashReporter.endSession()
        CrashReporter.waitForBackgroundWork(timeout: .seconds(10))
        _ = try! CrashReporter.setCustomValue(OrderContext(orderID: 1, lines: ["tea"], totals: ["net": 1]), forKey: "order")
        exit(0)
    case .startOnly:
        do {
            try CrashReporter.start(configuration)
            print("start: ok")
            CrashReporter.waitForBackgroundWork(timeout: .seconds(10))
        } catch let error as CrashReporter.StartError {
            print("start: \(error.kind): \(error.message)")
        } catch {
            print("start: unexpected: \(error)")
        }
        exit(0)
    case .unwindMasks:
        try! CrashReporter.start(configuration)
        guard ccr_wait_for_deferred_setup(5000) == 1 else {
            print("libunwind not ready")
            exit(1)
        }
        var redirected: Int32 = 0, handlerFrames: Int32 = 0, plainSteps: Int32 = 0
        var handlerPassed: UInt = 0, plainPassed: UInt = 0
        guard ccr_test_unwind_masks(&redirected, &handlerFrames, &handlerPassed, &plainSteps, &plainPassed) == 0 else {
            print("libunwind not ready")
            exit(1)
        }
        print("redirected=\(redirected) handler-frames=\(handlerFrames) handler-passed=\(handlerPassed) plain-steps=\(plainSteps) plain-passed=\(plainPassed)")
        exit(0)
    case .startCost:
        let configured = monotonicNanoseconds()
        let fresh = fixtureConfiguration(reportsDirectory)   // what building a Configuration costs the caller
        let before = monotonicNanoseconds()
        try! CrashReporter.start(fresh)
        let after = monotonicNanoseconds()
        print("start-ns \(after - before) configuration-ns \(before - configured)")
        exit(0)
    case .syncFloor:
        let environment = ProcessInfo.processInfo.environment
        let size = environment["CRASH_FIXTURE_FLOOR_SIZE"].flatMap(Int.init) ?? 10_000
        let idle = environment["CRASH_FIXTURE_FLOOR_IDLE_MS"].flatMap(Int32.init) ?? 0
        print("floor-ns \(cfs_sync_floor_ns(reportsDirectory, size, idle))")
        exit(0)
    case .relaunch:
        try! CrashReporter.start(configuration)
        print(CrashReporter.waitForBackgroundWork(timeout: .seconds(10)) ? "processed" : "timed out")
        exit(0)
    case .contextThenWaitForKill:
        try! CrashReporter.start(configuration)
        setContext(breadcrumbs: ProcessInfo.processInfo.environment["CRASH_FIXTURE_BREADCRUMBS"].flatMap(Int.init) ?? 700)
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        while true { sleep(60) }
    case .collectionToggle:
        try! CrashReporter.start(configuration)
        waitForBeaconIfAsked(reportsDirectory)
        let enabled = CrashReporter.isCollectionEnabled
        print("enabled=\(enabled)")
        try! CrashReporter.setCollectionEnabled(!enabled)
        exit(0)
    case .nonFatalErrors:
        try! CrashReporter.start(configuration)
        reportNonFatalErrors()
        exit(0)
    case .waitForKill:
        try! CrashReporter.start(configuration)
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        while true { sleep(60) }
    }
}
