// The default store: one SQLite file in WAL mode through GRDB. A DatabasePool has one writer
// connection (SQLite has one writer at a time) and a few readers, so the dashboard's reads do not
// wait for uploads; ":memory:" is a DatabaseQueue (one connection: a pool needs a file). The schema
// is versioned by GRDB's DatabaseMigrator (see `migrator`, decision 0032).
// Issue statistics are computed from the reports table, so retention never leaves stale counts.
import Foundation
import GRDB

public final class SQLiteStore: Store {
    private let writer: any DatabaseWriter
    /// Uploads waiting for the next write (Decision 0044).
    private let ingestQueue = IngestQueue()

    /// Opens or creates the database at `path` (":memory:" for a throw-away one) and migrates it.
    public init(path: String) throws {
        var configuration = Configuration()
        // A lock another process holds (a second collector, `crash-collector regroup`) is waited for
        // up to 5 s instead of failing at once.
        configuration.busyMode = .timeout(5)
        configuration.foreignKeysEnabled = true
        // NORMAL is durable across application crashes in WAL mode; only power loss can lose the last
        // commits. (A DatabasePool sets it with WAL; said here for the in-memory queue too.)
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        if path == ":memory:" {
            writer = try DatabaseQueue(configuration: configuration)
        } else {
            // A new file is the owner's only (0600), whatever the umask: it holds every report and
            // token scope. SQLite gives its -wal and -shm files the database file's permissions.
            if !path.hasPrefix("file:") { createOwnerOnly(path) }
            writer = try DatabasePool(path: path, configuration: configuration)
        }
        try Self.migrate(writer)
    }

    public func close() async {
        try? writer.close()
    }

