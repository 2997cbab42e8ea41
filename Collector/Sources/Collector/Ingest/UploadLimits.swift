// Bounded work per upload: the JSON text is scanned once, before anything is built from it, and
// refused at the first limit it passes (seed 000's counts and lengths, nesting depth, strings,
// values). Foundation's decoder then only ever sees a document whose size in values is known to be
// small; a body that gzips tiny (millions of zeros in custom_data) costs a few milliseconds of
// scanning, never a tree of millions of JSONValues.
import CrashReportModel

/// What one upload may hold. The scanner reports the first limit passed as a ValidationFailure
/// whose message names it ("logs: more than 500 entries (seed 000's limit)").
struct UploadLimits: Sendable {
    /// Containers nested inside each other, the root counted (custom_data's values included).
    var maxDepth = 32
    /// Any string value, in bytes as sent (escapes counted as written); custom_data's 100 KB may
    /// be one string.
    var maxStringBytes = 128 * 1024
    /// Any object key, in bytes as sent.
    var maxKeyBytes = 1024
    /// Elements of any array or members of any object that has no limit of its own below.
    var maxMembers = 10_000
    /// Values in the whole document (every scalar, array and object).
    var maxValues = 500_000
    /// Seed 000's limits, for diagnostics uploads; nil for the other endpoints.
    var diagnostics: Diagnostics?

    struct Diagnostics: Sendable {
        var logEntries = DiagnosticsPayload.Limits.logEntries
        /// Counted in Unicode scalars, as the runtime and the schema's maxLength count.
        var logMessageCharacters = DiagnosticsPayload.Limits.logMessageCharacters
        var networkErrors = DiagnosticsPayload.Limits.networkErrors
        var crashReports = DiagnosticsPayload.Limits.crashReports
        var screenshots = DiagnosticsPayload.Limits.screenshots
        /// Per crash report's stack_trace, and per thread's frames.
        var stackFrames = DiagnosticsPayload.Limits.stackFrames
        /// Threads per crash report: the runtime captures 256 at most, besides the crashed one.
        var threads = 512
        /// Loaded modules per crash report: the handler records 512 at most.
        var images = 1024
        /// custom_data as serialised JSON (whitespace between tokens not counted).
        var customDataBytes = DiagnosticsPayload.Limits.customDataBytes
    }

    /// POST /api/v1/qa/diagnostics: seed 000's limits.
    static let diagnosticsUpload = UploadLimits(diagnostics: Diagnostics())
    /// POST /api/logs: seed 003's events carry request and response bodies of up to 64 KB each
    /// (more once escaped); the runtime sends 500 events per request at most.
    static let apiLogs = UploadLimits(maxDepth: 32, maxStringBytes: 512 * 1024, maxMembers: 1000)
    /// POST /api/v1/sessions: 1000 short entries (past that, the beacons' own message says so).
    static let sessionBeacons = UploadLimits(maxDepth: 8, maxStringBytes: 4096, maxMembers: 2000)

    /// Throws the first limit passed within `prefix`, the start of a body still being inflated: the
    /// same one `check` would throw for the whole body, as the scan goes in order. The end of the
    /// prefix, or anything else not JSON in it, is left for `check` to judge on the whole.
    func checkPrefix(_ prefix: [UInt8]) throws {
        do {
            try check(prefix)
        } catch let failure as ValidationFailure where failure.limit != nil {
            throw failure
        } catch {}
    }

    /// Throws ValidationFailure at the first limit passed, or when the text is not JSON.
    func check(_ body: [UInt8]) throws {
        try body.withUnsafeBufferPointer { buffer in
            var scanner = LimitScanner(bytes: buffer, limits: self)
            try scanner.document()
        }
    }
}

/// Where a value sits, for the limits that depend on it. Array elements and object members not
/// named here are `.other`, which only the general limits apply to.
private enum Position {
    case root, other
    case logs, logEntry, logMessage
    case networkErrors, screenshots
    case crashReports, crashReport, stackTrace, threads, thread, frames, images
    case customData
}

