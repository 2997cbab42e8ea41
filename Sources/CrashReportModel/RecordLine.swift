// The crash record's lines, in one place: every line type, its fields and their JSON kinds.
//
// - The reader (CrashRecord) switches over `RecordLineType`.
// - The Swift writers (non-fatal reports, snapshots, hang reports, next-launch rewrites, the
//   memory sidecar, crashtool) build their lines with `RecordLine`, which only takes the fields
//   this schema names for the line's type (an assert in debug builds).
// - The C writer (the signal handler, which cannot use any of this) is checked against it:
//   `RecordLineType.problems(in:)` reads a whole record strictly, and every record a test fixture
//   leaves behind goes through it (Tests/CrashTestSupport, FixtureRun.onlyRecord).
// - README's "Crash record format" table is checked against it (RecordSchemaTests).
//
// The reader itself stays lenient (a newer writer's unknown lines and fields are skipped); the
// strict check is for our own writers.
import Foundation

/// The kind of one line: the header (the first line, which has no "type") or its "type".
public enum RecordLineType: String, CaseIterable, Sendable {
    case header
    case signal, thread, registers, fatal_message, module, request, requests, modules
    case frame, outer_frame, async_frame, stack, threads
    case session, nested_crash, watchdog, end, timing
    case user, custom_key, custom_data, breadcrumb
    case termination, hang, hang_end, memory_context, memory_sample
    case error, diagnostics

    /// A field's JSON kind as the reader takes it.
    public enum Kind: Sendable, Equatable {
        case string
        /// A whole number (signal numbers, counts, thread ids); may be negative.
        case integer
        /// A non-negative whole number up to 2^64 − 1 (nanoseconds, indexes).
        case unsigned
        case bool
        /// A string "0x…" of hex digits.
        case address
        case object
        case array
        /// Any JSON value (a custom key's value, custom data).
        case json
    }

    public struct Field: Sendable, Equatable {
        public let name: String
        public let kind: Kind
        /// Every writer writes it, and the reader refuses a typed line without it (the header's
        /// fields are read with defaults).
        public let required: Bool
    }

    /// The fields of a line of this type, besides "type" itself.
    public var fields: [Field] {
        func required(_ name: String, _ kind: Kind) -> Field { Field(name: name, kind: kind, required: true) }
        func optional(_ name: String, _ kind: Kind) -> Field { Field(name: name, kind: kind, required: false) }
        switch self {
        case .header:
            return [required("format", .string), required("version", .integer), required("id", .string),
                    required("app_id", .string), required("app_version", .string), required("pid", .integer),
                    required("timestamp_ns", .unsigned), required("arch", .string),
                    optional("forked_from_pid", .integer), optional("forked_from_id", .string)]
        case .signal:
            return [required("signo", .integer), required("name", .string), required("code", .integer),
                    optional("code_name", .string), optional("fault_address", .address), optional("sender_pid", .integer),
                    optional("stack_overflow", .bool)]
        case .thread:
            return [required("tid", .integer), optional("name", .string), optional("main", .bool), optional("crashed", .bool),
                    optional("state", .string), optional("crashed_too", .object)]
        case .registers:
            return [required("values", .object)]
        case .fatal_message:
            return [required("text", .string)]
        case .module:
            return [required("path", .string), required("start", .address), required("end", .address),
                    required("bias", .address), required("build_id", .string)]
        case .request:
            return [required("method", .string), required("route", .string), optional("request_id", .string),
                    optional("trace_id", .string), required("tid", .integer), required("age_ms", .unsigned),
                    optional("crashed_thread", .bool)]
        case .requests:
            return [optional("in_flight", .integer), required("dropped", .unsigned)]
        case .modules:
            return [required("source", .string), required("count", .integer), optional("loader_state", .string),
                    optional("unchanged", .integer), optional("read", .string), optional("read_fault", .bool),
                    optional("elapsed_ns", .unsigned)]
        case .frame:
            return [required("index", .integer), required("address", .address), required("kind", .string)]
        case .outer_frame, .async_frame:
            return [required("index", .integer), required("address", .address), optional("kind", .string)]
        case .stack:
            return [required("unwinder", .string), optional("frames", .integer), required("depth", .integer),
                    required("truncated", .bool), optional("depth_is_lower_bound", .bool), optional("unwind_error", .integer),
                    optional("copy_checks", .integer), optional("copy_check_faults", .integer), optional("table_lookups", .integer),
                    optional("table_scans", .integer), optional("table_misses", .integer)]
        case .threads:
            return [required("total", .integer), required("listed", .integer), required("asked", .integer),
                    required("answered", .integer), required("signo", .integer), optional("signal_taken", .bool),
                    required("wait_ns", .unsigned), required("elapsed_ns", .unsigned), optional("list_errno", .integer)]
        case .session:
            return [required("id", .string), optional("breadcrumbs_written", .unsigned)]
        case .nested_crash:
            return [required("signo", .integer), required("code", .integer), required("stage", .integer)]
        case .watchdog:
            return [required("stage", .integer), required("waited_ms", .unsigned)]
        case .end:
            return [optional("header_ns", .unsigned), optional("unwind_ns", .unsigned), optional("elapsed_before_sync_ns", .unsigned),
                    optional("hang_capture_ns", .unsigned)]
        case .timing:
            return [required("durable_ns", .unsigned)]
        case .user:
            return [required("id", .string)]
        case .custom_key:
            return [required("key", .string), required("value", .json)]
        case .custom_data:
            return [required("data", .object)]
        case .breadcrumb:
            return [required("index", .unsigned), optional("ring", .integer), required("timestamp_ns", .unsigned),
                    required("level", .string), required("kind", .string), optional("tag", .string), required("message", .string),
                    optional("metadata", .object)]
        case .termination:
            return [required("kind", .string), required("session_started_ns", .unsigned), required("detected_ns", .unsigned),
                    optional("after_hang", .string), optional("after_hang_report", .string)]
        case .hang:
            return [required("name", .string), required("tid", .integer), required("threshold_ms", .integer),
                    required("age_ms", .integer), optional("session", .string)]
        case .hang_end:
            return [required("duration_ms", .integer)]
        case .memory_context:
            return [optional("cgroup", .string), optional("cgroup_version", .integer), optional("limit_bytes", .integer),
                    optional("oom_kill_counters", .array)]
        case .memory_sample:
            return [required("timestamp_ns", .unsigned), optional("rss_bytes", .integer), optional("cgroup_bytes", .integer)]
        case .error:
            return [required("domain", .string), required("code", .integer), required("message", .string),
                    optional("underlying", .array), required("user_info", .object)]
        case .diagnostics:
            return [required("trigger", .string)]
        }
    }

