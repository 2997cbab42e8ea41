// Seed 000's DiagnosticsPayload, with its wire names (snake_case properties on purpose: the
// payload is a contract, and the names are the contract's). Linux extensions are listed in
// Schemas/diagnostics-payload.schema.json and marked "extension" below; seed readers ignore them.
import Foundation

/// Any JSON value: custom_data, log metadata, error userInfo (CrashReporting's ErrorPayloadValue).
public indirect enum JSONValue: Sendable, Hashable, Codable,
    ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Int.self) { self = .int(value) }
        else if let value = try? container.decode(Double.self) { self = .double(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([JSONValue].self) { self = .array(value) }
        else { self = .object(try container.decode([String: JSONValue].self)) }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// Parses JSON text (any top-level value); nil when it is not JSON.
    public init?(json: String) {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(json.utf8)) else { return nil }
        self = value
    }

    /// The same value with every string passed through `transform` (keys are kept).
    public func mapStrings(_ transform: (String) -> String) -> JSONValue {
        switch self {
        case .string(let value): return .string(transform(value))
        case .array(let values): return .array(values.map { $0.mapStrings(transform) })
        case .object(let values): return .object(values.mapValues { $0.mapStrings(transform) })
        default: return self
        }
    }
}

public struct AppMetadata: Codable, Sendable, Equatable {
    public var app_name: String
    public var app_version: String
    public var build_number: String
    public var bundle_id: String
    public var environment: String

    public init(app_name: String, app_version: String, build_number: String, bundle_id: String, environment: String) {
        self.app_name = app_name
        self.app_version = app_version
        self.build_number = build_number
        self.bundle_id = bundle_id
        self.environment = environment
    }
}

/// Seed 000's device_metadata, read from a Linux host (the mapping is in CrashReporting/Metadata.swift).
public struct HostMetadata: Codable, Sendable, Equatable {
    public var device_model: String
    public var device_identifier: String
    public var ios_version: String
    public var locale: String
    public var timezone: String
    public var is_simulator: Bool
    public var available_storage_mb: Int
    public var total_memory_mb: Int
    public var battery_level: Double?
    public var battery_state: String?
    public var cpu_model: String
    public var cpu_count: Int
    public var hostname_hash: String
    /// "none", a hypervisor name ("kvm", "vmware", …) or "container".
    public var virtualization: String

    public init(device_model: String, device_identifier: String, ios_version: String, locale: String, timezone: String,
                is_simulator: Bool, available_storage_mb: Int, total_memory_mb: Int, battery_level: Double? = nil,
                battery_state: String? = nil, cpu_model: String = "", cpu_count: Int = 0, hostname_hash: String = "",
                virtualization: String = "none") {
        self.device_model = device_model
        self.device_identifier = device_identifier
        self.ios_version = ios_version
        self.locale = locale
        self.timezone = timezone
        self.is_simulator = is_simulator
        self.available_storage_mb = available_storage_mb
        self.total_memory_mb = total_memory_mb
        self.battery_level = battery_level
        self.battery_state = battery_state
        self.cpu_model = cpu_model
        self.cpu_count = cpu_count
        self.hostname_hash = hostname_hash
        self.virtualization = virtualization
    }

    /// Seed 000's fields are required; the Linux extensions may be missing (an iOS sender).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        device_model = try c.decode(String.self, forKey: .device_model)
        device_identifier = try c.decode(String.self, forKey: .device_identifier)
        ios_version = try c.decode(String.self, forKey: .ios_version)
        locale = try c.decode(String.self, forKey: .locale)
        timezone = try c.decode(String.self, forKey: .timezone)
        is_simulator = try c.decode(Bool.self, forKey: .is_simulator)
        available_storage_mb = try c.decode(Int.self, forKey: .available_storage_mb)
        total_memory_mb = try c.decode(Int.self, forKey: .total_memory_mb)
        battery_level = try c.decodeIfPresent(Double.self, forKey: .battery_level)
        battery_state = try c.decodeIfPresent(String.self, forKey: .battery_state)
        cpu_model = try c.decodeIfPresent(String.self, forKey: .cpu_model) ?? ""
        cpu_count = try c.decodeIfPresent(Int.self, forKey: .cpu_count) ?? 0
        hostname_hash = try c.decodeIfPresent(String.self, forKey: .hostname_hash) ?? ""
        virtualization = try c.decodeIfPresent(String.self, forKey: .virtualization) ?? "none"
    }
}