private struct LimitScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    let limits: UploadLimits
    var index = 0
    var values = 0
    var depth = 0
    /// Whitespace bytes skipped so far: custom_data's size is its span less these.
    var whitespace = 0
    /// Where custom_data's value began, and the whitespace count then, while it is being read.
    var customData: (start: Int, whitespace: Int)?

    init(bytes: UnsafeBufferPointer<UInt8>, limits: UploadLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    mutating func document() throws {
        skipWhitespace()
        try value(.root)
        skipWhitespace()
        guard index == bytes.count else { throw invalid("unexpected text after the JSON value") }
    }

    private mutating func value(_ position: Position) throws {
        values += 1
        if values > limits.maxValues {
            throw exceeded("body: more than \(limits.maxValues) JSON values", named: "values")
        }
        guard index < bytes.count else { throw invalid("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): try object(position)
        case UInt8(ascii: "["): try array(position)
        case UInt8(ascii: "\""): try stringValue(position)
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: try number()
        }
    }

    private mutating func enter(_ position: Position) throws {
        depth += 1
        if depth > limits.maxDepth { throw exceeded("body: nested deeper than \(limits.maxDepth) levels", named: "depth") }
        if position == .customData, depth == 2 { customData = (index, whitespace) }
    }

    private mutating func leave(_ position: Position) {
        depth -= 1
        if position == .customData, depth == 1 { customData = nil }
    }

    private mutating func object(_ position: Position) throws {
        try enter(position)
        index += 1   // {
        skipWhitespace()
        var members = 0
        if peek(UInt8(ascii: "}")) {
            index += 1
            leave(position)
            return
        }
        while true {
            members += 1
            try checkCount(members, of: position)
            guard peek(UInt8(ascii: "\"")) else { throw invalid("expected a member name") }
            let key = try string(isKey: true)
            skipWhitespace()
            guard peek(UInt8(ascii: ":")) else { throw invalid("expected ':'") }
            index += 1
            skipWhitespace()
            try value(child(of: position, key: key))
            skipWhitespace()
            try checkCustomData()
            guard index < bytes.count else { throw invalid("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                skipWhitespace()
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                leave(position)
                return
            } else {
                throw invalid("expected ',' or '}'")
            }
        }
    }

    private mutating func array(_ position: Position) throws {
        try enter(position)
        index += 1   // [
        skipWhitespace()
        var elements = 0
        if peek(UInt8(ascii: "]")) {
            index += 1
            leave(position)
            return
        }
        let element = elementPosition(of: position)
        while true {
            elements += 1
            try checkCount(elements, of: position)
            try value(element)
            skipWhitespace()
            try checkCustomData()
            guard index < bytes.count else { throw invalid("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                skipWhitespace()
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                leave(position)
                return
            } else {
                throw invalid("expected ',' or ']'")
            }
        }
    }

    /// The count limit of a container at `position`, checked as each element arrives: a list of
    /// 650,000 logs is refused at its 501st.
    private func checkCount(_ count: Int, of position: Position) throws {
        let seed = limits.diagnostics
        let limit: (Int, String)
        switch position {
        case .logs: limit = (seed?.logEntries ?? limits.maxMembers, "logs")
        case .networkErrors: limit = (seed?.networkErrors ?? limits.maxMembers, "network_errors")
        case .crashReports: limit = (seed?.crashReports ?? limits.maxMembers, "crash_reports")
        case .screenshots: limit = (seed?.screenshots ?? limits.maxMembers, "screenshots")
        case .stackTrace: limit = (seed?.stackFrames ?? limits.maxMembers, "crash_reports/*/stack_trace")
        case .frames: limit = (seed?.stackFrames ?? limits.maxMembers, "crash_reports/*/thread_info/*/frames")
        case .threads: limit = (seed?.threads ?? limits.maxMembers, "crash_reports/*/thread_info")
        case .images: limit = (seed?.images ?? limits.maxMembers, "crash_reports/*/images")
        case .customData where seed != nil:
            return   // its 100 KB bound it, and name the limit that matters
        default:
            guard count > limits.maxMembers else { return }
            throw exceeded("body: an array or object with more than \(limits.maxMembers) entries", named: "members")
        }
        guard count > limit.0 else { return }
        let seedLimit = [.logs, .networkErrors, .crashReports, .screenshots, .stackTrace, .frames].contains(position)
        throw exceeded("\(limit.1): more than \(limit.0) entries\(seedLimit ? " (seed 000's limit)" : "")", named: limit.1)
    }

    private func checkCustomData() throws {
        guard let start = customData, let limit = limits.diagnostics?.customDataBytes else { return }
        if index - start.start - (whitespace - start.whitespace) > limit {
            throw exceeded("custom_data: more than \(limit) bytes of JSON (seed 000's limit)", named: "custom_data")
        }
    }

    private func child(of position: Position, key: [UInt8]) -> Position {
        guard limits.diagnostics != nil else { return .other }
        switch position {
        case .root:
            switch key {
            case Array("logs".utf8): return .logs
            case Array("network_errors".utf8): return .networkErrors
            case Array("crash_reports".utf8): return .crashReports
            case Array("screenshots".utf8): return .screenshots
            case Array("custom_data".utf8): return .customData
            default: return .other
            }
        case .logEntry: return key == Array("message".utf8) ? .logMessage : .other
        case .crashReport:
            switch key {
            case Array("stack_trace".utf8): return .stackTrace
            case Array("thread_info".utf8): return .threads
            case Array("images".utf8): return .images
            default: return .other
            }
        case .thread: return key == Array("frames".utf8) ? .frames : .other
        case .customData: return .customData
        default: return .other
        }
    }

    private func elementPosition(of position: Position) -> Position {
        switch position {
        case .logs: return .logEntry
        case .crashReports: return .crashReport
        case .threads: return .thread
        case .customData: return .customData
        default: return .other
        }
    }

    private mutating func stringValue(_ position: Position) throws {
        let start = index
        let scalars = try skipString()
        if index - start - 2 > limits.maxStringBytes {
            throw exceeded("body: a string longer than \(limits.maxStringBytes) bytes", named: "string_bytes")
        }
        if position == .logMessage, let limit = limits.diagnostics?.logMessageCharacters, scalars > limit {
            throw exceeded("logs/*/message: longer than \(limit) characters (seed 000's limit)", named: "logs/*/message")
        }
    }

    /// A member name, unescaped, so that "\u006cogs" is counted as the logs it is.
    private mutating func string(isKey: Bool) throws -> [UInt8] {
        let start = index
        _ = try skipString()
        let length = index - start - 2
        if length > limits.maxKeyBytes { throw exceeded("body: a member name longer than \(limits.maxKeyBytes) bytes", named: "key_bytes") }
        let raw = Array(bytes[(start + 1)..<(index - 1)])
        guard raw.contains(UInt8(ascii: "\\")) else { return raw }
        return Self.unescaped(raw)
    }

    /// Moves past a string (index at its opening quote), checking its escapes and control
    /// characters; the number of Unicode scalars it holds.
    private mutating func skipString() throws -> Int {
        let start = index
        index += 1   // "
        var scalars = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return scalars
            case UInt8(ascii: "\\"):
                guard index + 1 < bytes.count else { throw invalid("unexpected end of input") }
                let escaped = bytes[index + 1]
                if escaped == UInt8(ascii: "u") {
                    guard index + 6 <= bytes.count, let unit = Self.hex4(bytes, at: index + 2) else {
                        throw invalid("invalid \\u escape")
                    }
                    // A high surrogate and its low one are one scalar.
                    if !(0xD800...0xDBFF).contains(unit) { scalars += 1 }
                    index += 6
                } else {
                    guard Array("\"\\/bfnrt".utf8).contains(escaped) else { throw invalid("invalid escape") }
                    scalars += 1
                    index += 2
                }
            case 0..<0x20:
                throw invalid("control character in a string")
            default:
                // UTF-8 continuation bytes are not scalars of their own.
                if byte & 0xC0 != 0x80 { scalars += 1 }
                index += 1
            }
            // Refused as soon as it is known, not at its end.
            if index - start > max(limits.maxStringBytes, limits.maxKeyBytes) + 1 {
                throw exceeded("body: a string longer than \(max(limits.maxStringBytes, limits.maxKeyBytes)) bytes", named: "string_bytes")
            }
        }
        throw invalid("unterminated string")
    }

    private mutating func number() throws {
        let start = index
        if peek(UInt8(ascii: "-")) { index += 1 }
        guard digits() > 0 else { throw invalid("unexpected character") }
        if peek(UInt8(ascii: ".")) {
            index += 1
            guard digits() > 0 else { throw invalid("invalid number") }
        }
        if peek(UInt8(ascii: "e")) || peek(UInt8(ascii: "E")) {
            index += 1
            if peek(UInt8(ascii: "+")) || peek(UInt8(ascii: "-")) { index += 1 }
            guard digits() > 0 else { throw invalid("invalid number") }
        }
        if index - start > 1024 { throw exceeded("body: a number longer than 1024 characters", named: "number_length") }
    }

    private mutating func digits() -> Int {
        let start = index
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
        return index - start
    }

    private mutating func literal(_ word: String) throws {
        let expected = Array(word.utf8)
        guard index + expected.count <= bytes.count else { throw invalid("unexpected end of input") }
        for offset in expected.indices where bytes[index + offset] != expected[offset] {
            throw invalid("unexpected character")
        }
        index += expected.count
    }

    private mutating func skipWhitespace() {
        let start = index
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default:
                whitespace += index - start
                return
            }
        }
        whitespace += index - start
    }

    private func peek(_ byte: UInt8) -> Bool { index < bytes.count && bytes[index] == byte }

    private static func hex4(_ bytes: UnsafeBufferPointer<UInt8>, at start: Int) -> UInt32? {
        var value: UInt32 = 0
        for offset in 0..<4 {
            let byte = bytes[start + offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// A member name's bytes with its escapes resolved (already checked by skipString).
    private static func unescaped(_ raw: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var units: [UInt16] = []
        func flushUnits() {
            guard !units.isEmpty else { return }
            out.append(contentsOf: Array(String(decoding: units, as: UTF16.self).utf8))
            units.removeAll()
        }
        var index = 0
        while index < raw.count {
            if raw[index] == UInt8(ascii: "\\"), index + 1 < raw.count {
                let escaped = raw[index + 1]
                if escaped == UInt8(ascii: "u"), index + 6 <= raw.count {
                    let unit = raw[(index + 2)..<(index + 6)].withUnsafeBufferPointer { hex4($0, at: 0) } ?? 0xFFFD
                    units.append(UInt16(unit))
                    index += 6
                    continue
                }
                flushUnits()
                switch escaped {
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                default: out.append(escaped)
                }
                index += 2
            } else {
                flushUnits()
                out.append(raw[index])
                index += 1
            }
        }
        flushUnits()
        return out
    }

    private func invalid(_ reason: String) -> ValidationFailure {
        ValidationFailure(message: "Body is not valid JSON", details: ["invalid JSON: \(reason) at byte \(index)"])
    }

    /// `name`: the limit's short name, a label of the /metrics counter of refusals (a fixed set).
    private func exceeded(_ limit: String, named name: String) -> ValidationFailure {
        ValidationFailure(message: "Limit exceeded: \(limit)", details: [limit], limit: name)
    }
}
