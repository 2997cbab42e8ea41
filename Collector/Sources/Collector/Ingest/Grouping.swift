// Grouping lives in the model (CrashReportModel/CrashGrouping.swift), shared with the runtime's
// Sentry transport and crashtool so that a collector issue and a Sentry fingerprint mean the same
// crash. Here: re-signing stored reports when the rule changes (`crash-collector regroup`), with
// the store's replaceReport that `resymbolicate` uses to move a report between issues.
import CrashReportModel
import Foundation

typealias Grouping = CrashGrouping

public enum Regrouping {
    /// What `regroup` did.
    public struct Result: Sendable, Equatable {
        public var examined = 0
        /// Reports now in an issue of another signature.
        public var moved = 0
        /// Reports whose stored entry could not be read (left where they are).
        public var unreadable = 0
    }

    /// Re-signs every stored report with the current rule (CrashGrouping.ruleVersion) and moves it
    /// to the issue of its signature; an issue left empty goes, and every issue that keeps reports
    /// is marked with the current rule and titled by it. Safe beside a running collector (each
    /// report is replaced in its own transaction); running it twice changes nothing the second time.
    public static func regroup(_ store: any Store, batch: Int = 200, now: Date = Date()) async throws -> Result {
        var result = Result()
        var after: Int64 = 0
        while true {
            let page = try await store.reports(after: after, limit: batch)
            guard let last = page.last else { break }
            after = last.id
            for report in page {
                result.examined += 1
                guard let entry = try? JSONDecoder().decode(DiagnosticsPayload.CrashReportEntry.self, from: Data(report.reportJSON.utf8)) else {
                    result.unreadable += 1
                    continue
                }
                let key = CrashGrouping.issueKey(for: entry)
                if key == nil && report.issueSignature == nil { continue }
                try await store.replaceReport(.init(
                    id: report.id, bundleID: report.bundleID, kind: entry.kind, reportJSON: report.reportJSON,
                    symbolicated: report.symbolicated, issue: key, now: now))
                if key?.signature != report.issueSignature { result.moved += 1 }
            }
        }
        return result
    }

    /// The line a collector logs at start when its issues were signed by an older rule; nil when
    /// they were not (or there are none).
    public static func staleRuleNotice(_ store: any Store) async throws -> String? {
        guard let oldest = try await store.oldestGroupingRule(), oldest < CrashGrouping.ruleVersion else { return nil }
        return "issues in this database were grouped by rule \(oldest); new reports are grouped by rule \(CrashGrouping.ruleVersion), "
            + "so one crash can land in two issues: run `crash-collector regroup` (with the same --database) to re-sign the stored reports"
    }
}