/// Seed 000's NetworkErrorDigest.
public struct NetworkErrorDigest: Codable, Sendable, Equatable {
    public var timestamp: String
    public var request_url: String
    public var request_method: String
    public var status_code: Int?
    /// timeout, network_unreachable, ssl_error, dns_failure, server_error, client_error, unknown.
    public var error_type: String
    public var error_message: String
    public var request_duration_ms: Int
    public var retry_count: Int

    public init(timestamp: String, request_url: String, request_method: String, status_code: Int?, error_type: String,
                error_message: String, request_duration_ms: Int, retry_count: Int) {
        self.timestamp = timestamp
        self.request_url = request_url
        self.request_method = request_method
        self.status_code = status_code
        self.error_type = error_type
        self.error_message = error_message
        self.request_duration_ms = request_duration_ms
        self.retry_count = retry_count
    }

    // status_code is written as null when absent: the seed types it `number | null`, not optional.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(timestamp, forKey: .timestamp)
        try container.encode(request_url, forKey: .request_url)
        try container.encode(request_method, forKey: .request_method)
        try container.encode(status_code, forKey: .status_code)
        try container.encode(error_type, forKey: .error_type)
        try container.encode(error_message, forKey: .error_message)
        try container.encode(request_duration_ms, forKey: .request_duration_ms)
        try container.encode(retry_count, forKey: .retry_count)
    }
}

public struct DiagnosticsPayload: Codable, Sendable, Equatable {
    public struct LogEntry: Codable, Sendable, Equatable {
        public var timestamp: String
        /// debug, info, warning, error, fatal.
        public var level: String
        public var tag: String
        public var message: String
        public var metadata: [String: JSONValue]?

        public init(timestamp: String, level: String, tag: String, message: String, metadata: [String: JSONValue]? = nil) {
            self.timestamp = timestamp
            self.level = level
            self.tag = tag
            self.message = message
            self.metadata = metadata
        }
    }

    /// One stack frame (extension: the seed's stack_trace is text only; servers need the parts).
    public struct Frame: Codable, Sendable, Equatable {
        public var index: Int
        public var address: String
        public var module: String?
        public var module_offset: String?
        public var build_id: String?
        public var function: String?
        public var file: String?
        public var line: Int?
        public var column: Int?
        public var inlined: Bool
        /// Linux extension: a Swift async caller, after the synchronous frames (absent otherwise).
        public var async: Bool?

        public init(index: Int, address: String, module: String?, module_offset: String?, build_id: String?,
                    function: String?, file: String?, line: Int?, column: Int?, inlined: Bool, async: Bool? = nil) {
            self.index = index
            self.address = address
            self.module = module
            self.module_offset = module_offset
            self.build_id = build_id
            self.function = function
            self.file = file
            self.line = line
            self.column = column
            self.inlined = inlined
            self.async = async
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(index, forKey: .index)
            try container.encode(address, forKey: .address)
            try container.encode(module, forKey: .module)
            try container.encode(module_offset, forKey: .module_offset)
            try container.encode(build_id, forKey: .build_id)
            try container.encode(function, forKey: .function)
            try container.encode(file, forKey: .file)
            try container.encode(line, forKey: .line)
            try container.encode(column, forKey: .column)
            try container.encode(inlined, forKey: .inlined)
            try container.encodeIfPresent(async, forKey: .async)   // only on async callers
        }

