// Crash signatures, in-app frames and name normalisation; also the small pieces under the server
// (gunzip limits, connect links, retention) that are easiest to check directly.
@testable import Collector
import CrashReportModel
import Foundation
import Logging
import Testing

private func frame(_ index: Int, _ module: String?, _ function: String?, offset: String? = nil, line: Int? = nil)
    -> DiagnosticsPayload.Frame {
    .init(index: index, address: "0x\(String(0x5000 + index, radix: 16))", module: module, module_offset: offset, build_id: nil,
          function: function, file: nil, line: line, column: nil, inlined: false)
}

private func crash(_ frames: [DiagnosticsPayload.Frame], kind: String = "crash", type: String = "SIGILL",
                   images: [DiagnosticsPayload.Image] = []) -> DiagnosticsPayload.CrashReportEntry {
    .init(timestamp: "2026-02-16T14:28:00Z", exception_type: type, exception_message: "Fatal error", stack_trace: [],
          thread_info: [.init(id: 1, name: "main", crashed: true, is_main: true, frames: frames)], report_id: "r",
          kind: kind, symbolicated: true, is_partial: false, images: images)
}

@Suite struct GroupingTests {
    @Test func topThreeInAppFramesSkippingSystemAndReporterFrames() throws {
        let report = crash([
            frame(0, "libc.so.6", "raise"),
            frame(1, "MyServer", "CrashReporting.CrashReporter.recordError(_:)"),
            frame(2, "MyServer", "MyServer.Handler.parse(_:) + 40", line: 10),
            frame(3, "libswiftCore.so", "Swift._assertionFailure()"),
            frame(4, "MyServer", "closure #2 in MyServer.Handler.run()"),
            frame(5, "MyServer", "MyServer.main()"),
            frame(6, "MyServer", "MyServer.start()"),
        ])
        let key = try #require(Grouping.issueKey(for: report))
        #expect(key.signature == "crash|SIGILL|Handler.parse(_:) < closure in Handler.run() < main()")
        #expect(key.title == "Handler.parse(_:) — SIGILL")
        #expect(key.ruleVersion == CrashGrouping.ruleVersion)
        #expect(key.subtitle == "SIGILL: Fatal error")
    }

    @Test func addressesLinesAndGenericsDoNotSplitAnIssue() {
        let one = crash([frame(0, "App", "generic specialization <Swift.Int> of App.Box<Swift.Int>.get() + 12", line: 3)])
        let two = crash([frame(0, "App", "App.Box<Swift.String>.get() + 99", line: 40)])
        #expect(Grouping.issueKey(for: one)?.signature == Grouping.issueKey(for: two)?.signature)
        #expect(Grouping.groupingName("closure #12 in App.run() at 0xdeadbeef") == "closure in run()")
        #expect(Grouping.groupingName("static Swift.Int.< infix(Swift.Int, Swift.Int) -> Swift.Bool") == "static Int.< infix(_:_:)")
        #expect(Grouping.groupingName("0x1234") == nil)
    }

    @Test func systemLibrariesByNameOrPath() {
        let images = [DiagnosticsPayload.Image(path: "/usr/lib/x86_64-linux-gnu/libssl3.so", build_id: "", start: "0x1", end: "0x2", bias: "0x1"),
                      DiagnosticsPayload.Image(path: "/opt/app/libAppCore.so", build_id: "", start: "0x1", end: "0x2", bias: "0x1")]
        #expect(!Grouping.isInApp(frame(0, "libssl3.so", "f"), images: images))
        #expect(Grouping.isInApp(frame(0, "libAppCore.so", "f"), images: images))
        #expect(!Grouping.isInApp(frame(0, "libswiftCore.so", "f"), images: []))
        #expect(!Grouping.isInApp(frame(0, "libFoundationEssentials.so", "f"), images: []))
        #expect(!Grouping.isInApp(frame(0, nil, "f"), images: []))
        #expect(Grouping.isInApp(frame(0, "CrashDemo", "main.crash()"), images: []))
    }

    @Test func unsymbolicatedFallsBackToTypeAndModuleOffset() {
        let raw = crash([frame(0, "libc.so.6", nil, offset: "0x29d90"), frame(1, "MyServer", nil, offset: "0x1234")], type: "SIGSEGV")
        let key = Grouping.issueKey(for: raw)
        #expect(key?.signature == "crash|SIGSEGV|MyServer + 0x1234")
        #expect(key?.title == "MyServer + 0x1234 — SIGSEGV")
        // Another run of the same build: other addresses, same offsets, same issue.
        var moved = raw
        moved.thread_info[0].frames[1].address = "0x7fff0000"
        #expect(Grouping.issueKey(for: moved)?.signature == key?.signature)
    }

