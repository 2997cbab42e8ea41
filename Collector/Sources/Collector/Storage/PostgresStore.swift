// The PostgreSQL store (--database postgres://…), for a team that outgrows one machine: several
// collectors share one database. Same tables as SQLiteStore; what differs is concurrency. Writers
// in other processes are real here, so idempotency rests on the unique index (INSERT … ON CONFLICT
// DO NOTHING, then read the first answer) and the schema is migrated under an advisory lock, each
// version once (schema_migrations; decision 0032).
import CrashReportModel
import Crypto
import Foundation
import Logging
import NIOSSL
import PostgresNIO
import Synchronization

public final class PostgresStore: Store {
    private let client: PostgresClient
    /// Set when PostgreSQL refused the prepared ingest statement (see `ingest(_:preparedAs:)`).
    private let preparedRefused = Atomic<Bool>(false)
    /// Whether uploads of the prepared statement's shape are still written by it.
    var preparesIngest: Bool { !preparedRefused.load(ordering: .relaxed) }
    private let runner: Task<Void, Never>
    private let logger: Logger

    /// Connects to `url` (postgres://user:password@host:port/database?sslmode=disable|prefer|require)
    /// and applies the schema's migrations not yet applied.
    public init(url: String, logger: Logger) async throws {
        let configuration = try Self.configuration(url: url)
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.logger = logger
        // The pool works only while run() does; close() ends it.
        runner = Task { await client.run() }
        do {
            try await migrate()
        } catch {
            runner.cancel()
            throw error
        }
    }

    public func close() async {
        runner.cancel()
        await runner.value
    }

    static func configuration(url text: String) throws -> PostgresClient.Configuration {
        guard let url = URLComponents(string: text), ["postgres", "postgresql"].contains(url.scheme ?? ""),
              let host = url.host, !host.isEmpty else {
            throw PostgresStoreError("not a postgres:// URL: \(text)")
        }
        let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        let mode = url.queryItems?.first { $0.name == "sslmode" }?.value ?? "disable"
        let tls: PostgresClient.Configuration.TLS
        switch mode {
        case "disable": tls = .disable
        case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
        default: throw PostgresStoreError("unknown sslmode \(mode)")
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: url.port ?? 5432, username: url.user ?? "postgres", password: url.password,
            database: database.isEmpty ? nil : database, tls: tls)
        configuration.options.maximumConnections = 8
        return configuration
    }

    /// One version of the schema: its statements, run once, in one transaction with the others
    /// applied at the same start, and recorded in schema_migrations.
    struct Migration: Sendable {
        var version: Int32
        var name: String
        var statements: [PostgresQuery]
    }