        /// The frame as a stack_trace line: "#3 CrashFixture level3() (Sources/CrashFixture/main.swift:42:7)",
        /// or the raw address and module offset when the frame has no symbol.
        public var stackTraceLine: String {
            var text = "#\(index) \(module ?? "?") "
            if let function {
                text += (inlined ? "[inlined] " : "") + function
            } else {
                text += address + (module_offset.map { " (\(module ?? "?") + \($0))" } ?? "")
            }
            if let file {
                text += " (\(file)" + (line.map { ":\($0)" } ?? "") + (column.map { ":\($0)" } ?? "") + ")"
            }
            return text
        }
    }

    public struct ThreadInfo: Codable, Sendable, Equatable {
        public var id: Int
        public var name: String
        public var crashed: Bool
        public var is_main: Bool
        public var frames: [Frame]
        /// Extension: another thread's answer at the crash ("answered", "no_answer",
        /// "blocked_signal", "exited", "crash_reporter", "not_asked"); absent for the crashed thread.
        public var state: String?

        public init(id: Int, name: String, crashed: Bool, is_main: Bool, frames: [Frame], state: String? = nil) {
            self.id = id
            self.name = name
            self.crashed = crashed
            self.is_main = is_main
            self.frames = frames
            self.state = state
        }
    }

    /// A loaded module with its GNU build-id (extension): what a server needs to symbolicate a raw report.
    public struct Image: Codable, Sendable, Equatable {
        public var path: String
        public var build_id: String
        public var start: String
        public var end: String
        public var bias: String

        public init(path: String, build_id: String, start: String, end: String, bias: String) {
            self.path = path
            self.build_id = build_id
            self.start = start
            self.end = end
            self.bias = bias
        }
    }

    public struct SignalInfo: Codable, Sendable, Equatable {
        public var number: Int
        public var name: String
        public var code: Int
        public var code_name: String
        public var fault_address: String

        public init(number: Int, name: String, code: Int, code_name: String, fault_address: String) {
            self.number = number
            self.name = name
            self.code = code
            self.code_name = code_name
            self.fault_address = fault_address
        }
    }

    public struct ErrorInfo: Codable, Sendable, Equatable {
        public var domain: String
        public var code: Int
        public var message: String
        public var user_info: JSONValue
        public var underlying: [JSONValue]

        public init(domain: String, code: Int, message: String, user_info: JSONValue, underlying: [JSONValue]) {
            self.domain = domain
            self.code = code
            self.message = message
            self.user_info = user_info
            self.underlying = underlying
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            domain = try c.decode(String.self, forKey: .domain)
            code = try c.decode(Int.self, forKey: .code)
            message = try c.decodeIfPresent(String.self, forKey: .message) ?? ""
            user_info = try c.decodeIfPresent(JSONValue.self, forKey: .user_info) ?? .object([:])
            underlying = try c.decodeIfPresent([JSONValue].self, forKey: .underlying) ?? []
        }
    }

    public struct TerminationInfo: Codable, Sendable, Equatable {
        /// abnormal, oom_kill or crash_without_record.
        public var kind: String
        /// Memory before the end, when the process sampled it.
        public var memory: MemoryInfo?
        public init(kind: String, memory: MemoryInfo? = nil) {
            self.kind = kind
            self.memory = memory
        }
    }

    /// Extension: the process's memory before it ended (RSS, its memory cgroup's usage and limit).
    public struct MemoryInfo: Codable, Sendable, Equatable {
        public struct Sample: Codable, Sendable, Equatable {
            public var timestamp: String
            public var rss_bytes: Int?
            public var cgroup_bytes: Int?
            public init(timestamp: String, rss_bytes: Int?, cgroup_bytes: Int?) {
                self.timestamp = timestamp
                self.rss_bytes = rss_bytes
                self.cgroup_bytes = cgroup_bytes
            }
        }
        public var cgroup: String?
        public var limit_bytes: Int?
        public var samples: [Sample]
        public init(cgroup: String?, limit_bytes: Int?, samples: [Sample]) {
            self.cgroup = cgroup
            self.limit_bytes = limit_bytes
            self.samples = samples
        }
    }