    @Test func kindsGroupApart() {
        let frames = [frame(0, "App", "App.save()")]
        #expect(Grouping.issueKey(for: crash(frames, kind: "non_fatal", type: "DBError 3001"))?.signature
                == "non_fatal|DBError 3001|save()")
        #expect(Grouping.issueKey(for: crash(frames, kind: "diagnostics")) == nil)
        var termination = crash([], kind: "abnormal_termination", type: "abnormal_termination")
        termination.termination = .init(kind: "abnormal")
        #expect(Grouping.issueKey(for: termination)?.signature == "abnormal_termination|abnormal")
    }

    @Test func textStackTracesFromIOSSenders() {
        var report = crash([])
        report.thread_info = []
        report.stack_trace = ["0 ParentApp 0x0000000100a1b2c3 ParentApp.FeedView.load() + 120 (FeedView.swift:88)",
                              "1 UIKitCore 0x00000001a2b3c4d5 -[UIView layoutSubviews] + 12",
                              "2 ParentApp 0x0000000100a1b400 ParentApp.App.main() + 20"]
        #expect(Grouping.issueKey(for: report)?.signature == "crash|SIGILL|FeedView.load() < App.main()")
    }
}

@Suite struct RegroupTests {
    /// A report stored under rule 1 (the signature of that rule, the issue marked rule 1, as a
    /// database from before rule numbers reads) is re-signed and moved by `regroup`; the collector's
    /// start notices the old rule until then.
    @Test func regroupResignsReportsStoredUnderAnOlderRule() async throws {
        let database = try await TestDatabase.make()
        let store = try await database.open()
        let payload = try Fixtures.samplePayload()
        var record = try Ingest.record(payload, diagnosticsID: "diag_old", idempotencyKey: "old", answer: "{}", receivedAt: TestClock.now())
        let crash = try #require(record.reports.firstIndex { $0.kind == "crash" })
        let current = try #require(record.reports[crash].issue)
        record.reports[crash].issue = IssueKey(signature: "crash|main.crash()", title: "main.crash()", subtitle: current.subtitle,
                                               exceptionType: current.exceptionType, ruleVersion: 1)
        #expect(try await store.ingest(record) == .stored)
        #expect(try await store.oldestGroupingRule() == 1)
        #expect(try await Regrouping.staleRuleNotice(store)?.contains("crash-collector regroup") == true)

        let result = try await Regrouping.regroup(store, batch: 1)   // paging too
        #expect(result.examined == record.reports.count && result.moved == 1 && result.unreadable == 0, "\(result)")
        #expect(try await store.oldestGroupingRule() == CrashGrouping.ruleVersion)
        #expect(try await Regrouping.staleRuleNotice(store) == nil)
        let issues = try await store.issues(IssueQuery())
        #expect(!issues.contains { $0.signature == "crash|main.crash()" }, "the rule-1 issue is gone")
        #expect(issues.contains { $0.signature == current.signature && $0.title == current.title && $0.eventCount == 1 })
        // Twice changes nothing.
        #expect(try await Regrouping.regroup(store).moved == 0)
        await store.close()
        await database.remove()
    }
}

@Suite struct PartsTests {
    @Test func gunzipRejectsTruncatedAndOversizedStreams() throws {
        let text = Data(String(repeating: "crash ", count: 10_000).utf8)
        let gzipped = [UInt8](try Gzipped.compress(text))
        #expect(try Gzip.decompress(gzipped, limit: 1 << 20) == [UInt8](text))
        #expect(throws: Gzip.Failure.self) { try Gzip.decompress(Array(gzipped.dropLast(10)), limit: 1 << 20) }
        #expect(throws: Gzip.Failure.self) { try Gzip.decompress(gzipped, limit: 1000) }
        #expect(throws: Gzip.Failure.self) { try Gzip.decompress([1, 2, 3], limit: 1000) }
        #expect(throws: Gzip.Failure.self) { try Gzip.decompress([], limit: 1000) }
    }

