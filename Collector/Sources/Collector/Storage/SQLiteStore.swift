// The default store: one SQLite file in WAL mode, one connection owned by an actor (SQLite has one
// writer at a time; the actor makes that explicit and keeps statements off other threads).
// Issue statistics are computed from the reports table, so retention never leaves stale counts.
import Foundation

public actor SQLiteStore: Store {
    private let db: SQLiteConnection

    /// Opens or creates the database at `path` (":memory:" for a throw-away one) and migrates it.
    public init(path: String) throws {
        let connection = try SQLiteConnection(path: path)
        try connection.execute(Self.schema)
        // Added with grouping rule 2: issues from before it were signed by rule 1.
        let columns = try connection.query("PRAGMA table_info(issues)") { $0.text(1) }
        if !columns.contains("grouping_rule") {
            try connection.execute("ALTER TABLE issues ADD COLUMN grouping_rule INTEGER NOT NULL DEFAULT 1")
        }
        db = connection
    }

    static let schema = """
        CREATE TABLE IF NOT EXISTS uploads (
            id INTEGER PRIMARY KEY,
            diagnostics_id TEXT NOT NULL UNIQUE,
            idempotency_key TEXT UNIQUE,
            test_run_id TEXT NOT NULL,
            received_at INTEGER NOT NULL,
            answer TEXT NOT NULL,
            bundle_id TEXT NOT NULL,
            app_name TEXT NOT NULL,
            app_version TEXT NOT NULL,
            build_number TEXT NOT NULL,
            environment TEXT NOT NULL,
            user_id TEXT,
            user_key TEXT NOT NULL,
            payload TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS uploads_received ON uploads(received_at);
        CREATE TABLE IF NOT EXISTS issues (
            id INTEGER PRIMARY KEY,
            bundle_id TEXT NOT NULL,
            signature TEXT NOT NULL,
            kind TEXT NOT NULL,
            title TEXT NOT NULL,
            subtitle TEXT NOT NULL,
            exception_type TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            UNIQUE (bundle_id, signature)
        );
        CREATE TABLE IF NOT EXISTS reports (
            id INTEGER PRIMARY KEY,
            upload_id INTEGER NOT NULL REFERENCES uploads(id) ON DELETE CASCADE,
            issue_id INTEGER REFERENCES issues(id) ON DELETE SET NULL,
            report_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            occurred_at INTEGER NOT NULL,
            received_at INTEGER NOT NULL,
            exception_type TEXT NOT NULL,
            exception_message TEXT NOT NULL,
            symbolicated INTEGER NOT NULL,
            app_version TEXT NOT NULL,
            user_key TEXT NOT NULL,
            report TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS reports_issue ON reports(issue_id, occurred_at);
        CREATE INDEX IF NOT EXISTS reports_upload ON reports(upload_id);
        CREATE INDEX IF NOT EXISTS reports_received ON reports(received_at, issue_id);
        CREATE TABLE IF NOT EXISTS sessions (
            bundle_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            app_version TEXT NOT NULL,
            user_key TEXT NOT NULL,
            day TEXT NOT NULL,
            first_seen INTEGER NOT NULL,
            last_seen INTEGER NOT NULL,
            crashed INTEGER NOT NULL,
            PRIMARY KEY (bundle_id, session_id)
        );
        CREATE INDEX IF NOT EXISTS sessions_day ON sessions(day);
        CREATE TABLE IF NOT EXISTS api_logs (
            id INTEGER PRIMARY KEY,
            received_at INTEGER NOT NULL,
            app_id TEXT,
            method TEXT,
            url TEXT,
            status_code INTEGER,
            duration INTEGER,
            timestamp INTEGER,
            event TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS api_logs_received ON api_logs(received_at);
        """

    public func answer(forIdempotencyKey key: String) throws -> String? {
        try db.query("SELECT answer FROM uploads WHERE idempotency_key = ?1", [.text(key)]) { $0.text(0) }.first
    }

    public func ingest(_ record: IngestRecord) throws -> IngestOutcome {
        do {
            return try db.transaction { try insert(record) }
        } catch let error as SQLiteError where error.isConstraintViolation {
            // Another process sharing the file stored the same key between our check and insert.
            if let key = record.idempotencyKey, let first = try answer(forIdempotencyKey: key) { return .duplicate(answer: first) }
            throw error
        }
    }

    /// The issue's row id, created if new. The newest title wins: a better-symbolicated event
    /// names the issue better.
    private func upsertIssue(_ issue: IssueKey, bundleID: String, kind: String, at milliseconds: Int64) throws -> SQLValue {
        let id = try db.query("""
            INSERT INTO issues (bundle_id, signature, kind, title, subtitle, exception_type, created_at, grouping_rule)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
            ON CONFLICT (bundle_id, signature) DO UPDATE SET title = excluded.title, subtitle = excluded.subtitle,
                grouping_rule = excluded.grouping_rule
            RETURNING id
            """, [
                .text(bundleID), .text(issue.signature), .text(kind), .text(issue.title),
                .text(issue.subtitle), .text(issue.exceptionType), .integer(milliseconds), .int(issue.ruleVersion),
            ]) { $0.int(0) }
        return id.first.map(SQLValue.integer) ?? .null
    }

    private func insert(_ record: IngestRecord) throws -> IngestOutcome {
        if let key = record.idempotencyKey, let first = try answer(forIdempotencyKey: key) {
            return .duplicate(answer: first)
        }
        let received = record.receivedAt.millisecondsSince1970
        try db.run("""
            INSERT INTO uploads (diagnostics_id, idempotency_key, test_run_id, received_at, answer, bundle_id, app_name,
                                 app_version, build_number, environment, user_id, user_key, payload)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
            """, [
                .text(record.diagnosticsID), .optional(record.idempotencyKey), .text(record.testRunID), .integer(received),
                .text(record.answer), .text(record.app.bundle_id), .text(record.app.app_name), .text(record.app.app_version),
                .text(record.app.build_number), .text(record.app.environment), .optional(record.userID), .text(record.userKey),
                .text(record.payloadJSON),
            ])
        let uploadID = db.lastInsertRowID
        for report in record.reports {
            let issueID = try report.issue.map { try upsertIssue($0, bundleID: record.app.bundle_id, kind: report.kind, at: received) } ?? .null
            try db.run("""
                INSERT INTO reports (upload_id, issue_id, report_id, kind, occurred_at, received_at, exception_type,
                                     exception_message, symbolicated, app_version, user_key, report)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
                """, [
                    .integer(uploadID), issueID, .text(report.reportID), .text(report.kind),
                    .integer(report.occurredAt.millisecondsSince1970), .integer(received), .text(report.exceptionType),
                    .text(report.exceptionMessage), .bool(report.symbolicated), .text(record.app.app_version),
                    .text(record.userKey), .text(report.reportJSON),
                ])
        }
        try db.run("""
            INSERT INTO sessions (bundle_id, session_id, app_version, user_key, day, first_seen, last_seen, crashed)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7)
            ON CONFLICT (bundle_id, session_id) DO UPDATE SET
                last_seen = max(last_seen, excluded.last_seen),
                crashed = max(crashed, excluded.crashed)
            """, [
                .text(record.app.bundle_id), .text(record.session.sessionID), .text(record.session.appVersion),
                .text(record.userKey), .text(record.session.day), .integer(received), .bool(record.session.crashed),
            ])
        return .stored
    }

    public func insertAPILogs(_ logs: [APILogRecord]) throws -> Int {
        try db.transaction {
            for log in logs {
                try db.run("""
                    INSERT INTO api_logs (received_at, app_id, method, url, status_code, duration, timestamp, event)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                    """, [
                        .integer(log.receivedAt.millisecondsSince1970), .optional(log.appID), .optional(log.method),
                        .optional(log.url), log.statusCode.map { .int($0) } ?? .null, log.duration.map { .int($0) } ?? .null,
                        log.timestamp.map(SQLValue.integer) ?? .null, .text(log.eventJSON),
                    ])
            }
            return logs.count
        }
    }

    private static let issueColumns = """
        SELECT i.id, i.bundle_id, i.signature, i.kind, i.title, i.subtitle, i.exception_type,
               COUNT(r.id), COUNT(DISTINCT r.user_key), MIN(r.occurred_at), MAX(r.occurred_at),
               (SELECT group_concat(app_version, char(10)) FROM
                   (SELECT DISTINCT app_version FROM reports WHERE issue_id = i.id ORDER BY app_version))
        FROM issues i JOIN reports r ON r.issue_id = i.id
        """

    private static func issue(_ row: SQLiteStatement) -> IssueSummary {
        IssueSummary(
            id: row.int(0), bundleID: row.text(1), signature: row.text(2), kind: row.text(3), title: row.text(4),
            subtitle: row.text(5), exceptionType: row.text(6), eventCount: Int(row.int(7)), userCount: Int(row.int(8)),
            firstSeen: Date(milliseconds: row.int(9)), lastSeen: Date(milliseconds: row.int(10)),
            versions: row.text(11).split(separator: "\n").map(String.init))
    }

    public func issues(_ query: IssueQuery) throws -> [IssueSummary] {
        try db.query("""
            \(Self.issueColumns)
            WHERE (?1 IS NULL OR i.bundle_id = ?1) AND (?2 IS NULL OR i.kind = ?2)
            GROUP BY i.id ORDER BY MAX(r.occurred_at) DESC, i.id DESC LIMIT ?3 OFFSET ?4
            """, [.optional(query.bundleID), .optional(query.kind), .int(max(1, query.limit)), .int(max(0, query.offset))],
            row: Self.issue)
    }

    public func issue(id: Int64) throws -> IssueSummary? {
        try db.query("\(Self.issueColumns) WHERE i.id = ?1 GROUP BY i.id", [.integer(id)], row: Self.issue).first
    }

    public func events(issueID: Int64, limit: Int, before: Int64?) throws -> [StoredReport] {
        try db.query("""
            SELECT r.id, u.diagnostics_id, r.report_id, r.kind, r.occurred_at, r.received_at, r.app_version, u.user_id,
                   r.report, u.payload
            FROM reports r JOIN uploads u ON u.id = r.upload_id
            WHERE r.issue_id = ?1
              AND (?3 IS NULL OR (r.occurred_at, r.id) < (SELECT b.occurred_at, b.id FROM reports b WHERE b.id = ?3))
            ORDER BY r.occurred_at DESC, r.id DESC LIMIT ?2
            """, [.integer(issueID), .int(max(1, limit)), .optionalInteger(before)], row: Self.storedReport)
    }

    public func event(issueID: Int64, id: Int64) throws -> StoredReport? {
        try db.query("""
            SELECT r.id, u.diagnostics_id, r.report_id, r.kind, r.occurred_at, r.received_at, r.app_version, u.user_id,
                   r.report, u.payload
            FROM reports r JOIN uploads u ON u.id = r.upload_id
            WHERE r.issue_id = ?1 AND r.id = ?2
            """, [.integer(issueID), .integer(id)], row: Self.storedReport).first
    }

    private static func storedReport(_ row: SQLiteStatement) -> StoredReport {
        StoredReport(
            id: row.int(0), diagnosticsID: row.text(1), reportID: row.text(2), kind: row.text(3),
            occurredAt: Date(milliseconds: row.int(4)), receivedAt: Date(milliseconds: row.int(5)),
            appVersion: row.text(6), userID: row.optionalText(7), reportJSON: row.text(8), payloadJSON: row.text(9))
    }

    public func rawReports(after id: Int64, limit: Int) throws -> [RawReport] {
        try db.query("""
            SELECT r.id, u.bundle_id, r.report FROM reports r JOIN uploads u ON u.id = r.upload_id
            WHERE r.symbolicated = 0 AND r.id > ?1 ORDER BY r.id LIMIT ?2
            """, [.integer(id), .int(max(1, limit))]) { row in
            RawReport(id: row.int(0), bundleID: row.text(1), reportJSON: row.text(2))
        }
    }

    public func rawReports(after id: Int64, limit: Int, receivedSince date: Date) throws -> [RawReport] {
        try db.query("""
            SELECT r.id, u.bundle_id, r.report FROM reports r JOIN uploads u ON u.id = r.upload_id
            WHERE r.symbolicated = 0 AND r.id > ?1 AND r.received_at >= ?3 ORDER BY r.id LIMIT ?2
            """, [.integer(id), .int(max(1, limit)), .integer(date.millisecondsSince1970)]) { row in
            RawReport(id: row.int(0), bundleID: row.text(1), reportJSON: row.text(2))
        }
    }

    public func rawReports(diagnosticsID: String) throws -> [RawReport] {
        try db.query("""
            SELECT r.id, u.bundle_id, r.report FROM reports r JOIN uploads u ON u.id = r.upload_id
            WHERE u.diagnostics_id = ?1 AND r.symbolicated = 0 ORDER BY r.id
            """, [.text(diagnosticsID)]) { row in
            RawReport(id: row.int(0), bundleID: row.text(1), reportJSON: row.text(2))
        }
    }

    public func reports(after id: Int64, limit: Int) throws -> [RawReport] {
        try db.query("""
            SELECT r.id, u.bundle_id, r.report, r.symbolicated, i.signature
            FROM reports r JOIN uploads u ON u.id = r.upload_id LEFT JOIN issues i ON i.id = r.issue_id
            WHERE r.id > ?1 ORDER BY r.id LIMIT ?2
            """, [.integer(id), .int(max(1, limit))]) { row in
            RawReport(id: row.int(0), bundleID: row.text(1), reportJSON: row.text(2), symbolicated: row.int(3) != 0,
                      issueSignature: row.optionalText(4))
        }
    }

    public func oldestGroupingRule() throws -> Int? {
        try db.query("""
            SELECT MIN(grouping_rule) FROM issues i WHERE EXISTS (SELECT 1 FROM reports r WHERE r.issue_id = i.id)
            """) { $0.optionalInt(0) }.first.flatMap { $0.map(Int.init) }
    }

    @discardableResult
    public func replaceReport(_ replacement: ReportReplacement) throws -> Bool {
        try db.transaction {
            let rows = try db.query("SELECT issue_id, report FROM reports WHERE id = ?1", [.integer(replacement.id)]) {
                ($0.optionalInt(0), $0.text(1))
            }
            guard let (formerID, stored) = rows.first else { return false }   // purged meanwhile
            if let expected = replacement.expectedJSON, stored != expected { return false }
            let issueID = try replacement.issue.map {
                try upsertIssue($0, bundleID: replacement.bundleID, kind: replacement.kind, at: replacement.now.millisecondsSince1970)
            } ?? .null
            try db.run("UPDATE reports SET report = ?2, symbolicated = ?3, issue_id = ?4 WHERE id = ?1", [
                .integer(replacement.id), .text(replacement.reportJSON), .bool(replacement.symbolicated), issueID,
            ])
            if let formerID {
                try db.run("DELETE FROM issues WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM reports WHERE issue_id = ?1)",
                           [.integer(formerID)])
            }
            return true
        }
    }

    public func apiLogs(limit: Int, appID: String?, before: Int64?) throws -> [StoredAPILog] {
        try db.query("""
            SELECT id, received_at, app_id, method, url, status_code, duration, timestamp, event FROM api_logs
            WHERE (?1 IS NULL OR app_id = ?1) AND (?3 IS NULL OR id < ?3) ORDER BY id DESC LIMIT ?2
            """, [.optional(appID), .int(max(1, limit)), .optionalInteger(before)]) { row in
            StoredAPILog(
                id: row.int(0), receivedAt: Date(milliseconds: row.int(1)), appID: row.optionalText(2),
                method: row.optionalText(3), url: row.optionalText(4), statusCode: row.optionalInt(5).map { Int($0) },
                duration: row.optionalInt(6).map { Int($0) }, timestamp: row.optionalInt(7), eventJSON: row.text(8))
        }
    }

    public func crashFree(days: Int, now: Date) throws -> [CrashFreeRow] {
        let since = utcDay(now.addingTimeInterval(-Double(max(1, days) - 1) * 86_400))
        return try db.query("""
            SELECT bundle_id, app_version, day, COUNT(*), SUM(crashed), COUNT(DISTINCT user_key),
                   COUNT(DISTINCT CASE WHEN crashed = 1 THEN user_key END)
            FROM sessions WHERE day >= ?1
            GROUP BY bundle_id, app_version, day ORDER BY day DESC, bundle_id, app_version
            """, [.text(since)]) { row in
            CrashFreeRow(
                bundleID: row.text(0), appVersion: row.text(1), day: row.text(2), sessions: Int(row.int(3)),
                crashedSessions: Int(row.int(4)), users: Int(row.int(5)), crashedUsers: Int(row.int(6)))
        }
    }

    public func recordSessions(_ sessions: [SessionBeacon], receivedAt: Date) throws {
        let received = SQLValue.integer(receivedAt.millisecondsSince1970)
        try db.transaction {
            for session in sessions {
                // crashed is left as it is: a beacon never un-crashes a session its crash upload marked.
                try db.run("""
                    INSERT INTO sessions (bundle_id, session_id, app_version, user_key, day, first_seen, last_seen, crashed)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 0)
                    ON CONFLICT (bundle_id, session_id) DO UPDATE SET
                        day = excluded.day,
                        last_seen = max(last_seen, excluded.last_seen)
                    """, [
                        .text(session.bundleID), .text(session.sessionID), .text(session.appVersion), .text(session.userKey),
                        .text(session.day), received,
                    ])
            }
        }
    }

    public func eventCounts(from: Date, to: Date) throws -> [Int64: Int] {
        let rows = try db.query("""
            SELECT issue_id, COUNT(*) FROM reports WHERE received_at >= ?1 AND received_at < ?2 AND issue_id IS NOT NULL
            GROUP BY issue_id
            """, [.integer(from.millisecondsSince1970), .integer(to.millisecondsSince1970)]) { ($0.int(0), Int($0.int(1))) }
        return Dictionary(rows, uniquingKeysWith: +)
    }

    public func dailyEventCounts(from: Date, to: Date, issueID: Int64?) throws -> [DailyEventCount] {
        // Days as whole multiples of 86,400,000 ms since the epoch: UTC days, the same in both stores.
        try db.query("""
            SELECT issue_id, received_at / 86400000, COUNT(*) FROM reports
            WHERE received_at >= ?1 AND received_at < ?2 AND issue_id IS NOT NULL AND (?3 IS NULL OR issue_id = ?3)
            GROUP BY issue_id, received_at / 86400000 ORDER BY issue_id, 2
            """, [.integer(from.millisecondsSince1970), .integer(to.millisecondsSince1970), issueID.map(SQLValue.integer) ?? .null]) {
            DailyEventCount(issueID: $0.int(0), day: utcDay(Date(timeIntervalSince1970: Double($0.int(1)) * 86_400)),
                            events: Int($0.int(2)))
        }
    }

    public func purge(receivedBefore date: Date) throws -> PurgeCounts {
        let cutoff = SQLValue.integer(date.millisecondsSince1970)
        return try db.transaction {
            let uploads = try db.run("DELETE FROM uploads WHERE received_at < ?1", [cutoff])   // reports cascade
            try db.run("DELETE FROM sessions WHERE last_seen < ?1", [cutoff])
            let logs = try db.run("DELETE FROM api_logs WHERE received_at < ?1", [cutoff])
            let issues = try db.run("DELETE FROM issues WHERE NOT EXISTS (SELECT 1 FROM reports WHERE issue_id = issues.id)")
            return PurgeCounts(uploads: uploads, apiLogs: logs, issues: issues)
        }
    }
}