    /// Extension: a request a server was serving at the crash (`CrashReporter.beginRequest`).
    public struct InFlightRequest: Codable, Sendable, Equatable {
        public var method: String
        public var route: String
        public var request_id: String?
        public var trace_id: String?
        public var thread_id: Int
        public var age_ms: Int
        /// It started on the thread that crashed.
        public var crashed_thread: Bool

        public init(method: String, route: String, request_id: String?, trace_id: String?, thread_id: Int, age_ms: Int, crashed_thread: Bool) {
            self.method = method
            self.route = route
            self.request_id = request_id
            self.trace_id = trace_id
            self.thread_id = thread_id
            self.age_ms = age_ms
            self.crashed_thread = crashed_thread
        }
    }

    /// Seed 000's CrashReport, for crashes and (extension `kind`) non-fatal errors, abnormal
    /// terminations and diagnostics snapshots.
    public struct CrashReportEntry: Codable, Sendable, Equatable {
        public var timestamp: String
        public var exception_type: String
        public var exception_message: String
        public var stack_trace: [String]
        public var thread_info: [ThreadInfo]
        // Extensions.
        public var report_id: String
        /// crash, non_fatal, abnormal_termination, diagnostics.
        public var kind: String
        public var symbolicated: Bool
        public var is_partial: Bool
        public var images: [Image]
        public var signal: SignalInfo?
        public var error: ErrorInfo?
        public var termination: TerminationInfo?
        /// Requests in flight at the crash (servers); absent when none were recorded.
        public var requests_in_flight: [InFlightRequest]?

        public init(timestamp: String, exception_type: String, exception_message: String, stack_trace: [String],
                    thread_info: [ThreadInfo], report_id: String, kind: String, symbolicated: Bool, is_partial: Bool,
                    images: [Image], signal: SignalInfo? = nil, error: ErrorInfo? = nil, termination: TerminationInfo? = nil,
                    requests_in_flight: [InFlightRequest]? = nil) {
            self.requests_in_flight = requests_in_flight
            self.timestamp = timestamp
            self.exception_type = exception_type
            self.exception_message = exception_message
            self.stack_trace = stack_trace
            self.thread_info = thread_info
            self.report_id = report_id
            self.kind = kind
            self.symbolicated = symbolicated
            self.is_partial = is_partial
            self.images = images
            self.signal = signal
            self.error = error
            self.termination = termination
        }

