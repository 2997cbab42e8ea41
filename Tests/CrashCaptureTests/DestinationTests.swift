// Delivery where teams already look: Sentry envelopes into a real Bugsink on loopback
// (tools/bugsink), seed 004 documents to an ELK/Logz.io bulk listener (the test collector's
// /logzio route checks their shape), and several destinations at once, each with its own state.
import CrashReportModel
import CrashTestSupport
import Foundation
import Glibc
import Testing

/// A Bugsink started by tools/bugsink for one test, and its queries.
final class Bugsink {
    let state: URL
    let values: [String: String]
    var dsn: String { values["BUGSINK_DSN"]! }
    var project: String { values["BUGSINK_PROJECT_ID"]! }
    static var tools: URL { FixtureSource.mainSwift.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("tools") }

    init(_ options: [String] = []) throws {
        state = temporaryFolder("bugsink")
        try Self.run(Self.tools.appendingPathComponent("bugsink"), ["start", state.path] + options)
        let text = try String(contentsOf: state.appendingPathComponent("bugsink.env"), encoding: .utf8)
        values = Dictionary(text.split(separator: "\n").compactMap { line -> (String, String)? in
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            return parts.count == 2 ? (parts[0], parts[1]) : nil
        }, uniquingKeysWith: { _, last in last })
    }

    deinit { _ = try? Self.run(Self.tools.appendingPathComponent("bugsink"), ["stop", state.path]) }

    /// `tools/bugsink-query events|issues <project>` as JSON objects.
    func query(_ what: String) throws -> [[String: Any]] {
        let output = try Self.run(Self.tools.appendingPathComponent("bugsink-query"), ["--state", state.path, what, project])
        return try #require(try JSONSerialization.jsonObject(with: output) as? [[String: Any]])
    }

    @discardableResult
    static func run(_ tool: URL, _ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = tool
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = OutputCollector(out.fileHandleForReading), errors = OutputCollector(err.fileHandleForReading)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestSupportError("\(tool.lastPathComponent) \(arguments.joined(separator: " ")) failed: \(errors.text())")
        }
        return Data(output.text().utf8)
    }
}

@Suite("Destinations: Sentry (Bugsink), ELK, several at once", .serialized)
struct DestinationTests {
    /// The request time-out for uploads to Bugsink (a Django app): one no machine load reaches, so
    /// the tests assert what Bugsink answered, not how fast (its 2 s default failed once while
    /// four builds and two CPU hogs shared the machine).
    static let patientTimeout = "60000"
    /// How long an upload pass to Bugsink may run: several of those requests, so well past one
    /// request's time-out (the fixture's own 60 s bound equalled it, and a pass under
    /// tools/test-under-load with another suite running was killed before it printed its status).
    static let patientPass: Duration = .seconds(300)