    /// Every version of the schema, in order. A migration, once released, never changes: later
    /// changes are new migrations. GRDB records the applied ones in grdb_migrations.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        // v1: the tables as the collector created them before migrations were versioned, with
        // IF NOT EXISTS: on a database that code made, it changes nothing and is recorded applied.
        // Immediate foreign key checks: these migrations only add, and a deferred check would scan
        // every table of an existing database once.
        migrator.registerMigration("v1-tables", foreignKeyChecks: .immediate) { db in
            try db.execute(sql: schemaV1)
        }
        // v2: grouping rule 2 numbered the rules; issues from before it were signed by rule 1. A
        // database made before versioning may have the column already (the unversioned code added it).
        migrator.registerMigration("v2-issues-grouping-rule", foreignKeyChecks: .immediate) { db in
            if try !db.columns(in: "issues").contains(where: { $0.name == "grouping_rule" }) {
                try db.execute(sql: "ALTER TABLE issues ADD COLUMN grouping_rule INTEGER NOT NULL DEFAULT 1")
            }
        }
        return migrator
    }

    /// Applies the migrations not yet applied. Two collectors starting together on a new file may
    /// both find a migration unapplied (GRDB reads grdb_migrations before each migration's own
    /// IMMEDIATE transaction): the second one's record of it then fails its primary key, its
    /// transaction rolls back, and another pass finds it applied. Each such failure means another
    /// process recorded a migration, so one pass per migration, and a last one, are enough.
    private static func migrate(_ writer: any DatabaseWriter) throws {
        let migrator = migrator
        for pass in 0... {
            do {
                return try migrator.migrate(writer)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT && pass < migrator.migrations.count {
                continue
            }
        }
    }

    /// The tables of migration v1: exactly the statements the collector ran at every start before
    /// its schema had versions.
    static let schemaV1 = """
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


    public func answer(forIdempotencyKey key: String) async throws -> String? {
        try await writer.read { db in try Self.answer(forIdempotencyKey: key, db) }
    }

    private static func answer(forIdempotencyKey key: String, _ db: Database) throws -> String? {
        try db.query("SELECT answer FROM uploads WHERE idempotency_key = ?1", [key]) { $0[0] as String }.first
    }

    /// Uploads that arrive while another is being written are written together in the next
    /// transaction, each in its own savepoint, so that one write lock, one commit and one hop to
    /// GRDB's writer serve them all (Decision 0044). The answer still comes after the commit.
    public func ingest(_ record: IngestRecord) async throws -> IngestOutcome {
        try await withCheckedThrowingContinuation { continuation in
            guard ingestQueue.add(record, continuation) else { return }
            Task { await drainIngestQueue() }
        }
    }

    /// Writes what the queue holds, a batch at a time, until it is empty.
    private func drainIngestQueue() async {
        while let batch = ingestQueue.next() {
            do {
                let outcomes = try await ingest(batch: batch.map(\.record))
                for (waiting, outcome) in zip(batch, outcomes) { waiting.continuation.resume(with: outcome) }
            } catch {
                for waiting in batch { waiting.continuation.resume(throwing: error) }
            }
        }
    }

    /// Stores the records in one IMMEDIATE transaction (GRDB's kind for a write: the write lock is
    /// taken up front, so an idempotency check and its insert cannot be overtaken by another
    /// writer), each in a savepoint: a record that fails is undone alone and gets its error, and
    /// the others are stored. A later record repeating an earlier one's key is its duplicate.
    func ingest(batch records: [IngestRecord]) async throws -> [Result<IngestOutcome, any Error>] {
        try await writer.write { db in
            records.map { record in
                var outcome = IngestOutcome.stored
                do {
                    try db.inSavepoint {
                        outcome = try Self.insert(record, db)
                        return .commit
                    }
                    return .success(outcome)
                } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                    // The key stored by another process sharing the file (a write from before this
                    // transaction): its answer. Otherwise the error.
                    if let key = record.idempotencyKey, let first = try? Self.answer(forIdempotencyKey: key, db) {
                        return .success(.duplicate(answer: first))
                    }
                    return .failure(error)
                } catch {
                    return .failure(error)
                }
            }
        }
    }

    /// The issue's row id, created if new. The newest title wins: a better-symbolicated event
    /// names the issue better.
    private static func upsertIssue(_ issue: IssueKey, bundleID: String, kind: String, at milliseconds: Int64,
                                    _ db: Database) throws -> Int64? {
        try db.query("""
            INSERT INTO issues (bundle_id, signature, kind, title, subtitle, exception_type, created_at, grouping_rule)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
            ON CONFLICT (bundle_id, signature) DO UPDATE SET title = excluded.title, subtitle = excluded.subtitle,
                grouping_rule = excluded.grouping_rule
            RETURNING id
            """, [bundleID, issue.signature, kind, issue.title, issue.subtitle, issue.exceptionType, milliseconds, issue.ruleVersion]) {
            $0[0] as Int64
        }.first
    }

    private static func insert(_ record: IngestRecord, _ db: Database) throws -> IngestOutcome {
        if let key = record.idempotencyKey, let first = try answer(forIdempotencyKey: key, db) {
            return .duplicate(answer: first)
        }
        let received = record.receivedAt.millisecondsSince1970
        try db.run("""
            INSERT INTO uploads (diagnostics_id, idempotency_key, test_run_id, received_at, answer, bundle_id, app_name,
                                 app_version, build_number, environment, user_id, user_key, payload)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
            """, [
                record.diagnosticsID, record.idempotencyKey, record.testRunID, received, record.answer, record.app.bundle_id,
                record.app.app_name, record.app.app_version, record.app.build_number, record.app.environment, record.userID,
                record.userKey, record.payloadJSON,
            ])
        let uploadID = db.lastInsertedRowID
        for report in record.reports {
            let issueID = try report.issue.flatMap { try upsertIssue($0, bundleID: record.app.bundle_id, kind: report.kind, at: received, db) }
            try db.run("""
                INSERT INTO reports (upload_id, issue_id, report_id, kind, occurred_at, received_at, exception_type,
                                     exception_message, symbolicated, app_version, user_key, report)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
                """, [
                    uploadID, issueID, report.reportID, report.kind, report.occurredAt.millisecondsSince1970, received,
                    report.exceptionType, report.exceptionMessage, report.symbolicated, record.app.app_version, record.userKey,
                    report.reportJSON,
                ])
        }
        try db.run("""
            INSERT INTO sessions (bundle_id, session_id, app_version, user_key, day, first_seen, last_seen, crashed)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7)
            ON CONFLICT (bundle_id, session_id) DO UPDATE SET
                last_seen = max(last_seen, excluded.last_seen),
                crashed = max(crashed, excluded.crashed)
            """, [
                record.app.bundle_id, record.session.sessionID, record.session.appVersion, record.userKey, record.session.day,
                received, record.session.crashed,
            ])
        return .stored
    }

    public func insertAPILogs(_ logs: [APILogRecord]) async throws -> Int {
        try await writer.write { db in
            for log in logs {
                try db.run("""
                    INSERT INTO api_logs (received_at, app_id, method, url, status_code, duration, timestamp, event)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                    """, [
                        log.receivedAt.millisecondsSince1970, log.appID, log.method, log.url, log.statusCode, log.duration,
                        log.timestamp, log.eventJSON,
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

    private static func issue(_ row: Row) -> IssueSummary {
        IssueSummary(
            id: row[0], bundleID: row[1], signature: row[2], kind: row[3], title: row[4], subtitle: row[5],
            exceptionType: row[6], eventCount: row[7], userCount: row[8], firstSeen: Date(milliseconds: row[9]),
            lastSeen: Date(milliseconds: row[10]), versions: ((row[11] as String?) ?? "").split(separator: "\n").map(String.init))
    }

    public func issues(_ query: IssueQuery) async throws -> [IssueSummary] {
        try await writer.read { db in
            try db.query("""
                \(Self.issueColumns)
                WHERE (?1 IS NULL OR i.bundle_id = ?1) AND (?2 IS NULL OR i.kind = ?2)
                GROUP BY i.id ORDER BY MAX(r.occurred_at) DESC, i.id DESC LIMIT ?3 OFFSET ?4
                """, [query.bundleID, query.kind, max(1, query.limit), max(0, query.offset)], row: Self.issue)
        }
    }

    public func issue(id: Int64) async throws -> IssueSummary? {
        try await writer.read { db in
            try db.query("\(Self.issueColumns) WHERE i.id = ?1 GROUP BY i.id", [id], row: Self.issue).first
        }
    }

    public func events(issueID: Int64, limit: Int, before: Int64?) async throws -> [StoredReport] {
        try await writer.read { db in
            try db.query("""
                SELECT r.id, u.diagnostics_id, r.report_id, r.kind, r.occurred_at, r.received_at, r.app_version, u.user_id,
                       r.report, u.payload
                FROM reports r JOIN uploads u ON u.id = r.upload_id
                WHERE r.issue_id = ?1
                  AND (?3 IS NULL OR (r.occurred_at, r.id) < (SELECT b.occurred_at, b.id FROM reports b WHERE b.id = ?3))
                ORDER BY r.occurred_at DESC, r.id DESC LIMIT ?2
                """, [issueID, max(1, limit), before], row: Self.storedReport)
        }
    }

    public func event(issueID: Int64, id: Int64) async throws -> StoredReport? {
        try await writer.read { db in
            try db.query("""
                SELECT r.id, u.diagnostics_id, r.report_id, r.kind, r.occurred_at, r.received_at, r.app_version, u.user_id,
                       r.report, u.payload
                FROM reports r JOIN uploads u ON u.id = r.upload_id
                WHERE r.issue_id = ?1 AND r.id = ?2
                """, [issueID, id], row: Self.storedReport).first
        }
    }

    private static func storedReport(_ row: Row) -> StoredReport {
        StoredReport(
            id: row[0], diagnosticsID: row[1], reportID: row[2], kind: row[3], occurredAt: Date(milliseconds: row[4]),
            receivedAt: Date(milliseconds: row[5]), appVersion: row[6], userID: row[7], reportJSON: row[8], payloadJSON: row[9])
    }

    private static func rawReport(_ row: Row) -> RawReport {
        RawReport(id: row[0], bundleID: row[1], reportJSON: row[2])
    }

    public func rawReports(after id: Int64, limit: Int) async throws -> [RawReport] {
        try await writer.read { db in
            try db.query("""
                SELECT r.id, u.bundle_id, r.report FROM reports r JOIN uploads u ON u.id = r.upload_id
                WHERE r.symbolicated = 0 AND r.id > ?1 ORDER BY r.id LIMIT ?2
                """, [id, max(1, limit)], row: Self.rawReport)
        }
    }

    public func rawReports(after id: Int64, limit: Int, receivedSince date: Date) async throws -> [RawReport] {
        try await writer.read { db in
            try db.query("""
                SELECT r.id, u.bundle_id, r.report FROM reports r JOIN uploads u ON u.id = r.upload_id
                WHERE r.symbolicated = 0 AND r.id > ?1 AND r.received_at >= ?3 ORDER BY r.id LIMIT ?2
                """, [id, max(1, limit), date.millisecondsSince1970], row: Self.rawReport)
        }
    }

    public func rawReports(diagnosticsID: String) async throws -> [RawReport] {
        try await writer.read { db in
            try db.query("""
                SELECT r.id, u.bundle_id, r.report FROM reports r JOIN uploads u ON u.id = r.upload_id
                WHERE u.diagnostics_id = ?1 AND r.symbolicated = 0 ORDER BY r.id
                """, [diagnosticsID], row: Self.rawReport)
        }
    }

    public func reports(after id: Int64, limit: Int) async throws -> [RawReport] {
        try await writer.read { db in
            try db.query("""
                SELECT r.id, u.bundle_id, r.report, r.symbolicated, i.signature
                FROM reports r JOIN uploads u ON u.id = r.upload_id LEFT JOIN issues i ON i.id = r.issue_id
                WHERE r.id > ?1 ORDER BY r.id LIMIT ?2
                """, [id, max(1, limit)]) { row in
                RawReport(id: row[0], bundleID: row[1], reportJSON: row[2], symbolicated: row[3], issueSignature: row[4])
            }
        }
    }

    public func oldestGroupingRule() async throws -> Int? {
        try await writer.read { db in
            try db.query("""
                SELECT MIN(grouping_rule) FROM issues i WHERE EXISTS (SELECT 1 FROM reports r WHERE r.issue_id = i.id)
                """) { $0[0] as Int? }.first ?? nil
        }
    }

    @discardableResult
    public func replaceReport(_ replacement: ReportReplacement) async throws -> Bool {
        try await writer.write { db in
            let rows = try db.query("SELECT issue_id, report FROM reports WHERE id = ?1", [replacement.id]) {
                ($0[0] as Int64?, $0[1] as String)
            }
            guard let (formerID, stored) = rows.first else { return false }   // purged meanwhile
            if let expected = replacement.expectedJSON, stored != expected { return false }
            let issueID = try replacement.issue.flatMap {
                try Self.upsertIssue($0, bundleID: replacement.bundleID, kind: replacement.kind,
                                     at: replacement.now.millisecondsSince1970, db)
            }
            try db.run("UPDATE reports SET report = ?2, symbolicated = ?3, issue_id = ?4 WHERE id = ?1", [
                replacement.id, replacement.reportJSON, replacement.symbolicated, issueID,
            ])
            if let formerID {
                try db.run("DELETE FROM issues WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM reports WHERE issue_id = ?1)",
                           [formerID])
            }
            return true
        }
    }

    public func apiLogs(limit: Int, appID: String?, before: Int64?) async throws -> [StoredAPILog] {
        try await writer.read { db in
            try db.query("""
                SELECT id, received_at, app_id, method, url, status_code, duration, timestamp, event FROM api_logs
                WHERE (?1 IS NULL OR app_id = ?1) AND (?3 IS NULL OR id < ?3) ORDER BY id DESC LIMIT ?2
                """, [appID, max(1, limit), before]) { row in
                StoredAPILog(
                    id: row[0], receivedAt: Date(milliseconds: row[1]), appID: row[2], method: row[3], url: row[4],
                    statusCode: row[5], duration: row[6], timestamp: row[7], eventJSON: row[8])
            }
        }
    }

    public func crashFree(days: Int, now: Date) async throws -> [CrashFreeRow] {
        let since = utcDay(now.addingTimeInterval(-Double(max(1, days) - 1) * 86_400))
        return try await writer.read { db in
            try db.query("""
                SELECT bundle_id, app_version, day, COUNT(*), SUM(crashed), COUNT(DISTINCT user_key),
                       COUNT(DISTINCT CASE WHEN crashed = 1 THEN user_key END)
                FROM sessions WHERE day >= ?1
                GROUP BY bundle_id, app_version, day ORDER BY day DESC, bundle_id, app_version
                """, [since]) { row in
                CrashFreeRow(
                    bundleID: row[0], appVersion: row[1], day: row[2], sessions: row[3], crashedSessions: row[4],
                    users: row[5], crashedUsers: row[6])
            }
        }
    }

    public func recordSessions(_ sessions: [SessionBeacon], receivedAt: Date) async throws {
        let received = receivedAt.millisecondsSince1970
        try await writer.write { db in
            for session in sessions {
                // crashed is left as it is: a beacon never un-crashes a session its crash upload marked.
                try db.run("""
                    INSERT INTO sessions (bundle_id, session_id, app_version, user_key, day, first_seen, last_seen, crashed)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 0)
                    ON CONFLICT (bundle_id, session_id) DO UPDATE SET
                        day = excluded.day,
                        last_seen = max(last_seen, excluded.last_seen)
                    """, [session.bundleID, session.sessionID, session.appVersion, session.userKey, session.day, received])
            }
        }
    }

    public func eventCounts(from: Date, to: Date) async throws -> [Int64: Int] {
        let rows = try await writer.read { db in
            try db.query("""
                SELECT issue_id, COUNT(*) FROM reports WHERE received_at >= ?1 AND received_at < ?2 AND issue_id IS NOT NULL
                GROUP BY issue_id
                """, [from.millisecondsSince1970, to.millisecondsSince1970]) { ($0[0] as Int64, $0[1] as Int) }
        }
        return Dictionary(rows, uniquingKeysWith: +)
    }

    public func dailyEventCounts(from: Date, to: Date, issueID: Int64?) async throws -> [DailyEventCount] {
        // Days as whole multiples of 86,400,000 ms since the epoch: UTC days, the same in both stores.
        try await writer.read { db in
            try db.query("""
                SELECT issue_id, received_at / 86400000, COUNT(*) FROM reports
                WHERE received_at >= ?1 AND received_at < ?2 AND issue_id IS NOT NULL AND (?3 IS NULL OR issue_id = ?3)
                GROUP BY issue_id, received_at / 86400000 ORDER BY issue_id, 2
                """, [from.millisecondsSince1970, to.millisecondsSince1970, issueID]) { row in
                DailyEventCount(issueID: row[0], day: utcDay(Date(timeIntervalSince1970: Double(row[1] as Int64) * 86_400)),
                                events: row[2])
            }
        }
    }

    public func purge(receivedBefore date: Date) async throws -> PurgeCounts {
        let cutoff = date.millisecondsSince1970
        return try await writer.write { db in
            let uploads = try db.run("DELETE FROM uploads WHERE received_at < ?1", [cutoff])   // reports cascade
            try db.run("DELETE FROM sessions WHERE last_seen < ?1", [cutoff])
            let logs = try db.run("DELETE FROM api_logs WHERE received_at < ?1", [cutoff])
            let issues = try db.run("DELETE FROM issues WHERE NOT EXISTS (SELECT 1 FROM reports WHERE issue_id = issues.id)")
            return PurgeCounts(uploads: uploads, apiLogs: logs, issues: issues)
        }
    }
}

/// Creates the file 0600 when it does not exist yet (SQLite would create it with the umask's mode).
private func createOwnerOnly(_ path: String) {
    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    if fd >= 0 { close(fd) }
}

extension Database {
    /// Runs a statement that returns no rows; the number of rows it changed. The statement is
    /// prepared once per connection and reused: ingest runs the same few for every upload.
    @discardableResult
    fileprivate func run(_ sql: String, _ values: [(any DatabaseValueConvertible)?] = []) throws -> Int {
        try cachedStatement(sql: sql).execute(arguments: storableArguments(values))
        return changesCount
    }

    /// Every row of a query (a statement prepared once per connection), each read by `row`.
    fileprivate func query<T>(_ sql: String, _ values: [(any DatabaseValueConvertible)?] = [],
                              row: (Row) throws -> T) throws -> [T] {
        let rows = try Row.fetchCursor(cachedStatement(sql: sql), arguments: storableArguments(values))
        var result: [T] = []
        while let next = try rows.next() { result.append(try row(next)) }
        return result
    }
}

/// Values bound to ?1, ?2…; text with U+0000 stored with U+FFFD there, as PostgresStore stores it.
private func storableArguments(_ values: [(any DatabaseValueConvertible)?]) -> StatementArguments {
    StatementArguments(values.map { value -> (any DatabaseValueConvertible)? in
        if let text = value as? String { return storableText(text) }
        return value
    })
}

/// The uploads waiting to be written, and whether a writer is draining them. The first upload to
/// find no writer becomes it (`add` answers true); the writer takes up to `batchLimit` at a time
/// and stops when it finds the queue empty, under the same lock, so none is left waiting.
final class IngestQueue: @unchecked Sendable {
    struct Waiting {
        let record: IngestRecord
        let continuation: CheckedContinuation<IngestOutcome, any Error>
    }
    /// At most this many uploads a transaction: a batch's answers wait for its commit.
    static let batchLimit = 64
    private let lock = NSLock()
    private var waiting: [Waiting] = []
    private var draining = false

    /// Queues an upload; true when the caller is to start the writer.
    func add(_ record: IngestRecord, _ continuation: CheckedContinuation<IngestOutcome, any Error>) -> Bool {
        lock.withLock {
            waiting.append(Waiting(record: record, continuation: continuation))
            guard !draining else { return false }
            draining = true
            return true
        }
    }

    /// The next batch; nil (and no writer) when nothing waits.
    func next() -> [Waiting]? {
        lock.withLock {
            guard !waiting.isEmpty else {
                draining = false
                return nil
            }
            let batch = Array(waiting.prefix(Self.batchLimit))
            waiting.removeFirst(batch.count)
            return batch
        }
    }
}
