// The upload's DiagnosticsPayload read straight from its bytes, for the common case: a payload as
// the runtime writes it. Foundation's JSONDecoder took ~470 µs of CPU for the 5.6 KB sample
// payload (28 % of the collector's CPU under tools/bench-collector; a quarter of that in
// JSONValue's decoding, which tries each JSON type in turn and pays for a thrown DecodingError at
// each miss). This reader gives the model's own Decodable answer (DiagnosticsPayload.swift: the
// same required fields, defaults and nulls) or gives up: anything it is not sure to read as
// JSONDecoder would — a duplicate key, a number in an integer field that is not a plain integer, an
// integral number with a fraction or exponent in free-form data, invalid UTF-8, a control
// character or lone surrogate in a string, a missing or null required field, a value of another
// type — returns nil, and PayloadDecoding decodes the body with JSONDecoder as before, which
// decides. FastPayloadReaderTests compares both on real and mutated payloads.
// Docs/Decisions/0048-fast-payload-reader.md says why it is written here.
import CrashReportModel

enum FastPayloadReader {
    /// What `PayloadDecoding.direct` needs: the payload, and per crash report whether report_id
    /// and symbolicated were sent (present and not null). nil: decode with JSONDecoder instead.
    static func read(_ body: [UInt8]) -> (payload: DiagnosticsPayload, reports: [(hasReportID: Bool, hasSymbolicated: Bool)])? {
        body.withUnsafeBufferPointer { buffer in
            var reader = Reader(bytes: buffer)
            do {
                let result = try reader.payload()
                reader.skipSpace()
                guard reader.at == buffer.count else { return nil }
                return result
            } catch {
                return nil
            }
        }
    }

    /// Not read here; JSONDecoder decides.
    struct GiveUp: Error {}

    /// The keys of one object seen so far, to give up at a repeated one (JSONDecoder keeps the
    /// first; the free-form dictionaries would keep another).
    struct Seen {
        var bits: UInt64 = 0
        mutating func insert(_ index: Int) throws {
            let bit: UInt64 = 1 << UInt64(index)
            guard bits & bit == 0 else { throw GiveUp() }
            bits |= bit
        }
    }

    struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var at = 0
        /// Objects and arrays open: deeper than UploadLimits lets a body be is JSONDecoder's.
        var depth = 0
        static let maximumDepth = 64

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        // MARK: JSON

        mutating func skipSpace() {
            while at < bytes.count {
                let byte = bytes[at]
                guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
                at += 1
            }
        }

        /// The next byte after whitespace, not consumed.
        mutating func peek() throws -> UInt8 {
            skipSpace()
            guard at < bytes.count else { throw GiveUp() }
            return bytes[at]
        }

        mutating func expect(_ byte: UInt8) throws {
            guard try peek() == byte else { throw GiveUp() }
            at += 1
        }

        mutating func literal(_ text: StaticString) throws {
            let count = text.utf8CodeUnitCount
            guard at + count <= bytes.count else { throw GiveUp() }
            for i in 0..<count where bytes[at + i] != text.utf8Start[i] { throw GiveUp() }
            at += count
        }

        /// `null`, consumed; false (nothing consumed) for any other value.
        mutating func null() throws -> Bool {
            guard try peek() == UInt8(ascii: "n") else { return false }
            try literal("null")
            return true
        }

        mutating func bool() throws -> Bool {
            switch try peek() {
            case UInt8(ascii: "t"): try literal("true"); return true
            case UInt8(ascii: "f"): try literal("false"); return false
            default: throw GiveUp()
            }
        }

        /// A string, read as the record reader and the privacy passes read one (JSONStringReader:
        /// escapes, surrogate pairs, UTF-8 checked); gives up at a control character, a lone
        /// surrogate or bytes that are not UTF-8.
        mutating func string() throws -> String {
            guard try peek() == UInt8(ascii: "\""), let text = JSONStringReader.read(bytes, at: &at) else { throw GiveUp() }
            return text
        }