    /// Every version of the schema, in order. A migration, once released, never changes: later
    /// changes are new migrations.
    static let migrations: [Migration] = [
        // v1: the tables as the collector created them before migrations were versioned, with
        // IF NOT EXISTS: on a database that code made, it changes nothing and is recorded applied.
        Migration(version: 1, name: "tables", statements: [
            """
            CREATE TABLE IF NOT EXISTS uploads (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                diagnostics_id TEXT NOT NULL UNIQUE,
                idempotency_key TEXT UNIQUE,
                test_run_id TEXT NOT NULL,
                received_at BIGINT NOT NULL,
                answer TEXT NOT NULL,
                bundle_id TEXT NOT NULL,
                app_name TEXT NOT NULL,
                app_version TEXT NOT NULL,
                build_number TEXT NOT NULL,
                environment TEXT NOT NULL,
                user_id TEXT,
                user_key TEXT NOT NULL,
                payload TEXT NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS uploads_received ON uploads(received_at)",
            """
            CREATE TABLE IF NOT EXISTS issues (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                bundle_id TEXT NOT NULL,
                signature TEXT NOT NULL,
                kind TEXT NOT NULL,
                title TEXT NOT NULL,
                subtitle TEXT NOT NULL,
                exception_type TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                UNIQUE (bundle_id, signature)
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS reports (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                upload_id BIGINT NOT NULL REFERENCES uploads(id) ON DELETE CASCADE,
                issue_id BIGINT REFERENCES issues(id) ON DELETE SET NULL,
                report_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                occurred_at BIGINT NOT NULL,
                received_at BIGINT NOT NULL,
                exception_type TEXT NOT NULL,
                exception_message TEXT NOT NULL,
                symbolicated BOOLEAN NOT NULL,
                app_version TEXT NOT NULL,
                user_key TEXT NOT NULL,
                report TEXT NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS reports_issue ON reports(issue_id, occurred_at)",
            "CREATE INDEX IF NOT EXISTS reports_upload ON reports(upload_id)",
            "CREATE INDEX IF NOT EXISTS reports_received ON reports(received_at, issue_id)",
            """
            CREATE TABLE IF NOT EXISTS sessions (
                bundle_id TEXT NOT NULL,
                session_id TEXT NOT NULL,
                app_version TEXT NOT NULL,
                user_key TEXT NOT NULL,
                day TEXT NOT NULL,
                first_seen BIGINT NOT NULL,
                last_seen BIGINT NOT NULL,
                crashed BOOLEAN NOT NULL,
                PRIMARY KEY (bundle_id, session_id)
            )
            """,
            "CREATE INDEX IF NOT EXISTS sessions_day ON sessions(day)",
            """
            CREATE TABLE IF NOT EXISTS api_logs (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                received_at BIGINT NOT NULL,
                app_id TEXT,
                method TEXT,
                url TEXT,
                status_code BIGINT,
                duration BIGINT,
                timestamp BIGINT,
                event TEXT NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS api_logs_received ON api_logs(received_at)",
        ]),
        // v2: grouping rule 2 numbered the rules; issues from before it were signed by rule 1. A
        // database made before versioning may have the column already (the unversioned code added it).
        Migration(version: 2, name: "issues grouping_rule", statements: [
            "ALTER TABLE issues ADD COLUMN IF NOT EXISTS grouping_rule INTEGER NOT NULL DEFAULT 1",
        ]),
    ]

    private func migrate() async throws {
        let logger = logger
        try await client.withTransaction(logger: logger) { connection in
            // Collectors starting together: one migrates, the others wait and find it done.
            try await connection.query("SELECT pg_advisory_xact_lock(7311045)", logger: logger)
            try await connection.query("""
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version INTEGER PRIMARY KEY,
                    name TEXT NOT NULL,
                    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                )
                """, logger: logger)
            var applied = Set<Int32>()
            for try await version in try await connection.query("SELECT version FROM schema_migrations", logger: logger)
                .decode(Int32.self) {
                applied.insert(version)
            }
            for migration in Self.migrations where !applied.contains(migration.version) {
                for statement in migration.statements { try await connection.query(statement, logger: logger) }
                try await connection.query("""
                    INSERT INTO schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))
                    """, logger: logger)
            }
        }
    }

    public func answer(forIdempotencyKey key: String) async throws -> String? {
        try await first(client.query("SELECT answer FROM uploads WHERE idempotency_key = \(key)", logger: logger), as: String.self)
    }

    /// One upload in one statement, so one round trip (not a transaction's seven): data-modifying
    /// CTEs insert the upload (nothing on a repeated idempotency key), each of its distinct issues
    /// (an upsert), its reports and its session, each only when the upload row went in; the
    /// foreign keys are checked at the statement's end, when the rows are all there.
    public func ingest(_ record: IngestRecord) async throws -> IngestOutcome {
        try await ingest(record, preparedAs: PreparedIngest.self)
    }

    /// `record` written by the `Prepared` statement when it is that statement's shape, else by a
    /// statement of its own. When PostgreSQL refuses the prepared statement, it wrote nothing,
    /// and the upload is sent as a statement of its own. If that one goes in, the refusal was the
    /// prepared statement's (its preparing failed: a lock or statement timeout, a cancel; or it is
    /// gone: DEALLOCATE, a pooler that moved the session), and from then on this store prepares
    /// nothing: PostgresNIO keeps a failed preparation's error for the connection's life. If it
    /// fails too, the upload's own data was refused, and its error is thrown. A connection error
    /// is thrown as before (whether it committed is unknown).
    func ingest<Prepared: PreparedIngestStatement>(_ record: IngestRecord, preparedAs: Prepared.Type) async throws -> IngestOutcome {
        let statement = Self.ingestStatement(record)
        var inserted: Int64?
        var written = false
        var refusal: PSQLError?
        if !preparedRefused.load(ordering: .relaxed), let prepared = Prepared(statement) {
            do {
                // The first row's id; the rest read too, as `first(_:as:)` does, so the lease ends.
                for try await id in try await client.execute(prepared, logger: logger) where inserted == nil { inserted = id }
                written = true
            } catch let error as PSQLError where error.code == .server {
                refusal = error
            }
        }
        if !written {
            inserted = try await first(client.query(statement.query, logger: logger), as: Int64.self)
            if let refusal, !preparedRefused.exchange(true, ordering: .relaxed) {
                logger.warning("postgres: the prepared ingest statement was refused (\(String(reflecting: refusal))); uploads are sent as statements of their own from now on")
            }
        }
        guard inserted != nil else {
            // The key is stored (by this or another collector, committed before our insert went on).
            let key = record.idempotencyKey ?? ""
            let first = try await first(client.query("SELECT answer FROM uploads WHERE idempotency_key = \(key)", logger: logger),
                                        as: String.self)
            return .duplicate(answer: first ?? record.answer)
        }
        return .stored
    }

    /// The ingest statement of an upload with one crash report in one issue (what the runtime sends:
    /// a record an upload), prepared once on each connection: PostgreSQL then parses and analyses
    /// it once, not for every upload. Sent as an unnamed statement, parsing, analysing and planning
    /// that CTE was about half of PostgreSQL's CPU time under tools/bench-collector (Decision
    /// 0054). Its text and types are what `ingestStatement` makes for such an upload; another
    /// upload's statement is used only when both are the same.
    struct PreparedIngest: PreparedIngestStatement {
        typealias Row = Int64
        /// Named after its text: a connection shared with another collector version (a pooler)
        /// never runs this name with other text.
        static let name = "collector_ingest_" + hexString(SHA256.hash(data: Data(sql.utf8))).prefix(16)
        static let shape: (query: PostgresQuery, types: [PostgresDataType]) = {
            let now = Date(timeIntervalSince1970: 1_800_000_000)
            let issue = IssueKey(signature: "s", title: "t", subtitle: "s", exceptionType: "e")
            return ingestStatement(IngestRecord(
                diagnosticsID: "d", idempotencyKey: "k", testRunID: "r", receivedAt: now, answer: "{}",
                app: AppMetadata(app_name: "a", app_version: "1", build_number: "1", bundle_id: "b", environment: "e"),
                userID: "u", userKey: "u", payloadJSON: "{}",
                reports: [.init(reportID: "r", kind: "crash", occurredAt: now, exceptionType: "e", exceptionMessage: "m",
                                symbolicated: true, reportJSON: "{}", issue: issue)],
                session: .init(sessionID: "r", appVersion: "1", crashed: true, day: "2027-01-15")))
        }()
        static var sql: String { shape.query.sql }
        static var bindingDataTypes: [PostgresDataType] { shape.types }

        let binds: PostgresBindings

        /// The prepared form of `statement`; nil when its text or types are another shape's.
        init?(_ statement: (query: PostgresQuery, types: [PostgresDataType])) {
            guard statement.query.sql == Self.sql, statement.types == Self.bindingDataTypes else { return nil }
            binds = statement.query.binds
        }

        func makeBindings() throws -> PostgresBindings { binds }
        func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode(Int64.self) }
    }

    /// A prepared form of the ingest statement, for the uploads of its shape.
    protocol PreparedIngestStatement: PostgresPreparedStatement where Row == Int64 {
        /// nil when `statement` is not this shape's.
        init?(_ statement: (query: PostgresQuery, types: [PostgresDataType]))
    }

    /// The ingest statement and the types of its values, in order.
    static func ingestStatement(_ record: IngestRecord) -> (query: PostgresQuery, types: [PostgresDataType]) {
        var sql = SQL()
        let received = record.receivedAt.millisecondsSince1970
        let app = record.app
        sql.add("""
            WITH u AS (
              INSERT INTO uploads (diagnostics_id, idempotency_key, test_run_id, received_at, answer, bundle_id, app_name,
                                   app_version, build_number, environment, user_id, user_key, payload)
              VALUES (
            """)
        sql.values([.text(record.diagnosticsID), .text(record.idempotencyKey), .text(record.testRunID), .int(received),
                    .text(record.answer), .text(app.bundle_id), .text(app.app_name), .text(app.app_version),
                    .text(app.build_number), .text(app.environment), .text(record.userID), .text(record.userKey),
                    .text(record.payloadJSON)])
        sql.add(") ON CONFLICT (idempotency_key) DO NOTHING RETURNING id)")
        // One upsert per distinct signature: two in one statement may not touch one row.
        var issueNames: [String: String] = [:]
        for report in record.reports {
            guard let issue = report.issue, issueNames[issue.signature] == nil else { continue }
            let name = "i\(issueNames.count)"
            issueNames[issue.signature] = name
            sql.add(",\n" + """
                \(name) AS (
                  INSERT INTO issues (bundle_id, signature, kind, title, subtitle, exception_type, created_at, grouping_rule)
                  SELECT
                """)
            sql.values([.text(app.bundle_id), .text(issue.signature), .text(report.kind), .text(issue.title), .text(issue.subtitle),
                        .text(issue.exceptionType), .int(received), .int(Int64(issue.ruleVersion))])
            sql.add("""
                 FROM u
                  ON CONFLICT (bundle_id, signature) DO UPDATE SET title = EXCLUDED.title, subtitle = EXCLUDED.subtitle,
                      grouping_rule = EXCLUDED.grouping_rule
                  RETURNING id)
                """)
        }
        for (index, report) in record.reports.enumerated() {
            let issue = report.issue.flatMap { issueNames[$0.signature] }.map { "(SELECT id FROM \($0))" } ?? "NULL::bigint"
            sql.add(",\n" + """
                r\(index) AS (
                  INSERT INTO reports (upload_id, issue_id, report_id, kind, occurred_at, received_at, exception_type,
                                       exception_message, symbolicated, app_version, user_key, report)
                  SELECT u.id, \(issue),
                """)
            sql.values([.text(report.reportID), .text(report.kind), .int(report.occurredAt.millisecondsSince1970), .int(received),
                        .text(report.exceptionType), .text(report.exceptionMessage), .bool(report.symbolicated),
                        .text(app.app_version), .text(record.userKey), .text(report.reportJSON)])
            sql.add(" FROM u)")
        }
        sql.add(",\n" + """
            s AS (
              INSERT INTO sessions (bundle_id, session_id, app_version, user_key, day, first_seen, last_seen, crashed)
              SELECT
            """)
        sql.values([.text(app.bundle_id), .text(record.session.sessionID), .text(record.session.appVersion), .text(record.userKey),
                    .text(record.session.day), .int(received), .int(received), .bool(record.session.crashed)])
        sql.add("""
             FROM u
              ON CONFLICT (bundle_id, session_id) DO UPDATE SET
                  last_seen = GREATEST(sessions.last_seen, EXCLUDED.last_seen),
                  crashed = sessions.crashed OR EXCLUDED.crashed)
            SELECT id FROM u
            """)
        return (sql.query, sql.types)
    }

    /// A statement put together piece by piece, its values bound ($1, $2…), never spliced in.
    struct SQL {
        enum Value {
            case text(String?)
            case int(Int64)
            case bool(Bool)
        }

        private var interpolation = PostgresQuery.StringInterpolation(literalCapacity: 4096, interpolationCount: 80)
        /// The type of each value, in order (a NULL text is text).
        private(set) var types: [PostgresDataType] = []

        mutating func add(_ literal: String) { interpolation.appendLiteral(literal) }

        /// `values` as binds, comma-separated (after a space).
        mutating func values(_ values: [Value]) {
            for (index, value) in values.enumerated() {
                interpolation.appendLiteral(index > 0 ? ", " : " ")
                switch value {
                case .text(let text):
                    interpolation.appendInterpolation(text)
                    types.append(.text)
                case .int(let number):
                    interpolation.appendInterpolation(number)
                    types.append(.int8)
                case .bool(let flag):
                    interpolation.appendInterpolation(flag)
                    types.append(.bool)
                }
            }
        }

        var query: PostgresQuery { PostgresQuery(stringInterpolation: interpolation) }
    }

    public func insertAPILogs(_ logs: [APILogRecord]) async throws -> Int {
        let logger = logger
        return try await client.withTransaction(logger: logger) { connection -> Int in
            for log in logs {
                try await connection.query("""
                    INSERT INTO api_logs (received_at, app_id, method, url, status_code, duration, timestamp, event)
                    VALUES (\(log.receivedAt.millisecondsSince1970), \(log.appID), \(log.method), \(log.url),
                            \(log.statusCode.map(Int64.init)), \(log.duration.map(Int64.init)), \(log.timestamp), \(log.eventJSON))
                    """, logger: logger)
            }
            return logs.count
        }
    }

    private static let issueColumns = """
        SELECT i.id, i.bundle_id, i.signature, i.kind, i.title, i.subtitle, i.exception_type,
               COUNT(r.id), COUNT(DISTINCT r.user_key), MIN(r.occurred_at), MAX(r.occurred_at),
               (SELECT string_agg(v, E'\\n' ORDER BY v) FROM (SELECT DISTINCT app_version AS v FROM reports WHERE issue_id = i.id) d)
        FROM issues i JOIN reports r ON r.issue_id = i.id
        """

    private typealias IssueRow = (Int64, String, String, String, String, String, String, Int64, Int64, Int64, Int64, String?)

    private static func issue(_ row: IssueRow) -> IssueSummary {
        IssueSummary(
            id: row.0, bundleID: row.1, signature: row.2, kind: row.3, title: row.4, subtitle: row.5, exceptionType: row.6,
            eventCount: Int(row.7), userCount: Int(row.8), firstSeen: Date(milliseconds: row.9),
            lastSeen: Date(milliseconds: row.10), versions: (row.11 ?? "").split(separator: "\n").map(String.init))
    }

    public func issues(_ query: IssueQuery) async throws -> [IssueSummary] {
        let rows = try await client.query("""
            \(unescaped: Self.issueColumns)
            WHERE (\(query.bundleID)::text IS NULL OR i.bundle_id = \(query.bundleID))
              AND (\(query.kind)::text IS NULL OR i.kind = \(query.kind))
            GROUP BY i.id ORDER BY MAX(r.occurred_at) DESC, i.id DESC LIMIT \(Int64(max(1, query.limit)))
            OFFSET \(Int64(max(0, query.offset)))
            """, logger: logger)
        var result: [IssueSummary] = []
        for try await row in rows.decode(IssueRow.self) { result.append(Self.issue(row)) }
        return result
    }

    public func issue(id: Int64) async throws -> IssueSummary? {
        let rows = try await client.query("\(unescaped: Self.issueColumns) WHERE i.id = \(id) GROUP BY i.id", logger: logger)
        for try await row in rows.decode(IssueRow.self) { return Self.issue(row) }
        return nil
    }

    public func events(issueID: Int64, limit: Int, before: Int64?) async throws -> [StoredReport] {
        let rows = try await client.query("""
            SELECT r.id, u.diagnostics_id, r.report_id, r.kind, r.occurred_at, r.received_at, r.app_version, u.user_id,
                   r.report, u.payload
            FROM reports r JOIN uploads u ON u.id = r.upload_id
            WHERE r.issue_id = \(issueID)
              AND (\(before)::bigint IS NULL
                   OR (r.occurred_at, r.id) < (SELECT b.occurred_at, b.id FROM reports b WHERE b.id = \(before)))
            ORDER BY r.occurred_at DESC, r.id DESC LIMIT \(Int64(max(1, limit)))
            """, logger: logger)
        return try await Self.storedReports(rows)
    }

    public func event(issueID: Int64, id: Int64) async throws -> StoredReport? {
        let rows = try await client.query("""
            SELECT r.id, u.diagnostics_id, r.report_id, r.kind, r.occurred_at, r.received_at, r.app_version, u.user_id,
                   r.report, u.payload
            FROM reports r JOIN uploads u ON u.id = r.upload_id
            WHERE r.issue_id = \(issueID) AND r.id = \(id)
            """, logger: logger)
        return try await Self.storedReports(rows).first
    }

    private static func storedReports(_ rows: PostgresRowSequence) async throws -> [StoredReport] {
        var result: [StoredReport] = []
        for try await row in rows.decode((Int64, String, String, String, Int64, Int64, String, String?, String, String).self) {
            result.append(StoredReport(
                id: row.0, diagnosticsID: row.1, reportID: row.2, kind: row.3, occurredAt: Date(milliseconds: row.4),
                receivedAt: Date(milliseconds: row.5), appVersion: row.6, userID: row.7, reportJSON: row.8, payloadJSON: row.9))
        }
        return result
    }

    public func rawReports(after id: Int64, limit: Int) async throws -> [RawReport] {
        let rows = try await client.query("""
            SELECT r.id, u.bundle_id, r.report FROM reports r JOIN uploads u ON u.id = r.upload_id
            WHERE NOT r.symbolicated AND r.id > \(id) ORDER BY r.id LIMIT \(Int64(max(1, limit)))
            """, logger: logger)
        var result: [RawReport] = []
        for try await row in rows.decode((Int64, String, String).self) {
            result.append(RawReport(id: row.0, bundleID: row.1, reportJSON: row.2))
        }
        return result
    }

    public func rawReports(after id: Int64, limit: Int, receivedSince date: Date) async throws -> [RawReport] {
        let rows = try await client.query("""
            SELECT r.id, u.bundle_id, r.report FROM reports r JOIN uploads u ON u.id = r.upload_id
            WHERE NOT r.symbolicated AND r.id > \(id) AND r.received_at >= \(date.millisecondsSince1970)
            ORDER BY r.id LIMIT \(Int64(max(1, limit)))
            """, logger: logger)
        var result: [RawReport] = []
        for try await row in rows.decode((Int64, String, String).self) {
            result.append(RawReport(id: row.0, bundleID: row.1, reportJSON: row.2))
        }
        return result
    }

    public func rawReports(diagnosticsID: String) async throws -> [RawReport] {
        let rows = try await client.query("""
            SELECT r.id, u.bundle_id, r.report FROM reports r JOIN uploads u ON u.id = r.upload_id
            WHERE u.diagnostics_id = \(diagnosticsID) AND NOT r.symbolicated ORDER BY r.id
            """, logger: logger)
        var result: [RawReport] = []
        for try await row in rows.decode((Int64, String, String).self) {
            result.append(RawReport(id: row.0, bundleID: row.1, reportJSON: row.2))
        }
        return result
    }

    public func reports(after id: Int64, limit: Int) async throws -> [RawReport] {
        let rows = try await client.query("""
            SELECT r.id, u.bundle_id, r.report, r.symbolicated, i.signature
            FROM reports r JOIN uploads u ON u.id = r.upload_id LEFT JOIN issues i ON i.id = r.issue_id
            WHERE r.id > \(id) ORDER BY r.id LIMIT \(Int64(max(1, limit)))
            """, logger: logger)
        var result: [RawReport] = []
        for try await row in rows.decode((Int64, String, String, Bool, String?).self) {
            result.append(RawReport(id: row.0, bundleID: row.1, reportJSON: row.2, symbolicated: row.3, issueSignature: row.4))
        }
        return result
    }

    public func oldestGroupingRule() async throws -> Int? {
        let rule = try await first(client.query("""
            SELECT MIN(grouping_rule) FROM issues i WHERE EXISTS (SELECT 1 FROM reports r WHERE r.issue_id = i.id)
            """, logger: logger), as: Int32?.self)
        return (rule ?? nil).map(Int.init)
    }

    @discardableResult
    public func replaceReport(_ replacement: ReportReplacement) async throws -> Bool {
        let logger = logger
        return try await client.withTransaction(logger: logger) { connection -> Bool in
            // The report's row, locked until the update commits: its former issue, and whether
            // another pass rewrote it since it was read.
            let rows = try await connection.query("SELECT issue_id, report FROM reports WHERE id = \(replacement.id) FOR UPDATE",
                                                  logger: logger)
            var found: (Int64?, String)?
            for try await row in rows.decode((Int64?, String).self) { found = row }
            guard let (former, stored) = found else { return false }   // purged meanwhile
            if let expected = replacement.expectedJSON, stored != expected { return false }
            var issueID: Int64?
            if let issue = replacement.issue {
                issueID = try await upsertIssue(issue, bundleID: replacement.bundleID, kind: replacement.kind,
                                                at: replacement.now.millisecondsSince1970, on: connection, logger: logger)
            }
            try await connection.query("""
                UPDATE reports SET report = \(replacement.reportJSON), symbolicated = \(replacement.symbolicated), issue_id = \(issueID)
                WHERE id = \(replacement.id)
                """, logger: logger)
            if let former {
                // Lock the issue first, in a statement of its own: an ingest adding a report to it
                // holds that lock until it commits, and the DELETE (a new statement, a new
                // snapshot) then sees its report. In one statement, the NOT EXISTS would be
                // re-checked against the old snapshot after the wait, and delete a live issue.
                try await connection.query("SELECT id FROM issues WHERE id = \(former) FOR UPDATE", logger: logger)
                try await connection.query("""
                    DELETE FROM issues WHERE id = \(former) AND NOT EXISTS (SELECT 1 FROM reports WHERE issue_id = \(former))
                    """, logger: logger)
            }
            return true
        }
    }

    public func apiLogs(limit: Int, appID: String?, before: Int64?) async throws -> [StoredAPILog] {
        let rows = try await client.query("""
            SELECT id, received_at, app_id, method, url, status_code, duration, timestamp, event FROM api_logs
            WHERE (\(appID)::text IS NULL OR app_id = \(appID)) AND (\(before)::bigint IS NULL OR id < \(before))
            ORDER BY id DESC LIMIT \(Int64(max(1, limit)))
            """, logger: logger)
        var result: [StoredAPILog] = []
        for try await row in rows.decode((Int64, Int64, String?, String?, String?, Int64?, Int64?, Int64?, String).self) {
            result.append(StoredAPILog(
                id: row.0, receivedAt: Date(milliseconds: row.1), appID: row.2, method: row.3, url: row.4,
                statusCode: row.5.map { Int($0) }, duration: row.6.map { Int($0) }, timestamp: row.7, eventJSON: row.8))
        }
        return result
    }

    public func crashFree(days: Int, now: Date) async throws -> [CrashFreeRow] {
        let since = utcDay(now.addingTimeInterval(-Double(max(1, days) - 1) * 86_400))
        let rows = try await client.query("""
            SELECT bundle_id, app_version, day, COUNT(*), SUM(CASE WHEN crashed THEN 1 ELSE 0 END), COUNT(DISTINCT user_key),
                   COUNT(DISTINCT CASE WHEN crashed THEN user_key END)
            FROM sessions WHERE day >= \(since)
            GROUP BY bundle_id, app_version, day ORDER BY day DESC, bundle_id, app_version
            """, logger: logger)
        var result: [CrashFreeRow] = []
        for try await row in rows.decode((String, String, String, Int64, Int64, Int64, Int64).self) {
            result.append(CrashFreeRow(bundleID: row.0, appVersion: row.1, day: row.2, sessions: Int(row.3),
                                       crashedSessions: Int(row.4), users: Int(row.5), crashedUsers: Int(row.6)))
        }
        return result
    }

    public func recordSessions(_ sessions: [SessionBeacon], receivedAt: Date) async throws {
        // One statement for the whole batch (a round trip per beacon made 1,000 take 0.7 s). A row
        // may be named once per statement: the last beacon of a session in the batch wins.
        var seen = Set<[String]>()
        let batch = sessions.reversed().filter { seen.insert([$0.bundleID, $0.sessionID]).inserted }
        func column(_ value: (SessionBeacon) -> String) -> [String] { batch.map { storableText(value($0)) } }
        let received = receivedAt.millisecondsSince1970
        // crashed is left as it is: a beacon never un-crashes a session its crash upload marked.
        try await client.query("""
            INSERT INTO sessions (bundle_id, session_id, app_version, user_key, day, first_seen, last_seen, crashed)
            SELECT b.bundle_id, b.session_id, b.app_version, b.user_key, b.day, \(received), \(received), FALSE
            FROM unnest(\(column(\.bundleID))::text[], \(column(\.sessionID))::text[], \(column(\.appVersion))::text[],
                        \(column(\.userKey))::text[], \(column(\.day))::text[]) AS b(bundle_id, session_id, app_version, user_key, day)
            ON CONFLICT (bundle_id, session_id) DO UPDATE SET
                day = EXCLUDED.day,
                last_seen = GREATEST(sessions.last_seen, EXCLUDED.last_seen)
            """, logger: logger)
    }

    public func eventCounts(from: Date, to: Date) async throws -> [Int64: Int] {
        let rows = try await client.query("""
            SELECT issue_id, COUNT(*) FROM reports
            WHERE received_at >= \(from.millisecondsSince1970) AND received_at < \(to.millisecondsSince1970) AND issue_id IS NOT NULL
            GROUP BY issue_id
            """, logger: logger)
        var counts: [Int64: Int] = [:]
        for try await (issue, count) in rows.decode((Int64, Int64).self) { counts[issue] = Int(count) }
        return counts
    }

    public func dailyEventCounts(from: Date, to: Date, issueID: Int64?) async throws -> [DailyEventCount] {
        // Days as whole multiples of 86,400,000 ms since the epoch: UTC days, the same in both stores.
        let rows = try await client.query("""
            SELECT issue_id, received_at / 86400000, COUNT(*) FROM reports
            WHERE received_at >= \(from.millisecondsSince1970) AND received_at < \(to.millisecondsSince1970)
              AND issue_id IS NOT NULL AND (\(issueID)::bigint IS NULL OR issue_id = \(issueID))
            GROUP BY issue_id, received_at / 86400000 ORDER BY issue_id, 2
            """, logger: logger)
        var result: [DailyEventCount] = []
        for try await (issue, day, count) in rows.decode((Int64, Int64, Int64).self) {
            result.append(DailyEventCount(issueID: issue, day: utcDay(Date(timeIntervalSince1970: Double(day) * 86_400)),
                                          events: Int(count)))
        }
        return result
    }

    public func purge(receivedBefore date: Date) async throws -> PurgeCounts {
        let cutoff = date.millisecondsSince1970
        let logger = logger
        return try await client.withTransaction(logger: logger) { connection -> PurgeCounts in
            func count(_ query: PostgresQuery) async throws -> Int {
                Int(try await first(connection.query(query, logger: logger), as: Int64.self) ?? 0)
            }
            let uploads = try await count("WITH d AS (DELETE FROM uploads WHERE received_at < \(cutoff) RETURNING 1) SELECT COUNT(*) FROM d")
            try await connection.query("DELETE FROM sessions WHERE last_seen < \(cutoff)", logger: logger)
            let logs = try await count("WITH d AS (DELETE FROM api_logs WHERE received_at < \(cutoff) RETURNING 1) SELECT COUNT(*) FROM d")
            let issues = try await count("""
                WITH d AS (DELETE FROM issues WHERE NOT EXISTS (SELECT 1 FROM reports WHERE issue_id = issues.id) RETURNING 1)
                SELECT COUNT(*) FROM d
                """)
            return PurgeCounts(uploads: uploads, apiLogs: logs, issues: issues)
        }
    }
}

extension PostgresQuery.StringInterpolation {
    // Every String (and String?) interpolated into a query in this file binds through these rather
    // than PostgresNIO's generic appendInterpolation (a non-generic overload wins): storableText
    // turns U+0000, which PostgreSQL's text refuses, into U+FFFD.
    fileprivate mutating func appendInterpolation(_ value: String) {
        bindText(storableText(value))
    }

    fileprivate mutating func appendInterpolation(_ value: String?) {
        bindOptionalText(value.map(storableText))
    }

    private mutating func bindText<Value: PostgresDynamicTypeEncodable>(_ value: Value) {
        appendInterpolation(value)
    }

    private mutating func bindOptionalText<Value: PostgresDynamicTypeEncodable>(_ value: Value?) {
        appendInterpolation(value)
    }
}

struct PostgresStoreError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The first row's single column, if there is a row (the rest of the sequence is drained).
/// The issue's row id, created if new; the newest title wins (as in SQLiteStore).
private func upsertIssue(_ issue: IssueKey, bundleID: String, kind: String, at milliseconds: Int64,
                         on connection: PostgresConnection, logger: Logger) async throws -> Int64? {
    try await first(connection.query("""
        INSERT INTO issues (bundle_id, signature, kind, title, subtitle, exception_type, created_at, grouping_rule)
        VALUES (\(bundleID), \(issue.signature), \(kind), \(issue.title), \(issue.subtitle), \(issue.exceptionType), \(milliseconds),
                \(issue.ruleVersion))
        ON CONFLICT (bundle_id, signature) DO UPDATE SET title = EXCLUDED.title, subtitle = EXCLUDED.subtitle,
            grouping_rule = EXCLUDED.grouping_rule
        RETURNING id
        """, logger: logger), as: Int64.self)
}

private func first<T: PostgresDecodable & Sendable>(_ rows: PostgresRowSequence, as type: T.Type) async throws -> T? {
    var result: T?
    for try await value in rows.decode(T.self) where result == nil { result = value }
    return result
}