    /// Every way a body can be cut short is refused (none passes as a shorter document), however
    /// many 64 KiB windows the text fills; the limit holds to the byte; a second member or other
    /// bytes after the first member's end are refused, not dropped unsaid.
    @Test func gunzipTellsAnEndedStreamFromOneCutShort() throws {
        var generator = SystemRandomNumberGenerator()
        // Incompressible in part, so the gzip'd body is long enough to cut in many places.
        let text = (0..<200_000).map { index in index % 3 == 0 ? UInt8.random(in: 0...255, using: &generator) : UInt8(index % 7) }
        let gzipped = [UInt8](try Gzipped.compress(Data(text)))
        #expect(try Gzip.decompress(gzipped, limit: text.count) == text)
        #expect(throws: Gzip.Failure.self) { try Gzip.decompress(gzipped, limit: text.count - 1) }
        var cuts = Array(1..<min(64, gzipped.count))
        cuts += stride(from: 64, to: gzipped.count, by: 997)
        for cut in cuts {
            #expect(throws: Gzip.Failure.self, "cut to \(cut) of \(gzipped.count) bytes") {
                try Gzip.decompress(Array(gzipped.prefix(cut)), limit: 1 << 20)
            }
        }
        #expect(throws: Gzip.Failure.self) { try Gzip.decompress(gzipped + gzipped, limit: 1 << 20) }
        #expect(throws: Gzip.Failure.self) { try Gzip.decompress(gzipped + [0], limit: 1 << 20) }
        // A stream whose output fills the window exactly ends as well as any other.
        let exact = [UInt8](repeating: 7, count: Gzip.window * 2)
        #expect(try Gzip.decompress([UInt8](try Gzipped.compress(Data(exact))), limit: exact.count) == exact)
    }

    @Test func idempotencyDigestsAreLowercaseHexSHA256() {
        #expect(hexString([0x00, 0x0f, 0xa5, 0xff]) == "000fa5ff")
        let key = Idempotency(token: "abc", key: "k-1", body: Array("abc".utf8))
        #expect(key.digest == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(key.storedKey == "tba7816bf8f01cfea:k-1")
        #expect(Ingest.newDiagnosticsID().wholeMatch(of: /diag_[0-9a-f]{16}/) != nil)
        // 64 random bits each: 1000 ids collide with odds of about 3e-14.
        #expect(Set((0..<1000).map { _ in Ingest.newDiagnosticsID() }).count == 1000)
    }

    @Test func connectLinkValidation() {
        #expect(ConnectLink.validate(appID: "com.example.app") == nil)
        #expect(ConnectLink.validate(appID: "crash-demo") == nil)
        for bad in ["", "com..app", ".com.app", "com.app.", "com/app", "com app", "com.äpp"] {
            #expect(ConnectLink.validate(appID: bad) != nil, "\(bad) should be rejected")
        }
        #expect(ConnectLink.deepLink(appID: "com.example.app", host: "192.168.1.23", port: 9090)
                == "dev-see-com.example.app://connect?server_ip=192.168.1.23&server_port=9090")
        #expect(ConnectLink.candidateHosts(boundHost: "127.0.0.1", advertised: nil) == ["127.0.0.1"])
        #expect(ConnectLink.candidateHosts(boundHost: "0.0.0.0", advertised: "qa-mac.local") == ["qa-mac.local"])
        #expect(!ConnectLink.candidateHosts(boundHost: "0.0.0.0", advertised: nil).contains("0.0.0.0"))
    }

    @Test func retentionDeletesOldReportsAndTheirIssues() async throws {
        let database = try await TestDatabase.make()
        let store = try await database.open()
        let payload = try Fixtures.samplePayload()
        let old = TestClock.now().addingTimeInterval(-40 * 86_400)
        for (index, date) in [old, TestClock.now()].enumerated() {
            var copy = payload
            if index == 1 {   // only the crash is recent
                copy.crash_reports = [payload.crash_reports[0]]
            }
            let record = try Ingest.record(copy, diagnosticsID: "diag_\(index)", idempotencyKey: "key-\(index)", answer: "{}",
                                           receivedAt: date)
            #expect(try await store.ingest(record) == .stored)
        }
        #expect(try await store.issues(IssueQuery()).count == 3)
        let counts = try await store.purge(receivedBefore: TestClock.now().addingTimeInterval(-30 * 86_400))
        #expect(counts.uploads == 1)
        #expect(counts.issues == 2)
        let left = try await store.issues(IssueQuery())
        #expect(left.map(\.kind) == ["crash"])
        #expect(left.first?.eventCount == 1)
        // The first answer's key went with its upload; the recent one's stays.
        #expect(try await store.answer(forIdempotencyKey: "key-0") == nil)
        #expect(try await store.answer(forIdempotencyKey: "key-1") == "{}")

        // The service the server runs does the same, with --retention-days: the crash is 0 days old,
        // and a purge two days from now with a one-day horizon leaves nothing.
        var logger = Logger(label: "retention-test")
        logger.logLevel = .critical
        await RetentionService(store: store, days: 1, logger: logger).purgeOnce(now: TestClock.now().addingTimeInterval(2 * 86_400))
        #expect(try await store.issues(IssueQuery()).isEmpty)
        #expect(try await store.answer(forIdempotencyKey: "key-1") == nil)
        await store.close()
        await database.remove()
    }

    @Test func twoCollectorsOnOneDatabaseStoreAKeyOnce() async throws {
        // Two stores on one database (two collector processes): the same upload raced through both.
        let database = try await TestDatabase.make()
        let one = try await database.open()
        let two = try await database.open()
        let payload = try Fixtures.samplePayload()
        let outcomes = try await withThrowingTaskGroup(of: IngestOutcome.self) { group in
            for index in 0..<8 {
                let store = index.isMultiple(of: 2) ? one : two
                let record = try Ingest.record(payload, diagnosticsID: "diag_\(index)", idempotencyKey: "shared-key",
                                               answer: "{\"n\":\(index)}", receivedAt: TestClock.now())
                group.addTask { try await store.ingest(record) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == .stored }.count == 1)
        let first = try #require(try await one.answer(forIdempotencyKey: "shared-key"))
        #expect(outcomes.allSatisfy { $0 == .stored || $0 == .duplicate(answer: first) })
        #expect(try await two.issues(IssueQuery()).first { $0.kind == "crash" }?.eventCount == 1)
        await one.close()
        await two.close()
        await database.remove()
    }
}
