// Breadcrumbs, custom keys and the user id: written by a fixture, attached to its crash record by
// the next launch, or turned into an abnormal-termination report when the process was SIGKILLed.
import CrashReportModel
import CrashTestSupport
import Foundation
import Glibc
import Testing

/// Runs the relaunch fixture on `directory` and returns the single record it leaves in pending/.
func relaunch(_ directory: URL, _ configuration: BuildConfiguration = .debug) throws -> CrashRecord {
    let run = try FixtureRun.run("relaunch", configuration, reportsDirectory: directory)
    #expect(run.exitStatus == 0)
    #expect(run.standardOutput == "processed\n")
    let sessions = FixtureRun.files(in: directory.appendingPathComponent("sessions"))
    #expect(sessions.isEmpty)
    #expect((try? FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("sessions").path))?.isEmpty == true,
            "sessions/ should be empty after processing and a clean exit")
    return try run.onlyRecord()
}

/// The keys the context fixtures set, in set order, after 10 evictions (74 set, 64 kept).
let expectedKeys: [CrashRecord.CustomKey] = (10..<70).map { .init(key: "key-\($0)", jsonValue: "\"value \($0)\"") } + [
    .init(key: "feature_flag", jsonValue: "true"),
    .init(key: "retry_count", jsonValue: "42"),
    .init(key: "ratio", jsonValue: "1.5"),
    .init(key: "quote", jsonValue: #""say \"hi\"\n""#),
]

/// The custom_data the context fixtures set (over 1 KB, so in custom_data only).
let expectedCustomData = #"{"history":{"screens_visited":["# + Array(repeating: #""daily_feed""#, count: 120).joined(separator: ",") + "]}}"

@Suite("Context: breadcrumbs, keys, user")
struct ContextTests {
    @Test("1000 breadcrumbs then a crash: the record holds the last 500, in order, intact", arguments: BuildConfiguration.allCases)
    func breadcrumbsAttachedToCrash(_ configuration: BuildConfiguration) throws {
        let run = try FixtureRun.run("context-then-crash", configuration)
        #expect(run.terminatedBySignal == SIGSEGV)
        // The loop of 70 evicts key-0…key-5 (and prints them); the 4 typed keys evict key-6…key-9.
        #expect(run.standardOutput == (0..<6).map { "evicted key-\($0)\n" }.joined())
        let atCrash = try run.onlyRecord()
        #expect(atCrash.sessionID == atCrash.id)
        #expect(atCrash.breadcrumbs.isEmpty, "attached by the next launch, not by the handler")

        let record = try relaunch(run.reportsDirectory, configuration)
        #expect(record.id == atCrash.id)
        #expect(record.hasEnd && !record.isPartial, "problems: \(record.problems)")
        #expect(record.frames == atCrash.frames)
        let crumbs = record.breadcrumbs
        try #require(crumbs.count == 500)
        // 2 context breadcrumbs (screen, action) came first, then 1000 logs: the last 500 are logs 500…999.
        #expect(crumbs.map(\.index) == Array(502..<1002))
        #expect(crumbs.map(\.message) == (500..<1000).map { "breadcrumb #\($0)" })
        #expect(crumbs.enumerated().allSatisfy { offset, crumb in
            let n = offset + 500
            switch n % 3 {
            case 0: return crumb.level == "info" && crumb.tag.isEmpty && crumb.metadata == nil
            case 1: return crumb.level == "warning" && crumb.tag == "orders" && crumb.metadata == ["n": "\(n)"]
            default: return crumb.level == "error" && crumb.tag == "db" && crumb.metadata == nil
            }
        })
        #expect(zip(crumbs, crumbs.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp })
        #expect(record.customKeys == expectedKeys)
        #expect(record.userID == "user-42")
        #expect(record.customDataJSON == expectedCustomData)
    }

    @Test("killed after its record was durable and before the session was marked crashed: the next launch still attaches the context", arguments: BuildConfiguration.allCases)
    func killedBeforeSessionMarked(_ configuration: BuildConfiguration) throws {
        // The handler marks the session crashed after the sync (Docs/Decisions/0046); this knob
        // SIGKILLs the process between the two.
        let run = try FixtureRun.run("context-then-crash", configuration, environment: ["CRASH_REPORTING_TEST_MISBEHAVIOUR": "killed-before-session-marked"])
        #expect(run.terminatedBySignal == SIGKILL)
        let atCrash = try run.onlyRecord()
        #expect(atCrash.hasEnd && atCrash.signal?.number == SIGSEGV, "the record was durable before the kill")
        let record = try relaunch(run.reportsDirectory, configuration)
        #expect(record.id == atCrash.id && record.signal?.number == SIGSEGV)
        #expect(record.termination == nil, "a crash, not an abnormal termination: \(String(describing: record.termination))")
        #expect(record.breadcrumbs.count == 500 && record.breadcrumbs.last?.message == "breadcrumb #999")
        #expect(record.customKeys == expectedKeys)
        #expect(record.userID == "user-42")
    }

    @Test("the session ended gracefully while another thread's crash is being recorded: it stays the crash's context")
    func endSessionDuringCrash() throws {
        // The crashing thread's handler stalls (the watchdog finishes its record); meanwhile the
        // main thread ends the session, as a service's graceful shutdown would. The session is
        // marked crashed only once the record is durable, so ending it must wait for no crash.
        let run = try FixtureRun.run("end-session-during-crash", .debug, environment: ["CRASH_REPORTING_TEST_MISBEHAVIOUR": "hang-in-handler"])
        #expect(run.standardOutput.contains("session ended"), "\(run.standardOutput)")
        let atCrash = try run.onlyRecord()
        #expect(atCrash.watchdog != nil && atCrash.hasEnd)
        let record = try relaunch(run.reportsDirectory)
        #expect(record.id == atCrash.id)
        #expect(record.breadcrumbs.count == 500 && record.breadcrumbs.last?.message == "breadcrumb #999")
        #expect(record.userID == "user-42")
    }

    @Test("8 threads log at once, more than there are rings: the last 500 over all threads, each thread's in order", arguments: BuildConfiguration.allCases)
    func breadcrumbsFromManyThreads(_ configuration: BuildConfiguration) throws {
        let run = try FixtureRun.run("threads-context-then-crash", configuration)
        #expect(run.terminatedBySignal == SIGSEGV)
        let record = try relaunch(run.reportsDirectory, configuration)
        let crumbs = record.breadcrumbs
        try #require(crumbs.count == 500)
        // 1 + 8 × 200 + 1 logged: the last 500 are "main last" and 499 of wave 2's 800.
        #expect(crumbs.map(\.index) == Array(1102..<1602))
        #expect(crumbs.last?.message == "main last")
        #expect(zip(crumbs, crumbs.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp })
        var perThread: [Int: [Int]] = [:]
        for crumb in crumbs.dropLast() {
            let parts = crumb.message.dropFirst().split(separator: " #")
            guard crumb.message.first == "t", parts.count == 2, let thread = Int(parts[0]), let number = Int(parts[1]) else {
                Issue.record("unexpected breadcrumb \(crumb.message)")
                continue
            }
            perThread[thread, default: []].append(number)
        }
        #expect(perThread.keys.sorted() == [4, 5, 6, 7], "wave 1 is older than all of wave 2")
        for (thread, numbers) in perThread {
            // Each thread's share is its newest ones, in order, without a gap.
            #expect(numbers == Array((200 - numbers.count)..<200), "thread \(thread): \(numbers)")
        }
        #expect(perThread.values.map(\.count).reduce(0, +) == 499)
        // Chunks of 50 a clock tick apart: the last 499 are wave 2's last two chunks (100 per
        // thread) and 99 of the chunk before. Which 99 depends on where the clock ticked within
        // that chunk (and, within a tick, on the rings), so only the bounds are the design's.
        #expect(perThread.values.allSatisfy { (100...150).contains($0.count) }, "\(perThread.mapValues(\.count))")
        // Both kinds of ring took part: ring 0 (shared) and rings of their own, handed over by
        // wave 1's threads at their exit.
        let rings = Set(crumbs.compactMap(\.ring))
        #expect(rings.contains(0) && rings.count >= 3, "rings \(rings.sorted())")
    }

    /// Runs context-then-wait-for-kill until it says "ready", SIGKILLs it, returns its directory.
    func killedContextRun(breadcrumbs: Int) throws -> URL {
        let directory = temporaryFolder("context-killed")
        let process = Process()
        process.executableURL = BuildConfiguration.debug.fixtureURL
        process.arguments = ["context-then-wait-for-kill", directory.path]
        process.environment = ["SWIFT_BACKTRACE": "enable=no", "CRASH_FIXTURE_BREADCRUMBS": "\(breadcrumbs)"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        var seen = Data()
        let deadline = ContinuousClock.now + .seconds(20)
        while !String(decoding: seen, as: UTF8.self).hasSuffix("ready\n") && ContinuousClock.now < deadline {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL)
        #expect(String(decoding: seen, as: UTF8.self).hasSuffix("ready\n"))
        return directory
    }

    @Test("a SIGKILLed process becomes an abnormal-termination report with its breadcrumbs")
    func sigkillBecomesAbnormalTermination() throws {
        let directory = try killedContextRun(breadcrumbs: 700)
        let record = try relaunch(directory)
        let termination = try #require(record.termination)
        #expect(termination.kind == "abnormal")
        #expect(termination.detected >= termination.sessionStarted)
        #expect(record.signal == nil && record.frames.isEmpty)
        #expect(!record.isPartial)
        #expect(record.appID == "com.example.crash-fixture")
        let crumbs = record.breadcrumbs
        try #require(crumbs.count == 500)
        #expect(crumbs.map(\.message) == (200..<700).map { "breadcrumb #\($0)" })
        #expect(record.customKeys == expectedKeys)
        #expect(record.userID == "user-42")
        #expect(record.customDataJSON == expectedCustomData)
        #expect(FixtureRun.files(in: directory.appendingPathComponent("new")).isEmpty, "the killed run's record file was recovered")
    }

    @Test("screen views and actions are breadcrumbs of their own kind")
    func screenViewsAndActions() throws {
        let directory = try killedContextRun(breadcrumbs: 3)
        let record = try relaunch(directory)
        let crumbs = record.breadcrumbs
        try #require(crumbs.count == 5)
        #expect(crumbs[0].kind == "screen" && crumbs[0].message == "checkout")
        #expect(crumbs[1].kind == "action" && crumbs[1].message == "pay" && crumbs[1].metadata == ["amount": "12.50", "currency": "EUR"])
        #expect(crumbs[2...].map(\.message) == ["breadcrumb #0", "breadcrumb #1", "breadcrumb #2"])
        #expect(crumbs.map(\.index) == [0, 1, 2, 3, 4])
    }

    @Test("a clean exit leaves no session behind and no report")
    func cleanExitLeavesNothing() throws {
        let run = try FixtureRun.run("clean-exit", .release)
        #expect(run.exitStatus == 0)
        let sessions = try FileManager.default.contentsOfDirectory(atPath: run.reportsDirectory.appendingPathComponent("sessions").path)
        #expect(sessions.isEmpty)
        #expect(run.pendingRecords.isEmpty)
    }

    @Test("after a clean end no sidecar is written: the memory sampler and custom data find the session ended")
    func noSidecarAfterEnd() throws {
        // Sidecars are made under the lock the end takes (ccr_session.c). Before, a custom value
        // set after the end wrote <id>.session.custom.json, and a sampler that started during an
        // exit left <id>.session.memory behind.
        let run = try FixtureRun.run("write-after-end", .release)
        #expect(run.exitStatus == 0)
        let sessions = try FileManager.default.contentsOfDirectory(atPath: run.reportsDirectory.appendingPathComponent("sessions").path)
        #expect(sessions.isEmpty)
        #expect(run.pendingRecords.isEmpty)
    }
}
