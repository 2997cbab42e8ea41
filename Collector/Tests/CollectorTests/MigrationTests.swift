// Versioned schemas (decision 0032): an empty database gets every migration; a database made by
// the collector before versions (Support/UnversionedSchema.swift) keeps its rows and is recorded at
// the latest version. The PostgreSQL tests run when COLLECTOR_TEST_POSTGRES_URL is set.
@testable import Collector
import Foundation
import GRDB
import Logging
import PostgresNIO
import Testing

@Suite struct SQLiteMigrationTests {
    static let versions = ["v1-tables", "v2-issues-grouping-rule"]

    @Test func emptyDatabaseGetsEveryMigration() async throws {
        try await withScratchFile { path in
            let store = try SQLiteStore(path: path)
            #expect(try await store.issues(IssueQuery()).isEmpty)
            await store.close()
            let queue = try DatabaseQueue(path: path)
            #expect(try await queue.read { try SQLiteStore.migrator.appliedMigrations($0) } == Self.versions)
            #expect(try await queue.read { try String.fetchAll($0, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier") }
                    == Self.versions)
            // The same tables, indexes and columns, to the letter, as the unversioned code made.
            let made = try await schema(path)
            try await withScratchFile { unversioned in
                try makeUnversioned(unversioned, groupingRule: true)
                #expect(try await schema(unversioned) == made)
            }
            try queue.close()
        }
    }

    @Test func unversionedDatabaseKeepsItsRowsAndIsRecordedMigrated() async throws {
        try await withScratchFile { path in
            try makeUnversioned(path, groupingRule: true)
            let store = try SQLiteStore(path: path)
            try await expectOldRows(store, groupingRule: 2)
            // Written to as usual, and the old key still answers as first stored.
            let record = try Ingest.record(Fixtures.samplePayload(), diagnosticsID: "diag_new", idempotencyKey: "key-new",
                                           answer: "{\"new\":true}", receivedAt: TestClock.now())
            #expect(try await store.ingest(record) == .stored)
            #expect(try await store.ingest(record) == .duplicate(answer: "{\"new\":true}"))
            #expect(try await store.answer(forIdempotencyKey: "key-old") == "{\"old\":true}")
            await store.close()
            let queue = try DatabaseQueue(path: path)
            #expect(try await queue.read { try SQLiteStore.migrator.appliedMigrations($0) } == Self.versions)
            #expect(try await queue.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM uploads") } == 2)
            try queue.close()
            // A second start applies nothing and finds the same rows.
            let again = try SQLiteStore(path: path)
            try await expectOldRows(again, groupingRule: 2)
            await again.close()
        }
    }

    @Test func databaseFromBeforeGroupingRulesGetsTheColumn() async throws {
        try await withScratchFile { path in
            try makeUnversioned(path, groupingRule: false)
            let store = try SQLiteStore(path: path)
            try await expectOldRows(store, groupingRule: 1)
            await store.close()
        }
    }

    @Test func collectorsStartingTogetherOnANewFileAllOpenIt() async throws {
        // Each start runs the migrator; one that lost the race to record a version tries again.
        // (Without that, about one round in ten failed here.)
        for _ in 0..<5 {
            try await withScratchFile { path in
                let stores = try await withThrowingTaskGroup(of: SQLiteStore.self) { group in
                    for _ in 0..<6 { group.addTask { try SQLiteStore(path: path) } }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(stores.count == 6)
                for store in stores { await store.close() }
                let queue = try DatabaseQueue(path: path)
                #expect(try await queue.read { try SQLiteStore.migrator.appliedMigrations($0) } == Self.versions)
                try queue.close()
            }
        }
    }

    /// A database as main's SQLiteStore made it: WAL, the statements, the column when `groupingRule`;
    /// then one upload with a crash in an issue, a session and an API log, as its inserts wrote them.
    private func makeUnversioned(_ path: String, groupingRule: Bool) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.inDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: UnversionedSchema.sqlite)
            if groupingRule { try db.execute(sql: UnversionedSchema.sqliteGroupingRule) }
            let now = TestClock.now().millisecondsSince1970
            try db.execute(sql: """
                INSERT INTO uploads (diagnostics_id, idempotency_key, test_run_id, received_at, answer, bundle_id, app_name,
                                     app_version, build_number, environment, user_id, user_key, payload)
                VALUES ('diag_old', 'key-old', 'run-old', ?1, '{"old":true}', 'com.example.old', 'Old', '1.0', '7',
                        'production', 'user-1', 'user-1', '{}')
                """, arguments: [now])
            try db.execute(sql: """
                INSERT INTO issues (bundle_id, signature, kind, title, subtitle, exception_type, created_at)
                VALUES ('com.example.old', 'crash|SIGSEGV|old()', 'crash', 'old() — SIGSEGV', 'SIGSEGV: bad access', 'SIGSEGV', ?1)
                """, arguments: [now])
            if groupingRule { try db.execute(sql: "UPDATE issues SET grouping_rule = 2") }
            try db.execute(sql: """
                INSERT INTO reports (upload_id, issue_id, report_id, kind, occurred_at, received_at, exception_type,
                                     exception_message, symbolicated, app_version, user_key, report)
                VALUES (1, 1, 'report-old', 'crash', ?1, ?1, 'SIGSEGV', 'bad access', 1, '1.0', 'user-1', '{"old":"report"}')
                """, arguments: [now])
            try db.execute(sql: """
                INSERT INTO sessions (bundle_id, session_id, app_version, user_key, day, first_seen, last_seen, crashed)
                VALUES ('com.example.old', 'run-old', '1.0', 'user-1', ?2, ?1, ?1, 1)
                """, arguments: [now, utcDay(TestClock.now())])
            try db.execute(sql: """
                INSERT INTO api_logs (received_at, app_id, method, url, status_code, duration, timestamp, event)
                VALUES (?1, 'com.example.old', 'GET', '/old', 200, 12, ?1, '{"old":"log"}')
                """, arguments: [now])
        }
        try queue.close()
    }

    /// Every table's definition: name and SQL, as SQLite keeps them (grdb_migrations aside).
    private func schema(_ path: String) async throws -> [String] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try await queue.read { db in
            try Row.fetchAll(db, sql: """
                SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'grdb_%' AND name NOT LIKE 'sqlite_%' ORDER BY name
                """).map { "\($0[0] as String) \($0[1] as String): \(($0[2] as String?) ?? "")" }
        }
    }

    private func withScratchFile(_ body: (String) async throws -> Void) async throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("collector-migration-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await body(directory.appendingPathComponent("collector.sqlite").path)
    }
}