    public func field(named name: String) -> Field? { fields.first { $0.name == name } }

    /// The bytes a line of this type starts with as every writer writes it: `{"type":"<type>"`.
    public var linePrefix: Data { Data(linePrefixText.utf8) }
    public var linePrefixText: String { #"{"type":"\#(rawValue)""# }

    /// What is wrong with `line` (a parsed JSON object) as a line of our writers: an unknown
    /// type, a required field missing, a field this type does not have, a value of another kind.
    /// Empty when it is right. `isHeader`: the record's first line.
    public static func problems(in line: [String: Any], isHeader: Bool) -> [String] {
        let type: RecordLineType
        if isHeader {
            type = .header
        } else {
            guard let name = line["type"] as? String else { return ["no \"type\""] }
            guard let known = RecordLineType(rawValue: name), known != .header else { return ["unknown type \"\(name)\""] }
            type = known
        }
        var problems: [String] = []
        for field in type.fields where field.required && line[field.name] == nil {
            problems.append("\(type.rawValue): \"\(field.name)\" missing")
        }
        for (name, value) in line.sorted(by: { $0.key < $1.key }) where !(name == "type" && !isHeader) {
            guard let field = type.field(named: name) else {
                problems.append("\(type.rawValue): \"\(name)\" is not a field of this line")
                continue
            }
            if !field.kind.matches(value) { problems.append("\(type.rawValue): \"\(name)\" is not \(field.kind)") }
        }
        return problems
    }

    /// Every problem of a whole record, each with its line number: what `problems(in:isHeader:)`
    /// finds on each non-empty line, and lines that are not JSON objects.
    public static func problems(in record: Data) -> [String] {
        var problems: [String] = []
        var seenHeader = false
        for (offset, bytes) in record.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            guard bytes.contains(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") && $0 != UInt8(ascii: "\r") }) else { continue }
            guard let line = JSONLine.parse(Data(bytes)) as? [String: Any] else {
                problems.append("line \(offset + 1): not a JSON object")
                continue
            }
            problems += Self.problems(in: line, isHeader: !seenHeader).map { "line \(offset + 1): \($0)" }
            seenHeader = true
        }
        return problems
    }
}

extension RecordLineType.Kind {
    func matches(_ value: Any) -> Bool {
        switch self {
        case .string: return value is String
        case .integer: return value is Int
        case .unsigned: return (value as? Int).map { $0 >= 0 } ?? (value is UInt64)
        case .bool: return value is Bool
        case .address: return (value as? String).flatMap(Address.init(hex:)) != nil
        case .object: return value is [String: Any]
        case .array: return value is [Any]
        case .json: return true
        }
    }
}

/// One record line as the Swift writers write it: `RecordLine(.hang).string("name", …).integer(…)`.
/// Only the fields the schema names for the type are taken (a wrong name or kind traps in a debug
/// build, an assert; every writer runs in the tests, whose strict check also finds a required field
/// left out); values are written in the kind the schema gives them.
public struct RecordLine: Sendable {
    public let type: RecordLineType
    private var bytes: [UInt8]

