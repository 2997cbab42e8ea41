// The storage interface: what ingest writes and what the read API and dashboard read. SQLiteStore
// is the default; a PostgreSQL store implements the same protocol so several collectors can share
// one database. Grouping and validation happen before a store sees a record: stores only persist.
import CrashReportModel
import Foundation
import Glibc

public protocol Store: Sendable {
    /// The 201 body answered the first time this idempotency key was stored, if it was.
    func answer(forIdempotencyKey key: String) async throws -> String?
    /// Stores one upload atomically, unless its idempotency key is already stored: then nothing is
    /// written and the first answer comes back.
    func ingest(_ record: IngestRecord) async throws -> IngestOutcome
    /// Stores seed 003 api_log events; the number stored.
    func insertAPILogs(_ logs: [APILogRecord]) async throws -> Int

    func issues(_ query: IssueQuery) async throws -> [IssueSummary]
    func issue(id: Int64) async throws -> IssueSummary?
    /// The issue's events, newest first (by occurrence, then id); with `before`, those that come
    /// after that event in this order (keyset pagination: pages stay right while events arrive).
    func events(issueID: Int64, limit: Int, before: Int64?) async throws -> [StoredReport]
    /// One event of the issue, whatever its age.
    func event(issueID: Int64, id: Int64) async throws -> StoredReport?
    /// API logs, newest first; with `before`, those with a smaller id.
    func apiLogs(limit: Int, appID: String?, before: Int64?) async throws -> [StoredAPILog]
    /// Crash-free sessions and users per app version and UTC day, over the last `days` days.
    func crashFree(days: Int, now: Date) async throws -> [CrashFreeRow]
    /// Stores session beacons (POST /api/v1/sessions): a session not yet known is added, clean; one
    /// already known (from an upload or an earlier beacon) keeps its crashed flag and takes the
    /// beacon's day (when it started).
    func recordSessions(_ sessions: [SessionBeacon], receivedAt: Date) async throws

    /// Events per issue id received in `from ..< to` (issues with none are left out).
    func eventCounts(from: Date, to: Date) async throws -> [Int64: Int]
    /// Events per issue and UTC day received in `from ..< to`; one issue's, or every issue's when nil.
    func dailyEventCounts(from: Date, to: Date, issueID: Int64?) async throws -> [DailyEventCount]

    /// Deletes uploads, reports, sessions and api logs received before `date`, then issues left
    /// without events.
    func purge(receivedBefore date: Date) async throws -> PurgeCounts

    /// Reports stored with symbolicated false, by id, those after `id` (paging): what
    /// `crash-collector resymbolicate` looks at when symbols arrive after their crashes.
    func rawReports(after id: Int64, limit: Int) async throws -> [RawReport]
    /// The same, of those received at or after `date` (a collector's start finishes what a
    /// restart left in its symbolication queue).
    func rawReports(after id: Int64, limit: Int, receivedSince date: Date) async throws -> [RawReport]
    /// The reports of one upload (by the diagnostics id its 201 answered) stored with
    /// symbolicated false: what arrival symbolication finishes after the answer.
    func rawReports(diagnosticsID: String) async throws -> [RawReport]
    /// Replaces a stored report's entry after symbolication and moves it to the issue of its new
    /// signature; its former issue goes when no report is left in it. With `expectedJSON`, only
    /// when the stored entry is still that text (another pass did not rewrite it since it was
    /// read); false when it was not replaced.
    @discardableResult
    func replaceReport(_ replacement: ReportReplacement) async throws -> Bool

    /// Every stored report, by id, those after `id` (paging), with its issue's signature: what
    /// `crash-collector regroup` re-signs with the current grouping rule.
    func reports(after id: Int64, limit: Int) async throws -> [RawReport]
    /// The oldest grouping rule (CrashGrouping.ruleVersion) that signed an issue with reports;
    /// nil when there is none. Issues stored before rules had numbers count as rule 1.
    func oldestGroupingRule() async throws -> Int?

