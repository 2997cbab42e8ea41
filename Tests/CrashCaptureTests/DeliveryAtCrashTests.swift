// Delivery at crash time (Configuration.deliveryAtCrash): the handler runs the crash-sender once
// the record is durable and waits for it. Against the loopback collector of UploadTests.
import CrashReportModel
import CrashTestSupport
import Foundation
import Glibc
import Testing

@Suite("Delivery at crash time (crash-sender)")
struct DeliveryAtCrashTests {
    /// Built with the tests (a dependency of this target).
    static var senderPath: String { buildFolder.appendingPathComponent("crash-sender").path }

    /// A wait no machine load reaches: the crashed process ends when the sender does, so what
    /// the collector holds once the process is reaped is what the sender did.
    static let patient = ["CRASH_FIXTURE_SENDER": senderPath, "CRASH_FIXTURE_SENDER_WAIT_MS": "120000"]

    @Test("the report, symbolicated and with its context, is in the collector when the crashed process is reaped; the host may then vanish")
    func deliveredAtCrash() throws {
        let scenario = try UploadScenario("at-crash")
        let run = try scenario.run("context-then-crash", Self.patient, timeout: .seconds(150))
        #expect(run.terminatedBySignal == SIGSEGV, "stderr: \(run.standardError.prefix(600))")
        // The host is gone once the process is reaped: nothing in the reports directory is left to send.
        try FileManager.default.removeItem(at: scenario.directory)

        let state = try scenario.state()
        #expect(state.stored.count == 1, "stored: \(state.stored.count); requests: \(state.requests.map { ($0.idempotencyKey ?? "-", $0.status ?? 0) })")
        #expect(state.duplicateRequests == 0)
        try scenario.expectAllValid()
        let payload = try #require(state.stored.first?.payload)
        let report = try #require((payload["crash_reports"] as? [[String: Any]])?.first)
        #expect(report["symbolicated"] as? Bool == true)
        let top = (report["stack_trace"] as? [String])?.first ?? ""
        #expect(top.contains("cfs_write_null_pointer"), "top frame: \(top)")
        // The session's context travelled with it (the crashed process still held its session).
        #expect((payload["logs"] as? [Any])?.isEmpty == false, "no breadcrumbs in the payload")
        #expect(payload["user_id"] as? String == "user-42")
        #expect(state.stored.first?.idempotencyKey == report["report_id"] as? String)
    }

    @Test("collector down at the crash: the process still ends by its signal, the record waits, and the next launch sends it once")
    func collectorDownAtCrash() throws {
        let scenario = try UploadScenario("at-crash-down")
        var environment = Self.patient
        environment["CRASH_FIXTURE_ENDPOINT"] = "http://127.0.0.1:9"   // nothing listens there
        let crash = try scenario.run("context-then-crash", environment, timeout: .seconds(150))
        #expect(crash.terminatedBySignal == SIGSEGV)
        #expect(scenario.files("pending").count == 1, "pending: \(scenario.files("pending")); uploading: \(scenario.files("uploading"))")
        #expect(scenario.files("uploading").isEmpty)
        // The sender attached the session's context before it tried: the record is whole without it.
        let sessions = (try? FileManager.default.contentsOfDirectory(atPath: scenario.directory.appendingPathComponent("sessions").path)) ?? []
        #expect(sessions.isEmpty, "sessions left: \(sessions)")
        let record = try validatedRecord(at: scenario.directory.appendingPathComponent("pending/" + scenario.files("pending")[0]))
        #expect(!record.breadcrumbs.isEmpty)

        let next = try scenario.run("upload-pass")
        #expect(try uploadStatus(next)["delivered"] == "1", "stdout: \(next.standardOutput)")
        #expect(try uploadStatus(next)["crashed_before"] == "true")
        let state = try scenario.state()
        #expect(state.uniqueKeys == [record.id])
        #expect(state.duplicateRequests == 0)
        #expect(scenario.files("pending").isEmpty)
    }

    @Test("the next launch still knows the previous run crashed when the sender delivered its record")
    func crashedBeforeAfterDelivery() throws {
        let scenario = try UploadScenario("at-crash-then-launch")
        let crash = try scenario.run("null-pointer-write", Self.patient, timeout: .seconds(150))
        #expect(crash.terminatedBySignal == SIGSEGV)
        #expect(scenario.files("pending").isEmpty)
        let next = try scenario.run("upload-pass")
        let status = try uploadStatus(next)
        #expect(status["crashed_before"] == "true")
        #expect(status["delivered"] == "0", "nothing left to send: \(next.standardOutput)")
        #expect(try scenario.state().stored.count == 1)
    }

    @Test("a sender that never ends does not keep the crashed process: it ends by its signal after the wait, the record stays")
    func senderThatHangs() throws {
        let scenario = try UploadScenario("at-crash-hang")
        let script = temporaryFolder("hanging-sender")
        try FileManager.default.createDirectory(at: script, withIntermediateDirectories: true)
        let sender = script.appendingPathComponent("sender.sh")
        try "#!/bin/sh\necho $$ > \(script.path)/pid\nexec sleep 600 </dev/null >/dev/null 2>&1\n".write(to: sender, atomically: true, encoding: .utf8)
        chmod(sender.path, 0o755)
        // Killed by the runner's time-out (SIGKILL) if the wait were not bounded. (The script lets
        // go of the fixture's stdout and stderr, which the runner reads to their end.)
        let run = try scenario.run("null-pointer-write", ["CRASH_FIXTURE_SENDER": sender.path, "CRASH_FIXTURE_SENDER_WAIT_MS": "500"],
                                   timeout: .seconds(60))
        #expect(run.terminatedBySignal == SIGSEGV)
        #expect(scenario.files("pending").count == 1, "the record waits for the next launch")
        #expect(try scenario.state().stored.isEmpty)
        // The orphaned sender is the host's to reap; stop it here.
        if let pid = (try? String(contentsOfFile: script.path + "/pid", encoding: .utf8)).flatMap({ Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) {
            kill(pid, SIGKILL)
        }
    }
}