    public init(_ type: RecordLineType) {
        self.type = type
        bytes = type == .header ? Array(#"{"format":"swift-crash-reporting.crash-record""#.utf8) : Array(type.linePrefix)
    }

    /// The record's first line.
    public static func header(version: Int, id: String, appID: String, appVersion: String, pid: Int32,
                              timestampNanoseconds: UInt64, architecture: String) -> RecordLine {
        RecordLine(.header).integer("version", version).string("id", id).string("app_id", appID).string("app_version", appVersion)
            .integer("pid", Int(pid)).unsigned("timestamp_ns", timestampNanoseconds).string("arch", architecture)
    }

    private func adding(_ name: String, _ kind: RecordLineType.Kind, _ value: (inout [UInt8]) -> Void) -> RecordLine {
        assert(type.field(named: name)?.kind == kind || (kind == .integer && type.field(named: name)?.kind == .unsigned),
               "\(type.rawValue) has no \(kind) field \"\(name)\" (RecordLineType.fields)")
        var copy = self
        copy.bytes.append(UInt8(ascii: ","))
        RecordLine.appendQuoted(name, to: &copy.bytes)
        copy.bytes.append(UInt8(ascii: ":"))
        value(&copy.bytes)
        return copy
    }

    public func string(_ name: String, _ value: String) -> RecordLine {
        adding(name, .string) { RecordLine.appendQuoted(value, to: &$0) }
    }

    public func integer(_ name: String, _ value: Int) -> RecordLine {
        adding(name, .integer) { $0.append(contentsOf: String(value).utf8) }
    }

    public func unsigned(_ name: String, _ value: UInt64) -> RecordLine {
        adding(name, .unsigned) { $0.append(contentsOf: String(value).utf8) }
    }

    public func bool(_ name: String, _ value: Bool) -> RecordLine {
        adding(name, .bool) { $0.append(contentsOf: (value ? "true" : "false").utf8) }
    }

    /// A value already in JSON (an object, an array, a custom key's value): written as it is.
    public func json(_ name: String, _ text: String) -> RecordLine {
        let kind = type.field(named: name)?.kind ?? .json
        assert([.object, .array, .json].contains(kind), "\(type.rawValue).\(name) does not take raw JSON")
        return adding(name, kind) { $0.append(contentsOf: text.utf8) }
    }

    /// The line without its newline.
    public var text: String { String(decoding: bytes + [UInt8(ascii: "}")], as: UTF8.self) }

    /// The line with its newline, as it goes into a record.
    public var textLine: String { text + "\n" }

    /// A JSON string literal: quotes, backslashes and control characters escaped.
    @inlinable
    public static func appendQuoted(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most texts need no escape: checked on the string's own bytes, then one copy instead of
        // an append a byte.
        let copied = text.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if copied == true {
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "\\"))
            case UInt8(ascii: "\n"): out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "n"))
            case UInt8(ascii: "\r"): out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "r"))
            case UInt8(ascii: "\t"): out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "t"))
            case 0..<0x20:
                // No table: this runs on the log path (an array here was an allocation a character).
                func hexDigit(_ value: UInt8) -> UInt8 { value < 10 ? 48 + value : 87 + value }
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                        hexDigit(byte >> 4), hexDigit(byte & 15)])
            default: out.append(byte)   // UTF-8 passes through: JSON text may hold it as it is
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// `appendQuoted` as a string.
    public static func quoted(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + 2)
        appendQuoted(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