    /// Releases connections; the store is not used afterwards.
    func close() async
}

public struct RawReport: Sendable {
    public var id: Int64
    public var bundleID: String
    public var reportJSON: String
    public var symbolicated = false
    /// The signature of the issue it is in now (nil: none, or not read).
    public var issueSignature: String?
}

public struct ReportReplacement: Sendable {
    public var id: Int64
    public var bundleID: String
    public var kind: String
    public var reportJSON: String
    public var symbolicated: Bool
    public var issue: CrashGrouping.IssueKey?
    public var now: Date
    /// The entry as it was read: the replacement is skipped when the stored one differs now.
    public var expectedJSON: String?

    public init(id: Int64, bundleID: String, kind: String, reportJSON: String, symbolicated: Bool, issue: CrashGrouping.IssueKey?,
                now: Date = Date(), expectedJSON: String? = nil) {
        self.id = id
        self.bundleID = bundleID
        self.kind = kind
        self.reportJSON = reportJSON
        self.symbolicated = symbolicated
        self.issue = issue
        self.now = now
        self.expectedJSON = expectedJSON
    }
}

extension Store {
    func events(issueID: Int64, limit: Int) async throws -> [StoredReport] {
        try await events(issueID: issueID, limit: limit, before: nil)
    }

    func apiLogs(limit: Int, appID: String?) async throws -> [StoredAPILog] {
        try await apiLogs(limit: limit, appID: appID, before: nil)
    }

    public func close() async {}
}

public enum IngestOutcome: Sendable, Equatable {
    case stored
    case duplicate(answer: String)
}

/// One accepted upload as it is stored: the payload (normalised), the answer it got, and one
/// report per crash_reports entry, each with its issue signature.
public struct IngestRecord: Sendable {
    public var diagnosticsID: String
    public var idempotencyKey: String?
    public var testRunID: String
    public var receivedAt: Date
    /// The 201 body, kept so that a repeated idempotency key gets the same answer.
    public var answer: String
    public var app: AppMetadata
    public var userID: String?
    /// Who "a user" is for counting: the user id, else the host's device identifier.
    public var userKey: String
    public var payloadJSON: String
    public var reports: [Report]
    public var session: Session

    public struct Report: Sendable {
        public var reportID: String
        public var kind: String
        public var occurredAt: Date
        public var exceptionType: String
        public var exceptionMessage: String
        public var symbolicated: Bool
        public var reportJSON: String
        /// nil for kinds that are not issues (diagnostics snapshots).
        public var issue: IssueKey?
    }

    /// A session is a test_run_id (the runtime's session id): crashed when one of its reports is a crash.
    public struct Session: Sendable {
        public var sessionID: String
        public var appVersion: String
        public var crashed: Bool
        /// yyyy-MM-dd (UTC) the session is counted on: when it ran, not when its crash arrived
        /// (a crash is uploaded by the next launch, possibly days later).
        public var day: String
    }
}

public typealias IssueKey = CrashGrouping.IssueKey

/// One entry of a session beacon, validated: the session exists, whether or not it ever uploads.
public struct SessionBeacon: Sendable, Equatable {
    public var sessionID: String
    public var bundleID: String
    public var appVersion: String
    public var buildNumber: String
    /// As IngestRecord.userKey: the user id, else "device:" and the device identifier.
    public var userKey: String
    /// yyyy-MM-dd (UTC) of started_at.
    public var day: String

    public init(sessionID: String, bundleID: String, appVersion: String, buildNumber: String, userKey: String, day: String) {
        self.sessionID = sessionID
        self.bundleID = bundleID
        self.appVersion = appVersion
        self.buildNumber = buildNumber
        self.userKey = userKey
        self.day = day
    }
}

public struct DailyEventCount: Sendable, Equatable {
    public var issueID: Int64
    /// yyyy-MM-dd, UTC, of the events' received_at.
    public var day: String
    public var events: Int
}