    @Test("a crash reaches Bugsink with frames, breadcrumbs, tags and user; the same crash again joins its issue")
    func sentryToBugsink() throws {
        let bugsink = try Bugsink()
        let scenario = try UploadScenario("sentry")
        for round in 1...2 {
            let crash = try scenario.run("context-then-crash", upload: false, ["CRASH_FIXTURE_RUN_BEFORE_CRASH_MS": "50"])
            #expect(crash.terminatedBySignal == SIGSEGV)
            let run = try scenario.run("upload-pass", upload: false, ["CRASH_FIXTURE_SENTRY_DSN": bugsink.dsn, "CRASH_FIXTURE_TIMEOUT_MS": Self.patientTimeout], timeout: Self.patientPass)
            #expect(try uploadStatus(run)["delivered"] == "1", "round \(round): \(run.standardError)")
        }
        let events = try bugsink.query("events")
        try #require(events.count == 2, "\(events.count) events")
        let event = try #require(events[0]["data"] as? [String: Any], "\(events[0].keys)")
        #expect(event["platform"] as? String == "native")
        #expect((event["user"] as? [String: Any])?["id"] as? String == "user-42")
        #expect((event["tags"] as? [String: Any])?["feature_flag"] as? String == "true")
        #expect(event["release"] as? String == "com.example.crash-fixture@1.0.0+42")
        let exception = try #require(((event["exception"] as? [String: Any])?["values"] as? [[String: Any]])?.first)
        #expect(exception["type"] as? String == "SIGSEGV")
        let mechanism = try #require(exception["mechanism"] as? [String: Any])
        #expect(mechanism["type"] as? String == "signalhandler" && mechanism["handled"] as? Bool == false)
        #expect((((mechanism["meta"] as? [String: Any])?["signal"]) as? [String: Any])?["number"] as? Int == 11)
        let frames = try #require((exception["stacktrace"] as? [String: Any])?["frames"] as? [[String: Any]])
        let level3 = try #require(frames.first { ($0["function"] as? String)?.contains("level3(") == true })
        #expect(level3["filename"] as? String == "main.swift" && level3["lineno"] as? Int == FixtureSource.line(ofLevel: 3))
        #expect(level3["in_app"] as? Bool == true && (level3["instruction_addr"] as? String)?.hasPrefix("0x") == true)
        #expect((frames.last?["function"] as? String)?.contains("cfs_write_null_pointer") == true)   // innermost last
        let crumbs = try #require((event["breadcrumbs"] as? [String: Any])?["values"] as? [[String: Any]])
        #expect(crumbs.contains { $0["message"] as? String == "breadcrumb #999" })
        let images = try #require((event["debug_meta"] as? [String: Any])?["images"] as? [[String: Any]])
        let app = try #require(images.first { ($0["code_file"] as? String)?.hasSuffix("/CrashFixture") == true })
        #expect(app["type"] as? String == "elf" && (app["code_id"] as? String)?.count == 40 && (app["debug_id"] as? String)?.count == 36)
        #expect((event["fingerprint"] as? [String])?.first?.hasPrefix("crash|SIGSEGV|cfs_write_null_pointer < crash(_:) < ") == true, "\(event["fingerprint"] ?? "")")

        let issues = try bugsink.query("issues")
        #expect(issues.count == 1, "\(issues)")
        #expect(issues.first?["event_count"] as? Int == 2, "\(issues)")
    }