        /// A JSON number's extent: whether it has a fraction or exponent. Gives up at what JSON
        /// does not allow (a leading zero before digits, a lone minus, "1.", "1e").
        private mutating func number() throws -> (start: Int, end: Int, plain: Bool) {
            _ = try peek()
            let start = at
            if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
            let digits = at
            while at < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[at]) { at += 1 }
            guard at > digits, !(bytes[digits] == UInt8(ascii: "0") && at - digits > 1) else { throw GiveUp() }
            var plain = true
            if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
                plain = false
                at += 1
                let fraction = at
                while at < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[at]) { at += 1 }
                guard at > fraction else { throw GiveUp() }
            }
            if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
                plain = false
                at += 1
                if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
                let exponent = at
                while at < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[at]) { at += 1 }
                guard at > exponent else { throw GiveUp() }
            }
            return (start, at, plain)
        }

        /// A plain integer that fits an Int (JSONDecoder also reads 1.0 and 1e2 as integers:
        /// those are left to it).
        mutating func int() throws -> Int {
            let (start, end, plain) = try number()
            guard plain else { throw GiveUp() }
            return try integer(start, end)
        }

        private func integer(_ start: Int, _ end: Int) throws -> Int {
            let negative = bytes[start] == UInt8(ascii: "-")
            var value = 0
            for i in (negative ? start + 1 : start)..<end {
                let digit = Int(bytes[i] - UInt8(ascii: "0"))
                let (times10, o1) = value.multipliedReportingOverflow(by: 10)
                let (next, o2) = negative ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
                guard !o1, !o2 else { throw GiveUp() }
                value = next
            }
            return value
        }

        mutating func double() throws -> Double {
            let (start, end, _) = try number()
            return try parsedDouble(start, end)
        }

        /// A number's value, or give up where a parser may differ: past Double's range (inf), below
        /// its normal numbers (a subnormal, or nonzero digits that parse as 0), and a zero with an
        /// exponent (this toolchain's JSONDecoder refuses `0e1` as an underflow: its zero check
        /// reads the exponent's digits too; found by a review, 2026-11-28).
        private func parsedDouble(_ start: Int, _ end: Int) throws -> Double {
            let text = UnsafeBufferPointer(rebasing: bytes[start..<end])
            guard let value = Double(String(decoding: text, as: UTF8.self)), value.isFinite else { throw GiveUp() }
            if value == 0 {
                for byte in text {
                    // Nonzero digits, or an exponent.
                    if (UInt8(ascii: "1")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                        throw GiveUp()
                    }
                }
            } else if !value.isNormal {
                throw GiveUp()
            }
            return value
        }

        /// Past a container's `open`, one level deeper; false for an empty one (its `close` read).
        private mutating func enter(_ open: StaticString, _ close: UInt8) throws -> Bool {
            try expect(open.utf8Start[0])
            if try peek() == close {
                at += 1
                return false
            }
            depth += 1
            guard depth <= Self.maximumDepth else { throw GiveUp() }
            return true
        }

        /// After an element: true at a comma (another follows), false at `close` (one level up).
        private mutating func more(_ close: UInt8) throws -> Bool {
            let byte = try peek()
            at += 1
            if byte == UInt8(ascii: ",") { return true }
            guard byte == close else { throw GiveUp() }
            depth -= 1
            return false
        }

        /// Each member of an object: `body` gets its key's bytes and reads (or skips) its value.
        mutating func object(_ body: (inout Reader, UnsafeBufferPointer<UInt8>) throws -> Void) throws {
            guard try enter("{", UInt8(ascii: "}")) else { return }
            repeat {
                try expect(UInt8(ascii: "\""))
                let start = at
                var ascii = true
                while at < bytes.count, bytes[at] != UInt8(ascii: "\"") {
                    // A key with an escape or a control character: JSONDecoder's matter.
                    guard bytes[at] != UInt8(ascii: "\\"), bytes[at] >= 0x20 else { throw GiveUp() }
                    if bytes[at] >= 0x80 { ascii = false }
                    at += 1
                }
                guard at < bytes.count else { throw GiveUp() }
                let key = UnsafeBufferPointer(rebasing: bytes[start..<at])
                // Any key, kept or not, is valid UTF-8 (JSONDecoder refuses the body otherwise).
                guard ascii || String(validating: key, as: UTF8.self) != nil else { throw GiveUp() }
                at += 1
                try expect(UInt8(ascii: ":"))
                try body(&self, key)
            } while try more(UInt8(ascii: "}"))
        }

        mutating func array(_ body: (inout Reader) throws -> Void) throws {
            guard try enter("[", UInt8(ascii: "]")) else { return }
            repeat {
                try body(&self)
            } while try more(UInt8(ascii: "]"))
        }

        /// A member this reader does not keep (JSONDecoder ignores unknown keys), read through so
        /// that what follows is where it should be.
        mutating func skipValue() throws {
            switch try peek() {
            case UInt8(ascii: "\""): _ = try string()
            case UInt8(ascii: "{"): try object { reader, _ in try reader.skipValue() }
            case UInt8(ascii: "["): try array { try $0.skipValue() }
            case UInt8(ascii: "t"), UInt8(ascii: "f"): _ = try bool()
            case UInt8(ascii: "n"): _ = try null()
            default: _ = try number()
            }
        }

        /// JSONValue as its Decodable makes it: null, bool, a whole number as .int, another as
        /// .double, string, array, object.
        mutating func value() throws -> JSONValue {
            switch try peek() {
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "{"): return .object(try dictionary())
            case UInt8(ascii: "["): return .array(try list { try $0.value() })
            case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool(try bool())
            case UInt8(ascii: "n"): try literal("null"); return .null
            default:
                let (start, end, plain) = try number()
                if plain { return .int(try integer(start, end)) }
                let number = try parsedDouble(start, end)
                guard number != number.rounded(.towardZero) else { throw GiveUp() }   // 1.0: JSONDecoder makes it .int
                return .double(number)
            }
        }

        mutating func dictionary() throws -> [String: JSONValue] {
            var result: [String: JSONValue] = [:]
            try object { reader, key in
                let name = try reader.keyText(key)
                let value = try reader.value()
                guard result.updateValue(value, forKey: name) == nil else { throw GiveUp() }
            }
            return result
        }

        func keyText(_ key: UnsafeBufferPointer<UInt8>) throws -> String {
            guard let text = String(validating: key, as: UTF8.self) else { throw GiveUp() }
            return text
        }

        // MARK: Optional members: null or absent is nil.

        mutating func optional<T>(_ read: (inout Reader) throws -> T) throws -> T? {
            try null() ? nil : read(&self)
        }

        mutating func list<T>(_ read: (inout Reader) throws -> T) throws -> [T] {
            var values: [T] = []
            try array { values.append(try read(&$0)) }
            return values
        }

        // MARK: The model

        /// Each member of an object whose key is one of `names`, by its index there, each at most
        /// once; the others are skipped.
        mutating func members(_ names: [StaticString], _ body: (inout Reader, Int) throws -> Void) throws {
            var seen = Seen()
            try object { r, key in
                let i = Self.index(of: key, in: names)
                guard i >= 0 else { return try r.skipValue() }
                try seen.insert(i)
                try body(&r, i)
            }
        }

        /// The member `key` names among `names`, or -1.
        static func index(of key: UnsafeBufferPointer<UInt8>, in names: [StaticString]) -> Int {
            for (i, name) in names.enumerated() where name.utf8CodeUnitCount == key.count {
                let start = name.utf8Start
                var same = true
                for j in 0..<key.count where start[j] != key[j] {
                    same = false
                    break
                }
                if same { return i }
            }
            return -1
        }

        static let payloadKeys: [StaticString] = ["test_run_id", "app_metadata", "device_metadata", "timestamp_collected", "logs",
                                                  "network_errors", "crash_reports", "screenshots", "custom_data", "user_id",
                                                  "custom_keys", "reporter"]

        mutating func payload() throws -> (payload: DiagnosticsPayload, reports: [(hasReportID: Bool, hasSymbolicated: Bool)]) {
            var testRunID: String?, app: AppMetadata?, device: HostMetadata?, collected: String?
            var logs: [DiagnosticsPayload.LogEntry]?, networkErrors: [NetworkErrorDigest]?, screenshots: [DiagnosticsPayload.ScreenshotRef]?
            var reports: [(DiagnosticsPayload.CrashReportEntry, Bool, Bool)]?
            var customData: [String: JSONValue]?, userID: String?, customKeys: [String: JSONValue]?, reporter: DiagnosticsPayload.Reporter?
            try members(Self.payloadKeys) { r, i in
                switch i {
                case 0: testRunID = try r.string()
                case 1: app = try r.appMetadata()
                case 2: device = try r.hostMetadata()
                case 3: collected = try r.string()
                case 4: logs = try r.optional { try $0.list { try $0.logEntry() } }
                case 5: networkErrors = try r.optional { try $0.list { try $0.networkError() } }
                case 6: reports = try r.optional { try $0.list { try $0.crashReport() } }
                case 7: screenshots = try r.optional { try $0.list { try $0.screenshot() } }
                case 8: customData = try r.optional { try $0.dictionary() }
                case 9: userID = try r.optional { try $0.string() }
                case 10: customKeys = try r.optional { try $0.dictionary() }
                default: reporter = try r.optional { try $0.reporter() }
                }
            }
            guard let testRunID, let app, let device, let collected else { throw GiveUp() }
            let entries = reports ?? []
            let payload = DiagnosticsPayload(
                test_run_id: testRunID, app_metadata: app, device_metadata: device, timestamp_collected: collected,
                logs: logs ?? [], network_errors: networkErrors ?? [], crash_reports: entries.map(\.0),
                screenshots: screenshots ?? [], custom_data: customData ?? [:], user_id: userID, custom_keys: customKeys ?? [:],
                reporter: reporter)
            return (payload, entries.map { (hasReportID: $0.1, hasSymbolicated: $0.2) })
        }

        static let appKeys: [StaticString] = ["app_name", "app_version", "build_number", "bundle_id", "environment"]

        mutating func appMetadata() throws -> AppMetadata {
            var values = [String?](repeating: nil, count: 5)
            try members(Self.appKeys) { r, i in
                values[i] = try r.string()
            }
            guard let name = values[0], let version = values[1], let build = values[2], let bundle = values[3], let environment = values[4]
            else { throw GiveUp() }
            return AppMetadata(app_name: name, app_version: version, build_number: build, bundle_id: bundle, environment: environment)
        }

        static let hostKeys: [StaticString] = ["device_model", "device_identifier", "ios_version", "locale", "timezone", "is_simulator",
                                               "available_storage_mb", "total_memory_mb", "battery_level", "battery_state", "cpu_model",
                                               "cpu_count", "hostname_hash", "virtualization"]

        mutating func hostMetadata() throws -> HostMetadata {
            var texts = [String?](repeating: nil, count: 14)
            var simulator: Bool?, storage: Int?, memory: Int?, battery: Double?, cpus: Int?
            try members(Self.hostKeys) { r, i in
                switch i {
                case 5: simulator = try r.bool()
                case 6: storage = try r.int()
                case 7: memory = try r.int()
                case 8: battery = try r.optional { try $0.double() }
                case 11: cpus = try r.optional { try $0.int() }
                case 9, 10, 12, 13: texts[i] = try r.optional { try $0.string() }
                default: texts[i] = try r.string()
                }
            }
            guard let model = texts[0], let identifier = texts[1], let os = texts[2], let locale = texts[3], let timezone = texts[4],
                  let simulator, let storage, let memory else { throw GiveUp() }
            return HostMetadata(device_model: model, device_identifier: identifier, ios_version: os, locale: locale, timezone: timezone,
                                is_simulator: simulator, available_storage_mb: storage, total_memory_mb: memory, battery_level: battery,
                                battery_state: texts[9], cpu_model: texts[10] ?? "", cpu_count: cpus ?? 0, hostname_hash: texts[12] ?? "",
                                virtualization: texts[13] ?? "none")
        }

        static let logKeys: [StaticString] = ["timestamp", "level", "tag", "message", "metadata"]

        mutating func logEntry() throws -> DiagnosticsPayload.LogEntry {
            var texts = [String?](repeating: nil, count: 4)
            var metadata: [String: JSONValue]?
            try members(Self.logKeys) { r, i in
                if i == 4 { metadata = try r.optional { try $0.dictionary() } } else { texts[i] = try r.string() }
            }
            guard let timestamp = texts[0], let level = texts[1], let tag = texts[2], let message = texts[3] else { throw GiveUp() }
            return DiagnosticsPayload.LogEntry(timestamp: timestamp, level: level, tag: tag, message: message, metadata: metadata)
        }

        static let networkKeys: [StaticString] = ["timestamp", "request_url", "request_method", "status_code", "error_type",
                                                  "error_message", "request_duration_ms", "retry_count"]

        mutating func networkError() throws -> NetworkErrorDigest {
            var texts = [String?](repeating: nil, count: 6)
            var status: Int?, duration: Int?, retries: Int?
            try members(Self.networkKeys) { r, i in
                switch i {
                case 3: status = try r.optional { try $0.int() }
                case 6: duration = try r.int()
                case 7: retries = try r.int()
                default: texts[i] = try r.string()
                }
            }
            guard let timestamp = texts[0], let url = texts[1], let method = texts[2], let type = texts[4], let message = texts[5],
                  let duration, let retries else { throw GiveUp() }
            return NetworkErrorDigest(timestamp: timestamp, request_url: url, request_method: method, status_code: status,
                                      error_type: type, error_message: message, request_duration_ms: duration, retry_count: retries)
        }

        static let reportKeys: [StaticString] = ["timestamp", "exception_type", "exception_message", "stack_trace", "thread_info",
                                                 "report_id", "kind", "symbolicated", "is_partial", "images", "signal", "error",
                                                 "termination", "requests_in_flight"]

        mutating func crashReport() throws -> (DiagnosticsPayload.CrashReportEntry, Bool, Bool) {
            var texts = [String?](repeating: nil, count: 7)
            var stack: [String]?, threads: [DiagnosticsPayload.ThreadInfo]?, symbolicated: Bool?, partial: Bool?
            var images: [DiagnosticsPayload.Image]?, signal: DiagnosticsPayload.SignalInfo?, error: DiagnosticsPayload.ErrorInfo?
            var termination: DiagnosticsPayload.TerminationInfo?, requests: [DiagnosticsPayload.InFlightRequest]?
            try members(Self.reportKeys) { r, i in
                switch i {
                case 0, 1, 2: texts[i] = try r.string()
                case 3: stack = try r.list { try $0.string() }
                case 4: threads = try r.optional { try $0.list { try $0.thread() } }
                case 5, 6: texts[i] = try r.optional { try $0.string() }
                case 7: symbolicated = try r.optional { try $0.bool() }
                case 8: partial = try r.optional { try $0.bool() }
                case 9: images = try r.optional { try $0.list { try $0.image() } }
                case 10: signal = try r.optional { try $0.signal() }
                case 11: error = try r.optional { try $0.error() }
                case 12: termination = try r.optional { try $0.termination() }
                default: requests = try r.optional { try $0.list { try $0.request() } }
                }
            }
            guard let timestamp = texts[0], let type = texts[1], let message = texts[2], let stack else { throw GiveUp() }
            let entry = DiagnosticsPayload.CrashReportEntry(
                timestamp: timestamp, exception_type: type, exception_message: message, stack_trace: stack,
                thread_info: threads ?? [], report_id: texts[5] ?? "", kind: texts[6] ?? "crash", symbolicated: symbolicated ?? true,
                is_partial: partial ?? false, images: images ?? [], signal: signal, error: error, termination: termination,
                requests_in_flight: requests)
            return (entry, texts[5] != nil, symbolicated != nil)
        }

        static let threadKeys: [StaticString] = ["id", "name", "crashed", "is_main", "frames", "state"]

        mutating func thread() throws -> DiagnosticsPayload.ThreadInfo {
            var id: Int?, name: String?, crashed: Bool?, isMain: Bool?, frames: [DiagnosticsPayload.Frame]?, state: String?
            try members(Self.threadKeys) { r, i in
                switch i {
                case 0: id = try r.int()
                case 1: name = try r.string()
                case 2: crashed = try r.bool()
                case 3: isMain = try r.bool()
                case 4: frames = try r.list { try $0.frame() }
                default: state = try r.optional { try $0.string() }
                }
            }
            guard let id, let name, let crashed, let isMain, let frames else { throw GiveUp() }
            return DiagnosticsPayload.ThreadInfo(id: id, name: name, crashed: crashed, is_main: isMain, frames: frames, state: state)
        }

        static let frameKeys: [StaticString] = ["index", "address", "module", "module_offset", "build_id", "function", "file", "line",
                                                "column", "inlined", "async"]

        mutating func frame() throws -> DiagnosticsPayload.Frame {
            var texts = [String?](repeating: nil, count: 7)
            var index: Int?, line: Int?, column: Int?, inlined: Bool?, async: Bool?
            try members(Self.frameKeys) { r, i in
                switch i {
                case 0: index = try r.int()
                case 1: texts[1] = try r.string()
                case 7: line = try r.optional { try $0.int() }
                case 8: column = try r.optional { try $0.int() }
                case 9: inlined = try r.bool()
                case 10: async = try r.optional { try $0.bool() }
                default: texts[i] = try r.optional { try $0.string() }
                }
            }
            guard let index, let address = texts[1], let inlined else { throw GiveUp() }
            return DiagnosticsPayload.Frame(index: index, address: address, module: texts[2], module_offset: texts[3], build_id: texts[4],
                                            function: texts[5], file: texts[6], line: line, column: column, inlined: inlined, async: async)
        }

        static let imageKeys: [StaticString] = ["path", "build_id", "start", "end", "bias"]

        mutating func image() throws -> DiagnosticsPayload.Image {
            var texts = [String?](repeating: nil, count: 5)
            try members(Self.imageKeys) { r, i in
                texts[i] = try r.string()
            }
            guard let path = texts[0], let buildID = texts[1], let start = texts[2], let end = texts[3], let bias = texts[4] else { throw GiveUp() }
            return DiagnosticsPayload.Image(path: path, build_id: buildID, start: start, end: end, bias: bias)
        }

        static let signalKeys: [StaticString] = ["number", "name", "code", "code_name", "fault_address"]

        mutating func signal() throws -> DiagnosticsPayload.SignalInfo {
            var texts = [String?](repeating: nil, count: 5)
            var number: Int?, code: Int?
            try members(Self.signalKeys) { r, i in
                switch i {
                case 0: number = try r.int()
                case 2: code = try r.int()
                default: texts[i] = try r.string()
                }
            }
            guard let number, let name = texts[1], let code, let codeName = texts[3], let fault = texts[4] else { throw GiveUp() }
            return DiagnosticsPayload.SignalInfo(number: number, name: name, code: code, code_name: codeName, fault_address: fault)
        }

        static let errorKeys: [StaticString] = ["domain", "code", "message", "user_info", "underlying"]

        mutating func error() throws -> DiagnosticsPayload.ErrorInfo {
            var domain: String?, code: Int?, message: String?, userInfo: JSONValue?, underlying: [JSONValue]?
            try members(Self.errorKeys) { r, i in
                switch i {
                case 0: domain = try r.string()
                case 1: code = try r.int()
                case 2: message = try r.optional { try $0.string() }
                // decodeIfPresent(JSONValue.self): a null is absent, so the default.
                case 3: userInfo = try r.optional { try $0.value() }
                default: underlying = try r.optional { try $0.list { try $0.value() } }
                }
            }
            guard let domain, let code else { throw GiveUp() }
            return DiagnosticsPayload.ErrorInfo(domain: domain, code: code, message: message ?? "", user_info: userInfo ?? .object([:]),
                                                underlying: underlying ?? [])
        }

        static let terminationKeys: [StaticString] = ["kind", "memory"]

        mutating func termination() throws -> DiagnosticsPayload.TerminationInfo {
            var kind: String?, memory: DiagnosticsPayload.MemoryInfo?
            try members(Self.terminationKeys) { r, i in
                if i == 0 { kind = try r.string() } else { memory = try r.optional { try $0.memory() } }
            }
            guard let kind else { throw GiveUp() }
            return DiagnosticsPayload.TerminationInfo(kind: kind, memory: memory)
        }

        static let memoryKeys: [StaticString] = ["cgroup", "limit_bytes", "samples"]

        mutating func memory() throws -> DiagnosticsPayload.MemoryInfo {
            var cgroup: String?, limit: Int?, samples: [DiagnosticsPayload.MemoryInfo.Sample]?
            try members(Self.memoryKeys) { r, i in
                switch i {
                case 0: cgroup = try r.optional { try $0.string() }
                case 1: limit = try r.optional { try $0.int() }
                default: samples = try r.list { try $0.sample() }
                }
            }
            guard let samples else { throw GiveUp() }
            return DiagnosticsPayload.MemoryInfo(cgroup: cgroup, limit_bytes: limit, samples: samples)
        }

        static let sampleKeys: [StaticString] = ["timestamp", "rss_bytes", "cgroup_bytes"]

        mutating func sample() throws -> DiagnosticsPayload.MemoryInfo.Sample {
            var timestamp: String?, rss: Int?, cgroup: Int?
            try members(Self.sampleKeys) { r, i in
                switch i {
                case 0: timestamp = try r.string()
                case 1: rss = try r.optional { try $0.int() }
                default: cgroup = try r.optional { try $0.int() }
                }
            }
            guard let timestamp else { throw GiveUp() }
            return DiagnosticsPayload.MemoryInfo.Sample(timestamp: timestamp, rss_bytes: rss, cgroup_bytes: cgroup)
        }

        static let requestKeys: [StaticString] = ["method", "route", "request_id", "trace_id", "thread_id", "age_ms", "crashed_thread"]

        mutating func request() throws -> DiagnosticsPayload.InFlightRequest {
            var texts = [String?](repeating: nil, count: 4)
            var thread: Int?, age: Int?, crashed: Bool?
            try members(Self.requestKeys) { r, i in
                switch i {
                case 0, 1: texts[i] = try r.string()
                case 2, 3: texts[i] = try r.optional { try $0.string() }
                case 4: thread = try r.int()
                case 5: age = try r.int()
                default: crashed = try r.bool()
                }
            }
            guard let method = texts[0], let route = texts[1], let thread, let age, let crashed else { throw GiveUp() }
            return DiagnosticsPayload.InFlightRequest(method: method, route: route, request_id: texts[2], trace_id: texts[3],
                                                      thread_id: thread, age_ms: age, crashed_thread: crashed)
        }

        static let screenshotKeys: [StaticString] = ["id", "timestamp", "screen_name", "file_size_bytes"]

        mutating func screenshot() throws -> DiagnosticsPayload.ScreenshotRef {
            var texts = [String?](repeating: nil, count: 3)
            var size: Int?
            try members(Self.screenshotKeys) { r, i in
                if i == 3 { size = try r.int() } else { texts[i] = try r.string() }
            }
            guard let id = texts[0], let timestamp = texts[1], let screen = texts[2], let size else { throw GiveUp() }
            return DiagnosticsPayload.ScreenshotRef(id: id, timestamp: timestamp, screen_name: screen, file_size_bytes: size)
        }

        static let reporterKeys: [StaticString] = ["name", "version", "dropped_reports"]

        mutating func reporter() throws -> DiagnosticsPayload.Reporter {
            var name: String?, version: String?, dropped: Int?
            try members(Self.reporterKeys) { r, i in
                switch i {
                case 0: name = try r.string()
                case 1: version = try r.string()
                default: dropped = try r.int()
                }
            }
            guard let name, let version, let dropped else { throw GiveUp() }
            return DiagnosticsPayload.Reporter(name: name, version: version, dropped_reports: dropped)
        }
    }
}