public struct APILogRecord: Sendable {
    public var receivedAt: Date
    public var appID: String?
    public var method: String?
    public var url: String?
    public var statusCode: Int?
    public var duration: Int?
    /// Milliseconds since 1970, as the event says.
    public var timestamp: Int64?
    public var eventJSON: String
}

public struct StoredAPILog: Sendable {
    public var id: Int64
    public var receivedAt: Date
    public var appID: String?
    public var method: String?
    public var url: String?
    public var statusCode: Int?
    public var duration: Int?
    public var timestamp: Int64?
    public var eventJSON: String
}

public struct IssueQuery: Sendable {
    public var bundleID: String?
    public var kind: String?
    public var limit: Int
    /// Issues to skip (pagination of an order by last occurrence, which changes as events arrive:
    /// a page may repeat or miss an issue that moved).
    public var offset: Int
    public init(bundleID: String? = nil, kind: String? = nil, limit: Int = 100, offset: Int = 0) {
        self.bundleID = bundleID
        self.kind = kind
        self.limit = limit
        self.offset = offset
    }
}

public struct IssueSummary: Sendable, Equatable {
    public var id: Int64
    public var bundleID: String
    public var signature: String
    public var kind: String
    public var title: String
    public var subtitle: String
    public var exceptionType: String
    public var eventCount: Int
    public var userCount: Int
    public var firstSeen: Date
    public var lastSeen: Date
    public var versions: [String]
}

public struct StoredReport: Sendable {
    public var id: Int64
    public var diagnosticsID: String
    public var reportID: String
    public var kind: String
    public var occurredAt: Date
    public var receivedAt: Date
    public var appVersion: String
    public var userID: String?
    public var reportJSON: String
    public var payloadJSON: String
}

public struct CrashFreeRow: Sendable, Equatable {
    public var bundleID: String
    public var appVersion: String
    /// yyyy-MM-dd, UTC.
    public var day: String
    public var sessions: Int
    public var crashedSessions: Int
    public var users: Int
    public var crashedUsers: Int
}

public struct PurgeCounts: Sendable, Equatable {
    public var uploads: Int
    public var apiLogs: Int
    public var issues: Int
}

extension Date {
    var millisecondsSince1970: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }
    init(milliseconds: Int64) { self.init(timeIntervalSince1970: Double(milliseconds) / 1000) }

}

/// yyyy-MM-dd in UTC: sessions, crash-free rates and trends are counted per UTC day, in both
/// stores. Plain arithmetic on days since 1970 (the civil-from-days algorithm): it runs once per
/// row of a trend query, where a Calendar and String(format:) cost far more.
func utcDay(_ date: Date) -> String {
    let days = Int64((date.timeIntervalSince1970 / 86_400).rounded(.down)) + 719_468
    let era = (days >= 0 ? days : days - 146_096) / 146_097
    let dayOfEra = days - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let shiftedMonth = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
    let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
    let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    func padded(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
    return padded(year, 4) + "-" + padded(month, 2) + "-" + padded(day, 2)
}

/// A string as both stores keep it in a text column: U+0000 (JSON allows "\u0000" in any string of
/// a payload) becomes U+FFFD. PostgreSQL's text cannot hold it at all (SQLSTATE 22021: such an
/// upload was a 500 the runtime retried for ever) and SQLite's C-string binding would cut the text
/// there. Query values go through the same rule, so a filter finds what was stored. The payload and
/// report JSON keep the original, escaped.
/// The search is `memchr` over the string's contiguous UTF-8: every upload's payload and report
/// JSON (tens of KB) is bound through here, and a walk of the generic UTF-8 view was about 1 % of
/// the server's CPU under `tools/bench-collector` (perf, 2026-11-28).
func storableText(_ text: String) -> String {
    let hasNUL = text.utf8.withContiguousStorageIfAvailable { bytes in
        bytes.count > 0 && memchr(bytes.baseAddress!, 0, bytes.count) != nil
    } ?? text.utf8.contains(0)
    return hasNUL ? text.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}") : text
}
