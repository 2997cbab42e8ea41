// From an upload body to a DiagnosticsPayload: seed 000's required fields checked with readable
// messages (400 details), then the collector's own defaults (`normalise`), then the model's
// Decodable, which fills seed 000's optional fields and the Linux extensions.
import CrashReportModel
import Foundation

struct ValidationFailure: Error, Equatable {
    var message: String
    var details: [String]
    /// The upload limit passed, by its short name ("logs", "custom_data", "depth"); nil for
    /// other problems.
    var limit: String? = nil
}

enum PayloadDecoding {
    /// Parses, validates, normalises and decodes; throws ValidationFailure.
    ///
    /// A well-formed payload (every upload the runtime sends) is decoded once, straight into the
    /// model, and normalised there (`direct`). Anything else takes the way through a JSONValue
    /// tree (`checked`), which names every problem; that tree costs several times the decode
    /// itself (each JSONValue tries its types in turn), so it is kept for the uploads that need it.
    static func decode(_ body: [UInt8]) throws -> DiagnosticsPayload { try decoded(body).payload }

    /// The payload, and whether it is the body as sent: decoded directly with no field filled in,
    /// so that copies cut from the body's bytes decode to it (`StoredAsSent`).
    struct Decoded {
        var payload: DiagnosticsPayload
        var asSent: Bool
    }

    static func decoded(_ body: [UInt8]) throws -> Decoded {
        if let (payload, filled) = direct(body) { return Decoded(payload: payload, asSent: !filled) }
        return Decoded(payload: try checked(body), asSent: false)
    }

    /// The payload decoded straight from the body, normalised as `normalise` does; nil when
    /// `checked` could answer otherwise: a required field missing, null or of another type (the
    /// model's decoding throws), an empty test_run_id, timestamp_collected or environment, a whole number sent
    /// with a fraction, a crash report without stack_trace. `filled`: a report's id or
    /// `symbolicated` was filled in.
    /// The body is read by FastPayloadReader first (the runtime's payloads, ~6x cheaper), and by
    /// JSONDecoder when that gives up (`useFastReader` false: JSONDecoder alone, for tests).
    static func direct(_ body: [UInt8], useFastReader: Bool = true) -> (payload: DiagnosticsPayload, filled: Bool)? {
        var payload: DiagnosticsPayload
        let reports: [(hasReportID: Bool, hasSymbolicated: Bool)]
        if useFastReader, let fast = FastPayloadReader.read(body) {
            (payload, reports) = fast
        } else {
            guard let decoded = try? JSONDecoder().decode(Normalising.self, from: Data(body)) else { return nil }
            payload = decoded.payload
            reports = decoded.reports.map { (hasReportID: $0.hasReportID, hasSymbolicated: $0.hasSymbolicated) }
        }
        guard !nonEmptyStrings.contains(where: { $0.value(payload).isEmpty }),
              reports.count == payload.crash_reports.count else { return nil }
        var filled = false
        for (index, presence) in reports.enumerated() {
            filled = filled || !presence.hasReportID || !presence.hasSymbolicated
            if !presence.hasReportID { payload.crash_reports[index].report_id = "report-\(index)" }
            if !presence.hasSymbolicated {
                payload.crash_reports[index].symbolicated = payload.crash_reports[index].thread_info.contains {
                    $0.frames.contains { $0.function != nil }
                }
            }
        }
        return (payload, filled)
    }

    /// The strings the payload schema does not let be empty, as the direct decode reads them; an
    /// empty one goes the checked way, which names it. PayloadContractTests checks this list
    /// against the schema's.
    static let nonEmptyStrings: [(name: String, value: @Sendable (DiagnosticsPayload) -> String)] = [
        ("test_run_id", { $0.test_run_id }), ("timestamp_collected", { $0.timestamp_collected }),
        ("app_metadata.environment", { $0.app_metadata.environment }),
    ]

    /// The model, and per crash report whether the fields `normalise` fills were sent (present
    /// and not null): the model's own defaults for them differ from the collector's.
    struct Normalising: Decodable {
        var payload: DiagnosticsPayload
        var reports: [ReportPresence]

        enum Keys: String, CodingKey { case crash_reports }

        struct ReportPresence: Decodable {
            var hasReportID: Bool
            var hasSymbolicated: Bool

            enum Keys: String, CodingKey { case report_id, symbolicated }

