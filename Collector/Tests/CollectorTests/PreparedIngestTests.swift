// PostgreSQL's prepared ingest statement (PostgresStore.PreparedIngest, Decision 0054): an upload
// of one crash report in one issue — what the runtime sends — is written by the statement prepared
// once per connection; any other upload by the statement made for it, as before. Which one is
// decided by comparing the statement's text and types, so a prepared statement never runs with
// another shape's values. What both write is checked by the store suites on PostgreSQL
// (tools/test-collector), which send one-report uploads and the three-report sample alike.
@testable import Collector
import CrashReportModel
import Foundation
import PostgresNIO
import Testing

struct PreparedIngestTests {
    static func record(_ payload: DiagnosticsPayload, key: String? = "k") throws -> IngestRecord {
        try Ingest.record(payload, diagnosticsID: "diag_0000000000000001", idempotencyKey: key, answer: "{}",
                          receivedAt: Date(timeIntervalSince1970: 1_800_000_000))
    }

    static func payload(reports kinds: [String]) throws -> DiagnosticsPayload {
        var payload = try Fixtures.samplePayload()
        let all = payload.crash_reports
        payload.crash_reports = kinds.map { kind in all.first { $0.kind == kind }! }
        for index in payload.crash_reports.indices { payload.crash_reports[index].report_id = "report-\(index)" }
        return payload
    }

    @Test func anUploadOfOneReportInOneIssueUsesThePreparedStatement() throws {
        for kind in ["crash", "non_fatal", "abnormal_termination"] {
            for key in ["k", nil] {
                var payload = try Self.payload(reports: [kind])
                if key == nil { payload.user_id = nil }   // NULL texts are still texts
                let statement = PostgresStore.ingestStatement(try Self.record(payload, key: key))
                #expect(PostgresStore.PreparedIngest(statement) != nil, "\(kind), key \(key ?? "nil")")
                #expect(statement.types.count == statement.query.binds.count)
            }
        }
        // Its text binds each value ($1…$n), none spliced in.
        let sql = PostgresStore.PreparedIngest.sql
        let types = PostgresStore.PreparedIngest.bindingDataTypes
        #expect(sql.contains("$\(types.count)") && !sql.contains("$\(types.count + 1)"))
        #expect(types.contains(.int8) && types.contains(.bool) && types.contains(.text))
    }

    @Test func otherUploadsKeepTheirOwnStatement() throws {
        var shapes: [(String, IngestRecord)] = [
            ("two reports, two issues", try Self.record(try Self.payload(reports: ["crash", "non_fatal"]))),
            ("two reports, one issue", try Self.record(try Self.payload(reports: ["crash", "crash"]))),
            ("the three-report sample", try Self.record(try Fixtures.samplePayload())),
            ("no report", try Self.record(try Self.payload(reports: []))),
        ]
        var noIssue = try Self.record(try Self.payload(reports: ["crash"]))
        noIssue.reports[0].issue = nil   // a diagnostics snapshot: a report in no issue
        shapes.append(("one report in no issue", noIssue))
        for (name, record) in shapes {
            let statement = PostgresStore.ingestStatement(record)
            #expect(PostgresStore.PreparedIngest(statement) == nil, "\(name)")
        }
        // The comparison reads the types too: the same text with a value of another type is not it.
        let one = PostgresStore.ingestStatement(try Self.record(try Self.payload(reports: ["crash"])))
        var retyped = one
        retyped.types[0] = .int8
        #expect(PostgresStore.PreparedIngest(retyped) == nil)
    }
}

/// A prepared statement PostgreSQL refuses (no such column): what a failed preparation looks like.
struct RefusedIngest: PostgresStore.PreparedIngestStatement {
    typealias Row = Int64
    static let sql = "SELECT no_such_column FROM uploads"
    static let bindingDataTypes: [PostgresDataType] = []
    init?(_ statement: (query: PostgresQuery, types: [PostgresDataType])) {}
    func makeBindings() throws -> PostgresBindings { PostgresBindings() }
    func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode(Int64.self) }
}

/// On PostgreSQL (tools/test-collector): a refused prepared statement loses no upload.
@Suite(.enabled(if: TestDatabase.postgresAdminURL != nil, "COLLECTOR_TEST_POSTGRES_URL is not set"))
struct PreparedIngestOnPostgresTests {
    @Test func aRefusedPreparedStatementLosesNoUpload() async throws {
        let database = try await TestDatabase.make()
        let store = try #require(try await database.open() as? PostgresStore)
        let payload = try PreparedIngestTests.payload(reports: ["crash"])
        // An upload whose data PostgreSQL refuses (another upload's diagnostics id) fails both
        // ways, and the store goes on preparing: the refusal was not the prepared statement's.
        var first = try PreparedIngestTests.record(payload, key: "key-first")
        first.diagnosticsID = "diag_00000000000000aa"
        #expect(try await store.ingest(first) == .stored)
        var clash = try PreparedIngestTests.record(payload, key: "key-clash")
        clash.diagnosticsID = first.diagnosticsID
        await #expect(throws: PSQLError.self) { try await store.ingest(clash) }
        #expect(store.preparesIngest)
        var records: [IngestRecord] = []
        for index in 0..<3 {
            var record = try PreparedIngestTests.record(payload, key: "key-\(index)")
            record.diagnosticsID = "diag_000000000000000\(index)"
            records.append(record)
        }
        // A prepared statement PostgreSQL refuses: each upload is written as its own statement.
        for record in records { #expect(try await store.ingest(record, preparedAs: RefusedIngest.self) == .stored) }
        #expect(!store.preparesIngest)
        // A repeat is still found by its key.
        #expect(try await store.ingest(records[0], preparedAs: RefusedIngest.self) == .duplicate(answer: "{}"))
        #expect(try await store.answer(forIdempotencyKey: "key-2") == "{}")
        // Another store (its own connections) writes through the prepared statement, into the same issue.
        let other = try #require(try await database.open() as? PostgresStore)
        var fresh = try PreparedIngestTests.record(payload, key: "key-fresh")
        fresh.diagnosticsID = "diag_00000000000000ff"
        #expect(try await other.ingest(fresh) == .stored)
        #expect(try await other.ingest(fresh) == .duplicate(answer: "{}"))
        #expect(try await store.issues(IssueQuery()).first?.eventCount == 5)
        await other.close()
        await store.close()
        await database.remove()
    }
}