    @Test("a non-fatal error reaches Bugsink as level error, handled, with its userInfo and the calling stack")
    func nonFatalToBugsink() throws {
        let bugsink = try Bugsink()
        let scenario = try UploadScenario("sentry-nonfatal")
        try scenario.run("non-fatal-errors", upload: false)
        let run = try scenario.run("upload-pass", upload: false, ["CRASH_FIXTURE_SENTRY_DSN": bugsink.dsn, "CRASH_FIXTURE_TIMEOUT_MS": Self.patientTimeout], timeout: Self.patientPass)
        let delivered = Int(try uploadStatus(run)["delivered"] ?? "") ?? 0
        #expect(delivered >= 3, "\(run.standardError)")
        let events = try bugsink.query("events").compactMap { $0["data"] as? [String: Any] }
        #expect(events.count == delivered)
        let payment = try #require(events.first { event in
            ((event["exception"] as? [String: Any])?["values"] as? [[String: Any]])?.first?["type"] as? String == "com.example.crash-fixture.payments 402"
        })
        #expect(payment["level"] as? String == "error")
        let exception = try #require(((payment["exception"] as? [String: Any])?["values"] as? [[String: Any]])?.first)
        #expect((exception["mechanism"] as? [String: Any])?["handled"] as? Bool == true)
        #expect(exception["value"] as? String == "card declined by issuer")
        let frames = (exception["stacktrace"] as? [String: Any])?["frames"] as? [[String: Any]] ?? []
        #expect(frames.contains { ($0["function"] as? String)?.contains("reportNonFatalErrors") == true })
    }

    @Test("Bugsink's rate limit (429 + X-Sentry-Rate-Limits): the record is kept for later, not lost")
    func sentryRateLimited() throws {
        let bugsink = try Bugsink(["--quota", "1"])
        let scenario = try UploadScenario("sentry-429")
        try scenario.run("record-errors", upload: false, ["CRASH_FIXTURE_COUNT": "3"])
        let run = try scenario.run("upload-pass", upload: false, ["CRASH_FIXTURE_SENTRY_DSN": bugsink.dsn, "CRASH_FIXTURE_TIMEOUT_MS": Self.patientTimeout], timeout: Self.patientPass)
        let status = try uploadStatus(run)
        #expect(status["delivered"] == "1" && status["quarantined"] == "0", "\(run.standardError)")
        #expect(status["unsent"] == "2")
        #expect(status["failure"]?.contains("429") == true, "\(status)")
        #expect(try bugsink.query("events").count == 1)
    }

    @Test("ELK: a non-fatal error and a crash as seed 004 documents in a Logz.io bulk upload")
    func elk() throws {
        let scenario = try UploadScenario("elk")
        try scenario.run("record-errors", upload: false, ["CRASH_FIXTURE_COUNT": "1"])
        try scenario.run("null-pointer-write", upload: false, ["CRASH_FIXTURE_RUN_BEFORE_CRASH_MS": "50"])
        let run = try scenario.run("upload-pass", upload: false, [
            "CRASH_FIXTURE_LOGZIO_URL": scenario.collector.endpoint + "/logzio", "CRASH_FIXTURE_LOGZIO_TOKEN": "test-token",
        ])
        #expect(try uploadStatus(run)["delivered"] == "2", "\(run.standardError)")
        let raw = try JSONSerialization.jsonObject(with: try scenario.state().raw) as? [String: Any]
        let documents = try #require(raw?["elk"] as? [[String: Any]])
        #expect((raw?["elk_errors"] as? [String])?.isEmpty == true, "\(raw?["elk_errors"] ?? "")")
        try #require(documents.count == 2)
        let error = try #require(documents.first { $0["domain"] as? String == "com.example.crash-fixture.ledger" })
        #expect(error["code"] as? Int == 0 && error["message"] as? String == "imbalance #0" && error["environment"] as? String == "staging")
        let crash = try #require(documents.first { $0["domain"] as? String == "com.example.crash-fixture.crash" })
        #expect(crash["code"] as? Int == 11)
        #expect((crash["linux"] as? [String: Any])?["platform"] as? String == "linux")
        #expect((crash["linux"] as? [String: Any])?["build_number"] as? Int == 42)
        #expect(((crash["linux.metadata"] as? [String: Any])?["signal"] as? [String: Any])?["name"] as? String == "SIGSEGV")
    }

    @Test("several destinations: one down does not hold the others, and a destination that has the record is not sent it again")
    func severalDestinations() throws {
        let scenario = try UploadScenario("several")
        try scenario.run("null-pointer-write", upload: false, ["CRASH_FIXTURE_RUN_BEFORE_CRASH_MS": "50"])
        // The collector is up, "Sentry" is down (nothing listens on port 9).
        let first = try scenario.run("upload-pass", ["CRASH_FIXTURE_SENTRY_DSN": "http://key@127.0.0.1:9/1"])
        #expect(try uploadStatus(first)["delivered"] == "0")
        #expect(try scenario.state().stored.count == 1)
        #expect(scenario.files("pending").count == 1)
        #expect(scenario.files("pending", suffix: ".sent").count == 1)   // remembers the collector has it
        // Sentry back (a real Bugsink): the record goes there, and only there.
        let bugsink = try Bugsink()
        let second = try scenario.run("upload-pass", ["CRASH_FIXTURE_SENTRY_DSN": bugsink.dsn])
        #expect(try uploadStatus(second)["delivered"] == "1", "\(second.standardError)")
        #expect(try scenario.state().requests.count == 1)
        #expect(try bugsink.query("events").count == 1)
        #expect(scenario.files("pending").isEmpty && scenario.files("pending", suffix: ".sent").isEmpty)
    }
}