@Suite(.enabled(if: TestDatabase.postgresAdminURL != nil, "COLLECTOR_TEST_POSTGRES_URL is not set"))
struct PostgresMigrationTests {
    @Test func emptyDatabaseGetsEveryMigration() async throws {
        let database = try await TestDatabase.make()
        let store = try await database.open()
        #expect(try await store.issues(IssueQuery()).isEmpty)
        await store.close()
        #expect(try await migrations(database) == ["1 tables", "2 issues grouping_rule"])
        await database.remove()
    }

    @Test func unversionedDatabaseKeepsItsRowsAndIsRecordedMigrated() async throws {
        for groupingRule in [true, false] {
            let database = try await TestDatabase.make()
            try await withClient(database) { connection, logger in
                // As main's PostgresStore migrated: under the lock, every statement (the last adds grouping_rule).
                try await connection.query("SELECT pg_advisory_xact_lock(7311045)", logger: logger)
                for statement in UnversionedSchema.postgres.dropLast(groupingRule ? 0 : 1) {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                let now = TestClock.now().millisecondsSince1970
                let day = utcDay(TestClock.now())
                try await connection.query("""
                    INSERT INTO uploads (diagnostics_id, idempotency_key, test_run_id, received_at, answer, bundle_id, app_name,
                                         app_version, build_number, environment, user_id, user_key, payload)
                    VALUES ('diag_old', 'key-old', 'run-old', \(now), '{"old":true}', 'com.example.old', 'Old', '1.0', '7',
                            'production', 'user-1', 'user-1', '{}')
                    """, logger: logger)
                try await connection.query("""
                    INSERT INTO issues (bundle_id, signature, kind, title, subtitle, exception_type, created_at)
                    VALUES ('com.example.old', 'crash|SIGSEGV|old()', 'crash', 'old() — SIGSEGV', 'SIGSEGV: bad access', 'SIGSEGV', \(now))
                    """, logger: logger)
                if groupingRule { try await connection.query("UPDATE issues SET grouping_rule = 2", logger: logger) }
                try await connection.query("""
                    INSERT INTO reports (upload_id, issue_id, report_id, kind, occurred_at, received_at, exception_type,
                                         exception_message, symbolicated, app_version, user_key, report)
                    SELECT u.id, i.id, 'report-old', 'crash', \(now), \(now), 'SIGSEGV', 'bad access', TRUE, '1.0', 'user-1',
                           '{"old":"report"}'
                    FROM uploads u, issues i
                    """, logger: logger)
                try await connection.query("""
                    INSERT INTO sessions (bundle_id, session_id, app_version, user_key, day, first_seen, last_seen, crashed)
                    VALUES ('com.example.old', 'run-old', '1.0', 'user-1', \(day), \(now), \(now), TRUE)
                    """, logger: logger)
                try await connection.query("""
                    INSERT INTO api_logs (received_at, app_id, method, url, status_code, duration, timestamp, event)
                    VALUES (\(now), 'com.example.old', 'GET', '/old', 200, 12, \(now), '{"old":"log"}')
                    """, logger: logger)
            }
            let store = try await database.open()
            try await expectOldRows(store, groupingRule: groupingRule ? 2 : 1)
            let record = try Ingest.record(Fixtures.samplePayload(), diagnosticsID: "diag_new", idempotencyKey: "key-new",
                                           answer: "{\"new\":true}", receivedAt: TestClock.now())
            #expect(try await store.ingest(record) == .stored)
            await store.close()
            #expect(try await migrations(database) == ["1 tables", "2 issues grouping_rule"])
            // A second start applies nothing and finds the same rows.
            let again = try await database.open()
            try await expectOldRows(again, groupingRule: groupingRule ? 2 : 1)
            await again.close()
            #expect(try await migrations(database) == ["1 tables", "2 issues grouping_rule"])
            await database.remove()
        }
    }

    @Test func collectorsStartingTogetherApplyEachMigrationOnce() async throws {
        let database = try await TestDatabase.make()
        let stores = try await withThrowingTaskGroup(of: (any Store).self) { group in
            for _ in 0..<4 { group.addTask { try await database.open() } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for store in stores { await store.close() }
        #expect(try await migrations(database) == ["1 tables", "2 issues grouping_rule"])
        await database.remove()
    }

    /// schema_migrations as "version name", in order.
    private func migrations(_ database: TestDatabase) async throws -> [String] {
        try await withClient(database) { connection, logger in
            var found: [String] = []
            let rows = try await connection.query("SELECT version, name FROM schema_migrations ORDER BY version", logger: logger)
            for try await (version, name) in rows.decode((Int32, String).self) { found.append("\(version) \(name)") }
            return found
        }
    }

    /// `body` in one transaction on the test's database.
    private func withClient<T: Sendable>(_ database: TestDatabase,
                                         _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T) async throws -> T {
        let logger = TestDatabase.logger
        let client = PostgresClient(configuration: try PostgresStore.configuration(url: database.location), backgroundLogger: logger)
        let runner = Task { await client.run() }
        defer { runner.cancel() }
        return try await client.withTransaction(logger: logger) { connection in try await body(connection, logger) }
    }
}

/// The rows makeUnversioned (or its PostgreSQL twin) wrote, read through the store.
private func expectOldRows(_ store: any Store, groupingRule: Int) async throws {
    #expect(try await store.answer(forIdempotencyKey: "key-old") == "{\"old\":true}")
    let issues = try await store.issues(IssueQuery())
    let old = try #require(issues.first { $0.signature == "crash|SIGSEGV|old()" })
    #expect(old.title == "old() — SIGSEGV")
    #expect(old.eventCount == 1)
    #expect(old.versions == ["1.0"])
    let events = try await store.events(issueID: old.id, limit: 10)
    #expect(events.map(\.reportJSON) == ["{\"old\":\"report\"}"])
    #expect(events.first?.diagnosticsID == "diag_old")
    #expect(try await store.apiLogs(limit: 10, appID: "com.example.old").map(\.eventJSON) == ["{\"old\":\"log\"}"])
    let crashFree = try await store.crashFree(days: 1, now: TestClock.now()).filter { $0.bundleID == "com.example.old" }
    #expect(crashFree.map(\.crashedSessions) == [1])
    #expect(try await store.oldestGroupingRule() == groupingRule)
}