        /// Seed 000's fields are required (thread_info may be missing); the extensions default.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            timestamp = try c.decode(String.self, forKey: .timestamp)
            exception_type = try c.decode(String.self, forKey: .exception_type)
            exception_message = try c.decode(String.self, forKey: .exception_message)
            stack_trace = try c.decode([String].self, forKey: .stack_trace)
            thread_info = try c.decodeIfPresent([ThreadInfo].self, forKey: .thread_info) ?? []
            report_id = try c.decodeIfPresent(String.self, forKey: .report_id) ?? ""
            kind = try c.decodeIfPresent(String.self, forKey: .kind) ?? "crash"
            symbolicated = try c.decodeIfPresent(Bool.self, forKey: .symbolicated) ?? true
            is_partial = try c.decodeIfPresent(Bool.self, forKey: .is_partial) ?? false
            images = try c.decodeIfPresent([Image].self, forKey: .images) ?? []
            signal = try c.decodeIfPresent(SignalInfo.self, forKey: .signal)
            error = try c.decodeIfPresent(ErrorInfo.self, forKey: .error)
            termination = try c.decodeIfPresent(TerminationInfo.self, forKey: .termination)
            requests_in_flight = try c.decodeIfPresent([InFlightRequest].self, forKey: .requests_in_flight)
        }
    }

    public struct ScreenshotRef: Codable, Sendable, Equatable {
        public var id: String
        public var timestamp: String
        public var screen_name: String
        public var file_size_bytes: Int

        public init(id: String, timestamp: String, screen_name: String, file_size_bytes: Int) {
            self.id = id
            self.timestamp = timestamp
            self.screen_name = screen_name
            self.file_size_bytes = file_size_bytes
        }
    }

    /// Extension: who sent the payload and what the sender had to drop.
    public struct Reporter: Codable, Sendable, Equatable {
        public var name: String
        public var version: String
        /// Reports dropped on this host because the store was full (seed 000 keeps the most recent).
        public var dropped_reports: Int

        public init(name: String, version: String, dropped_reports: Int) {
            self.name = name
            self.version = version
            self.dropped_reports = dropped_reports
        }
    }

    public var test_run_id: String
    public var app_metadata: AppMetadata
    public var device_metadata: HostMetadata
    public var timestamp_collected: String
    public var logs: [LogEntry]
    public var network_errors: [NetworkErrorDigest]
    public var crash_reports: [CrashReportEntry]
    public var screenshots: [ScreenshotRef]
    public var custom_data: [String: JSONValue]
    // Extensions.
    public var user_id: String?
    public var custom_keys: [String: JSONValue]
    public var reporter: Reporter?

    public init(test_run_id: String, app_metadata: AppMetadata, device_metadata: HostMetadata, timestamp_collected: String,
                logs: [LogEntry] = [], network_errors: [NetworkErrorDigest] = [], crash_reports: [CrashReportEntry] = [],
                screenshots: [ScreenshotRef] = [], custom_data: [String: JSONValue] = [:], user_id: String? = nil,
                custom_keys: [String: JSONValue] = [:], reporter: Reporter? = nil) {
        self.test_run_id = test_run_id
        self.app_metadata = app_metadata
        self.device_metadata = device_metadata
        self.timestamp_collected = timestamp_collected
        self.logs = logs
        self.network_errors = network_errors
        self.crash_reports = crash_reports
        self.screenshots = screenshots
        self.custom_data = custom_data
        self.user_id = user_id
        self.custom_keys = custom_keys
        self.reporter = reporter
    }

    /// Seed 000's required fields are required; its optional ones and the extensions default,
    /// so a payload from any seed 000 sender (the seed's own example among them) decodes.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        test_run_id = try c.decode(String.self, forKey: .test_run_id)
        app_metadata = try c.decode(AppMetadata.self, forKey: .app_metadata)
        device_metadata = try c.decode(HostMetadata.self, forKey: .device_metadata)
        timestamp_collected = try c.decode(String.self, forKey: .timestamp_collected)
        logs = try c.decodeIfPresent([LogEntry].self, forKey: .logs) ?? []
        network_errors = try c.decodeIfPresent([NetworkErrorDigest].self, forKey: .network_errors) ?? []
        crash_reports = try c.decodeIfPresent([CrashReportEntry].self, forKey: .crash_reports) ?? []
        screenshots = try c.decodeIfPresent([ScreenshotRef].self, forKey: .screenshots) ?? []
        custom_data = try c.decodeIfPresent([String: JSONValue].self, forKey: .custom_data) ?? [:]
        user_id = try c.decodeIfPresent(String.self, forKey: .user_id)
        custom_keys = try c.decodeIfPresent([String: JSONValue].self, forKey: .custom_keys) ?? [:]
        reporter = try c.decodeIfPresent(Reporter.self, forKey: .reporter)
    }

    /// Seed 000's size limits.
    public enum Limits {
        public static let logEntries = 500
        public static let logMessageCharacters = 1000
        public static let networkErrors = 100
        public static let crashReports = 5
        public static let stackFrames = 50
        public static let screenshots = 20
        public static let customDataBytes = 100 * 1024
        public static let compressedBytes = 5 * 1024 * 1024
    }

    /// The JSON that goes on the wire (sorted keys: the same payload always encodes the same).
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}
