// SQLite's group commit (Decision 0044): uploads that arrive while another is written share the
// next transaction, each in its own savepoint. Whatever goes into one batch, each record comes out
// as if it had been written alone: a failing record is undone alone, a repeated key is the first
// one's duplicate, and every upload waiting is answered.
@testable import Collector
import CrashReportModel
import Foundation
import GRDB
import Testing

@Suite struct BatchedIngestTests {
    static func record(_ payload: DiagnosticsPayload, id: String, key: String?, answer: String) throws -> IngestRecord {
        try Ingest.record(payload, diagnosticsID: id, idempotencyKey: key, answer: answer, receivedAt: TestClock.now())
    }

    @Test func oneBatchIsEachRecordAsIfWrittenAlone() async throws {
        try await withScratchFile { path in
            // A record whose session is "boom" fails at its last statement, after its upload and
            // reports rows are written: only its savepoint's rollback takes them away again.
            await (try SQLiteStore(path: path)).close()
            let setup = try DatabaseQueue(path: path)
            try await setup.write { db in
                try db.execute(sql: """
                    CREATE TRIGGER boom BEFORE INSERT ON sessions WHEN NEW.session_id = 'boom'
                    BEGIN SELECT RAISE(ABORT, 'boom'); END
                    """)
            }
            try setup.close()
            let store = try SQLiteStore(path: path)
            let payload = try Fixtures.samplePayload()
            var failing = payload
            failing.test_run_id = "boom"
            let reportsEach = payload.crash_reports.count
            let outcomes = try await store.ingest(batch: [
                try Self.record(payload, id: "diag_a", key: "k1", answer: "{\"a\":1}"),
                try Self.record(payload, id: "diag_b", key: "k2", answer: "{\"b\":1}"),
                try Self.record(payload, id: "diag_c", key: "k1", answer: "{\"c\":1}"),   // repeats a's key
                try Self.record(payload, id: "diag_a", key: "k3", answer: "{\"d\":1}"),   // a's diagnostics id: fails at once
                try Self.record(failing, id: "diag_f", key: "k4", answer: "{\"f\":1}"),   // fails at its last statement
                try Self.record(payload, id: "diag_e", key: nil, answer: "{\"e\":1}"),
            ])
            #expect(outcomes.count == 6)
            #expect(try outcomes[0].get() == .stored)
            #expect(try outcomes[1].get() == .stored)
            #expect(try outcomes[2].get() == .duplicate(answer: "{\"a\":1}"))
            #expect(throws: DatabaseError.self) { try outcomes[3].get() }
            #expect(throws: DatabaseError.self) { try outcomes[4].get() }
            #expect(try outcomes[5].get() == .stored)
            #expect(try await store.answer(forIdempotencyKey: "k1") == "{\"a\":1}")
            #expect(try await store.answer(forIdempotencyKey: "k2") == "{\"b\":1}")
            #expect(try await store.answer(forIdempotencyKey: "k3") == nil, "the failed record left nothing")
            #expect(try await store.answer(forIdempotencyKey: "k4") == nil, "the failed record left nothing")
            await store.close()
            let queue = try DatabaseQueue(path: path)
            let counts = try await queue.read { db in
                (try Int.fetchOne(db, sql: "SELECT count(*) FROM uploads") ?? -1,
                 try Int.fetchOne(db, sql: "SELECT count(*) FROM reports") ?? -1,
                 try String.fetchAll(db, sql: "SELECT diagnostics_id FROM uploads ORDER BY id"))
            }
            #expect(counts.0 == 3)
            #expect(counts.1 == 3 * reportsEach)
            #expect(counts.2 == ["diag_a", "diag_b", "diag_e"])
            try queue.close()
        }
    }

    // A continuation never resumed would hang: the time limit makes that a failure.
    @Test(.timeLimit(.minutes(2))) func everyConcurrentUploadIsAnsweredAndStoredOnce() async throws {
        try await withScratchFile { path in
            let store = try SQLiteStore(path: path)
            let payload = try Fixtures.samplePayload()
            // 80 uploads at once: 60 keys, 20 of them sent twice; more than one batch's worth.
            #expect(80 > IngestQueue.batchLimit)
            let outcomes = try await withThrowingTaskGroup(of: (String, IngestOutcome).self) { group in
                for index in 0..<80 {
                    let key = "key-\(index % 60)"
                    let record = try Self.record(payload, id: "diag_\(index)", key: key, answer: "{\"n\":\(index)}")
                    group.addTask { (key, try await store.ingest(record)) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.count == 80)
            #expect(outcomes.count(where: { $0.1 == .stored }) == 60)
            for (key, outcome) in outcomes {
                let first = try #require(try await store.answer(forIdempotencyKey: key))
                #expect(outcome == .stored || outcome == .duplicate(answer: first))
            }
            #expect(try await store.issues(IssueQuery()).first { $0.kind == "crash" }?.eventCount == 60)
            // The queue is left empty and idle: the next upload starts a writer again.
            let late = try Self.record(payload, id: "diag_late", key: "late", answer: "{}")
            #expect(try await store.ingest(late) == .stored)
            await store.close()
        }
    }

    /// What every bound text goes through (U+0000 to U+FFFD), searched with memchr.
    @Test func storableTextReplacesEveryNULWhereverItIs() {
        #expect(storableText("") == "")
        #expect(storableText("plain text, no NUL") == "plain text, no NUL")
        #expect(storableText("\u{0}a\u{0}b\u{0}") == "\u{FFFD}a\u{FFFD}b\u{FFFD}")
        #expect(storableText("é\u{0}") == "é\u{FFFD}")   // small (inline) strings
        let long = String(repeating: "x", count: 100_000) + "\u{0}"
        #expect(storableText(long) == String(repeating: "x", count: 100_000) + "\u{FFFD}")
        #expect(storableText(String("ab\u{0}cd".dropFirst())) == "b\u{FFFD}cd")
        #expect(storableText(NSString(string: "bridged\u{0}") as String) == "bridged\u{FFFD}")
    }

    private func withScratchFile(_ body: (String) async throws -> Void) async throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("collector-batch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await body(directory.appendingPathComponent("collector.sqlite").path)
    }
}
