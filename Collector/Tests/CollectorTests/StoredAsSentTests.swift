// The stored copies cut from the body as sent (StoredAsSent, Decision 0039): they decode to what
// was grouped, and every body the scan cannot vouch for is encoded as before.
@testable import Collector
import CrashReportModel
import Foundation
import Testing

@Suite struct StoredAsSentTests {
    static func entries(_ body: [UInt8], _ found: StoredAsSent) throws -> [DiagnosticsPayload.CrashReportEntry] {
        try found.reports.indices.map {
            try JSONDecoder().decode(DiagnosticsPayload.CrashReportEntry.self, from: Data(found.reportJSON($0, of: body).utf8))
        }
    }

    @Test func theCopiesDecodeToThePayload() throws {
        let sample = try PayloadDecodingTests.body()
        let pretty = [UInt8](try JSONSerialization.data(
            withJSONObject: try JSONSerialization.jsonObject(with: Data(sample)), options: [.prettyPrinted]))
        // Strings that look like structure: brackets, braces, commas and escaped quotes inside values.
        let tricky = try PayloadDecodingTests.body {
            PayloadDecodingTests.editReports(&$0) { $0["exception_message"] = #"a "quoted" ], } [ { , \ message"# }
            $0["custom_data"] = ["crash_reports": "]", "k": ["[", "{"]]
        }
        for (name, body) in [("sample", sample), ("pretty-printed", pretty), ("structure inside strings", tricky)] {
            let decoded = try PayloadDecoding.decoded(body)
            #expect(decoded.asSent, "\(name)")
            let found = try #require(StoredAsSent.find(in: body), "\(name)")
            #expect(found.reports.count == decoded.payload.crash_reports.count && !found.reports.isEmpty, "\(name)")
            #expect(try Self.entries(body, found) == decoded.payload.crash_reports, "\(name)")
            var rest = decoded.payload
            rest.crash_reports = []
            #expect(try JSONDecoder().decode(DiagnosticsPayload.self, from: Data(found.uploadJSON(of: body).utf8)) == rest, "\(name)")
        }
    }

    @Test func bodiesTheScanCannotVouchForAreNotCut() throws {
        let sample = String(decoding: try PayloadDecodingTests.body(), as: UTF8.self)
        let refused: [(String, String)] = [
            // A key written with an escape: the decoder reads "crash_reports", a byte comparison would not.
            ("escaped key", sample.replacingOccurrences(of: #""crash_reports""#, with: #""crash\u005freports""#)),
            ("escaped other key", sample.replacingOccurrences(of: #""user_id""#, with: #""user\u005fid""#)),
            ("crash_reports twice", String(sample.dropLast()) + #","crash_reports":[]}"#),
            // Keys twice in one object: JSONDecoder keeps the first, JSONSerialization, Python and
            // PostgreSQL's jsonb the last; a copy with both would read differently elsewhere.
            ("a top-level key twice", String(sample.dropLast()) + #","user_id":"someone else"}"#),
            ("a key twice in a report", Self.first(#""exception_type":""#, in: sample, with: #""exception_type":"OTHER","exception_type":""#)),
            ("a key written with an escape in a report", Self.first(#""exception_type""#, in: sample, with: #""exception\u005ftype""#)),
            // The decoder compares keys as Swift strings: "café" composed and decomposed are one key.
            ("canonically equal keys", #"{"crash_reports":[{"a":{"caf\#u{E9}":1,"cafe\#u{301}":2}}]}"#),
            ("no crash_reports", #"{"test_run_id":"x"}"#),
            ("crash_reports an object", #"{"crash_reports":{"a":[1]}}"#),
            ("an array", "[" + sample + "]"),
            ("trailing bytes", sample + "x"),
            ("cut short", String(sample.dropLast(40))),
            ("unterminated string", #"{"crash_reports":[{"a":"b]}"#),
            ("unclosed array", #"{"crash_reports":[{"a":1}"#),
            ("empty", ""),
        ]
        for (name, text) in refused {
            #expect(StoredAsSent.find(in: Array(text.utf8)) == nil, "\(name)")
        }
        #expect(StoredAsSent.find(in: Array(#" {"crash_reports" : [ ] } "#.utf8))?.reports == [])
        // The same key in two objects is no duplicate; nor are keys that differ.
        #expect(StoredAsSent.find(in: Array(#"{"crash_reports":[{"a":1,"b":{"a":2}},{"a":3}],"a":[{"a":4}]}"#.utf8))?.reports.count == 2)
        // An object of 50,000 keys: each is looked up in a set once it has more than a few.
        let many = "{" + (0..<50_000).map { #""k\#($0)":1"# }.joined(separator: ",") + "}"
        #expect(StoredAsSent.find(in: Array(#"{"crash_reports":[\#(many)]}"#.utf8))?.reports.count == 1)
        #expect(StoredAsSent.find(in: Array(#"{"crash_reports":[\#(String(many.dropLast())),"k7":2}]}"#.utf8)) == nil)
    }

    static func first(_ target: String, in text: String, with replacement: String) -> String {
        guard let range = text.range(of: target) else { return text }
        return text.replacingCharacters(in: range, with: replacement)
    }

    @Test func aFilledInFieldIsEncodedNotCut() throws {
        for edit in ["report_id", "symbolicated"] {
            let body = try PayloadDecodingTests.body { PayloadDecodingTests.editReports(&$0) { $0[edit] = nil } }
            #expect(try PayloadDecoding.decoded(body).asSent == false, "\(edit)")
        }
        // The checked way (a report without stack_trace gets an empty one) is never cut either.
        let noStack = try PayloadDecodingTests.body { PayloadDecodingTests.editReports(&$0) { $0["stack_trace"] = nil } }
        #expect(try PayloadDecoding.decoded(noStack).asSent == false)
        #expect(try PayloadDecoding.decoded(PayloadDecodingTests.body()).asSent)
    }

    /// Through the server: an upload with a field this collector does not know keeps it in both
    /// copies (a newer runtime's data survives an older collector); one with a report id filled in
    /// stores the filled-in id; one whose key is written with an escape is stored and grouped alike.
    @Test func uploadsAreStoredAsSentOrEncoded() async throws {
        try await TestCollector.with { collector in
            let newer = try PayloadDecodingTests.body {
                $0["from_a_newer_runtime"] = ["kept": true]
                PayloadDecodingTests.editReports(&$0) { $0["report_field_to_come"] = 7 }
            }
            #expect(try await collector.upload(Data(newer)).status == 201)
            var stored = try await collector.store.reports(after: 0, limit: 10)
            #expect(!stored.isEmpty && stored.allSatisfy { $0.reportJSON.contains(#""report_field_to_come":7"#) }, "\(stored)")
            let first = try await collector.store.issues(IssueQuery())
            let issue = try #require(first.first)
            let event = try #require(try await collector.store.events(issueID: issue.id, limit: 1).first)
            #expect(event.payloadJSON.contains(#""from_a_newer_runtime""#) && event.payloadJSON.contains(#""crash_reports":[]"#))

            let unnamed = try PayloadDecodingTests.body {
                $0["test_run_id"] = "run-unnamed"
                PayloadDecodingTests.editReports(&$0) { $0["report_id"] = nil }
            }
            #expect(try await collector.upload(Data(unnamed)).status == 201)
            let escaped = String(decoding: try PayloadDecodingTests.body { $0["test_run_id"] = "run-escaped" }, as: UTF8.self)
                .replacingOccurrences(of: #""crash_reports""#, with: #""crash\u005freports""#)
            #expect(try await collector.upload(Data(escaped.utf8)).status == 201)
            stored = try await collector.store.reports(after: stored.map(\.id).max() ?? 0, limit: 20)
            let entries = try stored.map { try JSONDecoder().decode(DiagnosticsPayload.CrashReportEntry.self, from: Data($0.reportJSON.utf8)) }
            #expect(entries.contains { $0.report_id == "report-0" }, "\(entries.map(\.report_id))")
            #expect(stored.allSatisfy { !$0.reportJSON.contains("report_field_to_come") })
            // Each upload's reports went to the first upload's issues: the same crashes, however stored.
            let issues = try await collector.store.issues(IssueQuery())
            #expect(Set(issues.map(\.id)) == Set(first.map(\.id)), "\(issues)")

            // A row this model cannot read (written by another version): the issue's page and API
            // still answer, with the event listed and its whole-event fields left out.
            let unreadable = try #require(stored.first)
            let entry = try JSONDecoder().decode(DiagnosticsPayload.CrashReportEntry.self, from: Data(unreadable.reportJSON.utf8))
            #expect(try await collector.store.replaceReport(.init(
                id: unreadable.id, bundleID: unreadable.bundleID, kind: entry.kind, reportJSON: #"{"timestamp":1}"#,
                symbolicated: unreadable.symbolicated, issue: Grouping.issueKey(for: entry), now: TestClock.now())))
            var owner: Int64?
            for issue in try await collector.store.issues(IssueQuery())
            where try await collector.store.events(issueID: issue.id, limit: 50).contains(where: { $0.id == unreadable.id }) {
                owner = issue.id
            }
            let ownerID = try #require(owner)
            let api = try await collector.read("/api/issues/\(ownerID)?event=\(unreadable.id)")
            #expect(api.status == 200, "\(api.text.prefix(300))")
            #expect(api.json["event"] == nil || api.json["event"] is NSNull)
            #expect(try await collector.read("/issues/\(ownerID)?event=\(unreadable.id)").status == 200)
            #expect(issues.allSatisfy { issue in issue.eventCount == 3 * (first.first { $0.id == issue.id }?.eventCount ?? 0) }, "\(issues)")
        }
    }
}