            init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: Keys.self)
                hasReportID = try c.contains(.report_id) && !c.decodeNil(forKey: .report_id)
                hasSymbolicated = try c.contains(.symbolicated) && !c.decodeNil(forKey: .symbolicated)
            }
        }

        init(from decoder: any Decoder) throws {
            payload = try DiagnosticsPayload(from: decoder)
            let c = try decoder.container(keyedBy: Keys.self)
            reports = try c.decodeIfPresent([ReportPresence].self, forKey: .crash_reports) ?? []
        }
    }

    /// Every required field checked with a readable message, the collector's defaults applied to
    /// the JSON, then the model decoded from it.
    static func checked(_ body: [UInt8]) throws -> DiagnosticsPayload {
        let root: JSONValue
        do {
            root = try JSONDecoder().decode(JSONValue.self, from: Data(body))
        } catch {
            throw ValidationFailure(message: "Body is not valid JSON", details: ["invalid JSON: \(describe(error))"])
        }
        guard case .object(var object) = root else {
            throw ValidationFailure(message: "Body must be a JSON object", details: ["(root) must be an object"])
        }
        var missing: [String] = []
        var details: [String] = []
        // Seed 000's required fields and kinds, as the payload schema gives them (PayloadContract).
        check(object, path: "", required: PayloadContract.root, missing: &missing, details: &details)
        if case .object(let app)? = object["app_metadata"] {
            check(app, path: "app_metadata.", required: PayloadContract.appMetadata, missing: &missing, details: &details)
        }
        if case .object(let device)? = object["device_metadata"] {
            check(device, path: "device_metadata.", required: PayloadContract.deviceMetadata, missing: &missing, details: &details)
        }
        for (name, kind) in PayloadContract.containers {
            if let value = object[name], value != .null, !kind.matches(value) {
                details.append("\(name) must be \(kind.name)")
            }
        }
        if !details.isEmpty || !missing.isEmpty {
            // Seed 000's example: "Missing required field: test_run_id" / "test_run_id is required".
            let message = missing.first.map { "Missing required field: \($0)" } ?? details[0]
            throw ValidationFailure(message: message, details: missing.map { "\($0) is required" } + details)
        }

        normalise(&object)
        do {
            let data = try JSONEncoder().encode(JSONValue.object(object))
            return try JSONDecoder().decode(DiagnosticsPayload.self, from: data)
        } catch let error as DecodingError {
            let detail = describe(error)
            throw ValidationFailure(message: "Invalid field: \(detail)", details: [detail])
        }
    }

    enum Kind {
        case string, nonEmptyString, bool, number, object, array

        var name: String {
            switch self {
            case .string: return "a string"
            case .nonEmptyString: return "a non-empty string"
            case .bool: return "a boolean"
            case .number: return "an integer"
            case .object: return "an object"
            case .array: return "an array"
            }
        }

        func matches(_ value: JSONValue) -> Bool {
            switch (self, value) {
            case (.string, .string): return true
            case (.nonEmptyString, .string(let text)): return !text.isEmpty
            case (.bool, .bool), (.number, .int), (.object, .object), (.array, .array): return true
            // A whole number an Int holds: 1e20 (or 100000000000000000000, which JSON parsing
            // makes a Double) is out of range, not a number of megabytes.
            case (.number, .double(let number)): return Int(exactly: number) != nil
            default: return false
            }
        }
    }

    private static func check(_ object: [String: JSONValue], path: String, required: PayloadContract.Fields,
                              missing: inout [String], details: inout [String]) {
        for (name, kind) in required {
            guard let value = object[name], value != .null else {
                missing.append(path + name)
                continue
            }
            if !kind.matches(value) { details.append("\(path)\(name) must be \(kind.name)") }
        }
    }

    /// The collector's own rules for what a sender left out. The model's Decodable already gives
    /// seed 000's optional fields and the Linux extensions their empty values; these differ from
    /// those on purpose: a report without an id gets one by position, one without `symbolicated`
    /// is taken as symbolicated when some frame has a function name (an iOS sender symbolicates on
    /// the device, or not at all), a missing stack_trace is empty, and whole numbers sent as
    /// floats (124.0, a JavaScript sender) are integers.
    static func normalise(_ payload: inout [String: JSONValue]) {
        if case .object(var device)? = payload["device_metadata"] {
            // A number past Int's range stays a Double, which the model's decoding then refuses
            // (400): Int(_:) would trap and take the server down.
            for name in ["available_storage_mb", "total_memory_mb", "cpu_count"] {
                if case .double(let number)? = device[name], let whole = Int(exactly: number.rounded(.towardZero)) {
                    device[name] = .int(whole)
                }
            }
            payload["device_metadata"] = .object(device)
        }
        if case .array(let reports)? = payload["crash_reports"] {
            payload["crash_reports"] = .array(reports.enumerated().map { index, report in normaliseReport(report, index: index) })
        }
    }

    private static func normaliseReport(_ value: JSONValue, index: Int) -> JSONValue {
        guard case .object(var report) = value else { return value }
        if isAbsent(report["report_id"]) {
            report["report_id"] = .string("report-\(index)")
        }
        if isAbsent(report["stack_trace"]) { report["stack_trace"] = .array([]) }
        if isAbsent(report["symbolicated"]) {
            var named = false
            if case .array(let threads)? = report["thread_info"] {
                for case .object(let thread) in threads {
                    if case .array(let frames)? = thread["frames"] {
                        for case .object(let frame) in frames { if case .string? = frame["function"] { named = true } }
                    }
                }
            }
            report["symbolicated"] = .bool(named)
        }
        return .object(report)
    }

    private static func isAbsent(_ value: JSONValue?) -> Bool { value == nil || value == .null }

    /// "crash_reports/0/thread_info/0/frames/3/index: missing", the form fake_collector.py uses.
    static func describe(_ error: any Error) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.isEmpty ? "(root)" : keys.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: "/")
        }
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])): is required"
        case DecodingError.typeMismatch(let type, let context):
            return "\(path(context.codingPath)): expected \(type)"
        case DecodingError.valueNotFound(let type, let context):
            return "\(path(context.codingPath)): expected \(type), found null"
        case DecodingError.dataCorrupted(let context):
            return "\(path(context.codingPath)): \(context.debugDescription)"
        default:
            return String(describing: error)
        }
    }
}
