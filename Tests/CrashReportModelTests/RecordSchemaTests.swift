// The record-line schema (RecordLineType): README's format table says what it says, the strict
// check finds each kind of mistake, and RecordLine writes what the reader reads. The C writer's
// lines are checked against the same schema in every fixture test (FixtureRun.onlyRecord,
// validatedRecord).
import CrashReportModel
import Foundation
import Testing

@Suite("Record-line schema")
struct RecordSchemaTests {
    static let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("README.md")

    /// README's "Crash record format" table: line name (first cell, without backticks) → the
    /// backticked words of its fields cell.
    static func readmeTable() throws -> [String: Set<String>] {
        let text = try String(contentsOf: readme, encoding: .utf8)
        guard let start = text.range(of: "## Crash record format") else { throw SchemaTestError("no record format section in README") }
        let section = text[start.upperBound...].prefix { _ in true }
        var rows: [String: Set<String>] = [:]
        var inTable = false
        for line in section.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("| line | fields |") { inTable = true; continue }
            guard inTable else { continue }
            if line.hasPrefix("|---") { continue }
            guard line.hasPrefix("| ") else { break }
            let cells = line.split(separator: "|", maxSplits: 2, omittingEmptySubsequences: false)
            guard cells.count == 3 else { continue }
            let name = cells[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let words = cells[2].split(separator: "`", omittingEmptySubsequences: false).enumerated()
                .filter { $0.offset % 2 == 1 }.map { String($0.element) }
            rows[name] = Set(words)
        }
        return rows
    }

    @Test("README's table lists every line type and no other, each with every field of the schema")
    func readmeAgrees() throws {
        let table = try Self.readmeTable()
        let schema = Set(RecordLineType.allCases.map(\.rawValue))
        #expect(Set(table.keys) == schema, "README has \(Set(table.keys).subtracting(schema).sorted()), misses \(schema.subtracting(table.keys).sorted())")
        for type in RecordLineType.allCases {
            let documented = table[type.rawValue] ?? []
            let missing = type.fields.map(\.name).filter { !documented.contains($0) }
            #expect(missing.isEmpty, "README's \(type.rawValue) row does not name \(missing)")
        }
    }

    @Test("the strict check names an unknown type, a missing field, a field of another line and a value of another kind")
    func strictCheckFindsMistakes() {
        let header = RecordLine.header(version: 2, id: "r", appID: "a", appVersion: "1", pid: 1, timestampNanoseconds: 5,
                                       architecture: "x86_64").text
        func problems(_ lines: [String]) -> [String] {
            RecordLineType.problems(in: Data((([header] + lines).joined(separator: "\n") + "\n\n   \n").utf8))
        }
        #expect(problems([#"{"type":"end"}"#]).isEmpty)
        #expect(problems([#"{"type":"mystery"}"#]) == [#"line 2: unknown type "mystery""#])
        #expect(problems([#"{"type":"header","format":"x"}"#]) == [#"line 2: unknown type "header""#])
        #expect(problems([#"{"type":"frame","index":0,"kind":"pc"}"#]) == [#"line 2: frame: "address" missing"#])
        #expect(problems([#"{"type":"frame","index":0,"address":"0x1","kind":"pc","tid":3}"#])
            == [#"line 2: frame: "tid" is not a field of this line"#])
        #expect(problems([#"{"type":"frame","index":"0","address":"0x1","kind":"pc"}"#])
            == [#"line 2: frame: "index" is not integer"#])
        #expect(problems([#"{"type":"frame","index":0,"address":"1234","kind":"pc"}"#])
            == [#"line 2: frame: "address" is not address"#])
        #expect(problems([#"{"type":"timing","durable_ns":-1}"#]) == [#"line 2: timing: "durable_ns" is not unsigned"#])
        #expect(problems([#"{"type":"end""#]) == ["line 2: not a JSON object"])
        #expect(problems([#"{"kind":"pc"}"#]) == [#"line 2: no "type""#])
        // The header is checked as a header: a second format line is not a typed line.
        #expect(RecordLineType.problems(in: Data(#"{"format":"swift-crash-reporting.crash-record","version":2}"#.utf8)).count == 6)
    }

    @Test("RecordLine writes lines the reader reads: quoting, kinds, raw JSON kept as text")
    func writerAndReaderAgree() throws {
        let lines = [
            RecordLine.header(version: 2, id: "r\"1", appID: "com.example", appVersion: "2.0", pid: 42,
                              timestampNanoseconds: 1_700_000_000_000_000_000, architecture: "x86_64").text,
            RecordLine(.session).string("id", "s-1").text,
            RecordLine(.hang).string("name", "event loop\n#1").integer("tid", 43).integer("threshold_ms", 2000).integer("age_ms", 2500)
                .string("session", "s-1").text,
            RecordLine(.error).string("domain", "com.example.db").integer("code", -7).string("message", "tab\there")
                .json("underlying", #"[{"domain":"x","code":"1"}]"#).json("user_info", #"{"table":"users"}"#).text,
            RecordLine(.custom_data).json("data", #"{"plan":"pro"}"#).text,
            RecordLine(.termination).string("kind", "abnormal").unsigned("session_started_ns", 1).unsigned("detected_ns", 2).text,
            RecordLine(.hang_end).integer("duration_ms", 3100).text,
            RecordLine(.end).unsigned("hang_capture_ns", UInt64.max).textLine,
        ]
        let data = Data(lines.joined(separator: "\n").utf8)
        #expect(RecordLineType.problems(in: data).isEmpty)
        let record = try CrashRecord(data: data)
        #expect(record.id == "r\"1" && record.processID == 42 && record.version == 2)
        #expect(record.sessionID == "s-1")
        #expect(record.hang?.name == "event loop\n#1" && record.hang?.durationMilliseconds == 3100)
        #expect(record.nonFatalError?.code == -7 && record.nonFatalError?.message == "tab\there")
        #expect(record.nonFatalError?.userInfoJSON == #"{"table":"users"}"#)
        #expect(record.customDataJSON == #"{"plan":"pro"}"#)
        #expect(record.termination?.kind == "abnormal")
        #expect(record.hasEnd && record.problems.isEmpty)
        #expect(RecordLine.quoted("a\u{1}b\u{1f}\"\\") == #""a\u0001b\u001f\"\\""#)
    }

    @Test("the reader skips a newer writer's line type and still reads the rest")
    func unknownTypesAreSkipped() throws {
        let header = RecordLine.header(version: 2, id: "r", appID: "a", appVersion: "1", pid: 1, timestampNanoseconds: 5,
                                       architecture: "x86_64").text
        let record = try CrashRecord(data: Data([header, #"{"type":"from_the_future","x":1}"#, RecordLine(.end).text]
            .joined(separator: "\n").utf8))
        #expect(record.hasEnd && record.problems.isEmpty)
    }
}

struct SchemaTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
