// Delivery to Sentry (or a Sentry-compatible server such as Bugsink): one event per envelope,
// `platform: native`, the crashed thread's frames (and every other thread's, as `threads`) with their ELF images (code_id = GNU build-id,
// debug_id = its first 16 bytes as a little-endian GUID) so the server can symbolicate what this
// host could not, breadcrumbs, user, tags from custom keys, contexts, and the project's crash
// signature as fingerprint. The record id is the event id, so a repeated delivery is the same event.
import CrashReportModel
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc

public struct SentryTransport: DiagnosticsTransport {
    /// `https://<public key>@<host>[:port][/path]/<project id>`.
    public struct DSN: Sendable, Equatable {
        public var publicKey: String
        public var projectID: String
        /// Scheme, host, port and path prefix, without the key and project.
        public var base: URL

        public init?(_ text: String) {
            guard let components = URLComponents(string: text), let scheme = components.scheme, let host = components.host,
                  let key = components.user, !key.isEmpty else { return nil }
            var path = components.path.split(separator: "/").map(String.init)
            guard let project = path.popLast(), !project.isEmpty else { return nil }
            var base = URLComponents()
            base.scheme = scheme
            base.host = host
            base.port = components.port
            base.path = path.isEmpty ? "" : "/" + path.joined(separator: "/")
            guard let url = base.url else { return nil }
            publicKey = key
            projectID = project
            self.base = url
        }

        public var envelopeURL: URL { base.appendingPathComponent("api/\(projectID)/envelope/") }
    }

    public var dsn: DSN
    public var timeout: Duration
    /// What the request goes out with (URLSession by default).
    public var client: any HTTPClient = URLSessionHTTPClient()
    public var name: String { "sentry \(dsn.base.absoluteString) project \(dsn.projectID)" }

    public init(dsn: DSN, timeout: Duration = .seconds(15)) {
        self.dsn = dsn
        self.timeout = timeout
    }

    /// nil when `dsn` is not a DSN.
    public init?(dsn text: String, timeout: Duration = .seconds(15)) {
        guard let dsn = DSN(text) else { return nil }
        self.init(dsn: dsn, timeout: timeout)
    }

    public func deliver(_ upload: DiagnosticsUpload) -> DeliveryOutcome {
        let eventID = Self.eventID(upload.idempotencyKey)
        let event = SentryEvent.make(from: upload.payload, eventID: eventID)
        guard let envelope = try? Self.envelope(event: event, eventID: eventID, dsn: dsn), let body = try? Gzip.compress(envelope) else {
            return .rejected(status: 0, message: "the event could not be encoded")
        }
        var request = URLRequest(url: dsn.envelopeURL)
        request.httpMethod = "POST"
        request.setValue("application/x-sentry-envelope", forHTTPHeaderField: "Content-Type")
        request.setValue("gzip", forHTTPHeaderField: "Content-Encoding")
        request.setValue("Sentry sentry_version=7, sentry_key=\(dsn.publicKey), sentry_client=swift-crash-reporting/\(CrashReporter.version)",
                         forHTTPHeaderField: "X-Sentry-Auth")
        request.httpBody = body
        return Self.outcome(HTTPExchange.send(request, timeout: timeout, client: client), eventID: eventID)
    }

    /// 32 lower-case hex digits: the record id without its dashes.
    static func eventID(_ recordID: String) -> String {
        let hex = recordID.lowercased().filter(\.isHexDigit)
        return hex.count == 32 ? hex : String((hex + String(repeating: "0", count: 32)).prefix(32))
    }

    /// Header line, item header, payload (Sentry's envelope format).
    static func envelope(event: [String: Any], eventID: String, dsn: DSN) throws -> Data {
        let payload = try JSONSerialization.data(withJSONObject: event, options: [.sortedKeys, .withoutEscapingSlashes])
        let header = try JSONSerialization.data(withJSONObject: [
            "event_id": eventID, "sent_at": Timestamp.iso8601(Date()),
            "dsn": "\(dsn.base.scheme ?? "https")://\(dsn.publicKey)@\(dsn.base.host ?? "")\(dsn.base.port.map { ":\($0)" } ?? "")\(dsn.base.path)/\(dsn.projectID)",
        ], options: [.sortedKeys, .withoutEscapingSlashes])
        let item = try JSONSerialization.data(withJSONObject: ["type": "event", "length": payload.count, "content_type": "application/json"],
                                              options: [.sortedKeys])
        var data = Data()
        for part in [header, item, payload] {
            data.append(part)
            data.append(UInt8(ascii: "\n"))
        }
        return data
    }

    static func outcome(_ answer: HTTPExchange.Answer, eventID: String) -> DeliveryOutcome {
        guard case .response(let status, let headers, let body) = answer else {
            if case .failed(let reason) = answer { return .unreachable(reason: reason) }
            return .unreachable(reason: "no answer")
        }
        let text = String(decoding: body.prefix(300), as: UTF8.self)
        switch status {
        case 200..<300:
            return .delivered(receipt: eventID)
        case 429:
            return .retryLater(reason: "HTTP 429: rate limited", after: retryAfter(headers))
        case 413:
            return .tooLarge(maxBytes: nil)
        case 401, 403:
            return .unauthorized(status: status, message: text)
        case 400 where text.lowercased().contains("duplicate"):
            return .delivered(receipt: eventID)   // the server has this event id already
        case 400, 422:
            return .rejected(status: status, message: text)
        case 300..<400:
            return .unauthorized(status: status, message: HTTPTransport.redirectMessage(headers))
        case 400..<500:
            return .unauthorized(status: status, message: "not a Sentry endpoint: \(text)")
        default:
            return .retryLater(reason: "HTTP \(status): \(text)", after: retryAfter(headers))
        }
    }

    /// The longest delay of `X-Sentry-Rate-Limits` entries that block events ("60::key": no
    /// category means all; "error" and "default" name ours), else `Retry-After`. Entries for other
    /// categories ("86400:transaction;span:organization", sent by Bugsink on every answer) don't.
    static func retryAfter(_ headers: [String: String]) -> Duration? {
        if let limits = headers["x-sentry-rate-limits"] {
            let seconds = limits.split(separator: ",").compactMap { entry -> Int? in
                let fields = entry.trimmingCharacters(in: .whitespaces).split(separator: ":", omittingEmptySubsequences: false)
                guard let delay = fields.first.flatMap({ Int($0) }) else { return nil }
                let categories = fields.count > 1 ? fields[1].split(separator: ";").map(String.init) : []
                return categories.isEmpty || categories.contains("error") || categories.contains("default") ? delay : nil
            }
            if let longest = seconds.max() { return .seconds(longest) }
        }
        return headers["retry-after"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }.map { .seconds($0) }
    }
}

/// Seed 000 payload → Sentry event (a JSON object).
enum SentryEvent {
    static func make(from payload: DiagnosticsPayload, eventID: String) -> [String: Any] {
        let entry = payload.crash_reports.first
        let app = payload.app_metadata, host = payload.device_metadata
        var event: [String: Any] = [
            "event_id": eventID,
            "timestamp": entry?.timestamp ?? payload.timestamp_collected,
            "platform": "native",
            "level": level(of: entry?.kind),
            "release": "\(app.bundle_id)@\(app.app_version)" + (app.build_number.isEmpty ? "" : "+\(app.build_number)"),
            "environment": app.environment,
            "sdk": ["name": "swift-crash-reporting", "version": CrashReporter.version],
            "contexts": contexts(app: app, host: host),
        ]
        if let entry, let trace = trace(of: entry, eventID: eventID) {
            var contexts = event["contexts"] as? [String: Any] ?? [:]
            contexts["trace"] = trace
            event["contexts"] = contexts
        }
        if !app.build_number.isEmpty { event["dist"] = app.build_number }
        if let user = payload.user_id { event["user"] = ["id": user] }
        var tags: [String: String] = ["report_kind": entry?.kind ?? "diagnostics"]
        for (key, value) in payload.custom_keys { tags[String(key.prefix(32))] = String(text(of: value).prefix(200)) }
        event["tags"] = tags
        if !payload.custom_data.isEmpty { event["extra"] = jsonObject(.object(payload.custom_data)) }
        event["breadcrumbs"] = ["values": breadcrumbs(payload)]
        if let entry {
            event["fingerprint"] = [entry.signature]
            event["exception"] = ["values": [exception(entry)]]
            if !entry.thread_info.isEmpty {
                // The crashed thread's stack is the exception's; every other thread carries its own.
                event["threads"] = ["values": entry.thread_info.enumerated().map { index, thread -> [String: Any] in
                    var value: [String: Any] = ["id": thread.id, "name": thread.name, "crashed": thread.crashed, "current": index == 0,
                                                "main": thread.is_main]
                    if index > 0 {
                        if let state = thread.state { value["state"] = state }
                        if !thread.frames.isEmpty { value["stacktrace"] = ["frames": stacktraceFrames(thread.frames, entry: entry)] }
                    }
                    return value
                }]
            }
            let images = entry.images.filter { !$0.build_id.isEmpty }.map(image)
            if !images.isEmpty { event["debug_meta"] = ["images": images] }
            if entry.kind == "diagnostics" { event["message"] = ["formatted": entry.exception_message] }
        }
        return event
    }

    /// Sentry's `contexts.trace`, joining the event to the trace of the request it happened in: a
    /// non-fatal report's `trace_id`/`span_id` (the server middleware puts them in its user info),
    /// else the trace of the request in flight that crashed (the one that started on the crashing
    /// thread, or the only one). Sentry requires a span id: when the report has none, the event's
    /// own (the last 16 hex digits of its id), as Sentry's SDKs give an event outside any span.
    static func trace(of entry: DiagnosticsPayload.CrashReportEntry, eventID: String) -> [String: Any]? {
        func isHex(_ text: String, _ count: Int) -> Bool {
            text.utf8.count == count && text.allSatisfy { $0.isHexDigit && !$0.isUppercase } && text.contains { $0 != "0" }
        }
        var traceID: String?, spanID: String?
        if case .object(let info)? = entry.error?.user_info, case .string(let id)? = info["trace_id"] {
            traceID = id
            if case .string(let span)? = info["span_id"] { spanID = span }
        } else if let requests = entry.requests_in_flight {
            let crashing = requests.first(where: \.crashed_thread) ?? (requests.count == 1 ? requests.first : nil)
            traceID = crashing?.trace_id
        }
        guard let traceID, isHex(traceID, 32) else { return nil }
        if spanID.map({ !isHex($0, 16) }) ?? true {
            let own = String(eventID.lowercased().filter(\.isHexDigit).suffix(16))
            spanID = own.count == 16 ? own : String(repeating: "0", count: 16 - own.count) + own
        }
        return ["type": "trace", "trace_id": traceID, "span_id": spanID!]
    }

    static func level(of kind: String?) -> String {
        switch kind {
        case "crash", "abnormal_termination": return "fatal"
        case "non_fatal", "hang": return "error"
        default: return "info"
        }
    }

    static func exception(_ entry: DiagnosticsPayload.CrashReportEntry) -> [String: Any] {
        // A hang is Sentry's "AppHang" (its iOS and watchdog reports' mechanism), not handled by the app.
        var mechanism: [String: Any] = ["type": entry.kind == "crash" ? "signalhandler" : entry.kind == "hang" ? "AppHang" : "generic",
                                        "handled": entry.kind != "crash" && entry.kind != "hang"]
        if let signal = entry.signal {
            mechanism["meta"] = ["signal": ["number": signal.number, "code": signal.code, "name": signal.name, "code_name": signal.code_name]]
        }
        var exception: [String: Any] = [
            "type": entry.exception_type, "value": entry.exception_message, "mechanism": mechanism,
        ]
        let frames = stacktraceFrames(entry.thread_info.first?.frames ?? [], entry: entry)
        if !frames.isEmpty { exception["stacktrace"] = ["frames": frames] }
        if let thread = entry.thread_info.first { exception["thread_id"] = thread.id }
        return exception
    }

    /// Sentry stack frames, outermost first.
    static func stacktraceFrames(_ frames: [DiagnosticsPayload.Frame], entry: DiagnosticsPayload.CrashReportEntry) -> [[String: Any]] {
        let paths = Dictionary(entry.images.map { (fileName(of: $0.path), $0.path) }, uniquingKeysWith: { first, _ in first })
        return frames.reversed().map { frame -> [String: Any] in
            var out: [String: Any] = ["instruction_addr": frame.address, "in_app": entry.isInApp(frame)]
            if let function = frame.function {
                // Sentry's two names: the short one people read, and the full demangled one.
                out["function"] = CrashGrouping.displayName(function)
                if out["function"] as? String != function { out["raw_function"] = function }
            }
            if let file = frame.file {
                out["filename"] = fileName(of: file)
                out["abs_path"] = file
            }
            if let line = frame.line { out["lineno"] = line }
            if let column = frame.column { out["colno"] = column }
            if let module = frame.module { out["package"] = paths[module] ?? module }
            return out
        }
    }

    static func image(_ image: DiagnosticsPayload.Image) -> [String: Any] {
        let start = UInt64(image.start.dropFirst(2), radix: 16) ?? 0, end = UInt64(image.end.dropFirst(2), radix: 16) ?? 0
        return ["type": "elf", "code_id": image.build_id, "debug_id": debugID(buildID: image.build_id), "image_addr": image.start,
                "image_size": end >= start ? end - start : 0, "code_file": image.path]
    }

    /// The first 16 bytes of the build-id read as a GUID whose first three fields are
    /// little-endian (Sentry's and Breakpad's convention for ELF): bytes 0–3, 4–5, 6–7 reversed.
    static func debugID(buildID: String) -> String {
        var bytes: [UInt8] = []
        var index = buildID.startIndex
        while bytes.count < 16, let next = buildID.index(index, offsetBy: 2, limitedBy: buildID.endIndex), let byte = UInt8(buildID[index..<next], radix: 16) {
            bytes.append(byte)
            index = next
        }
        while bytes.count < 16 { bytes.append(0) }
        let ordered = Array(bytes[0..<4].reversed()) + Array(bytes[4..<6].reversed()) + Array(bytes[6..<8].reversed()) + Array(bytes[8..<16])
        let hex = ordered.map { String(format: "%02x", $0) }.joined()
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return parts.map(String.init).joined(separator: "-")
    }

    static func breadcrumbs(_ payload: DiagnosticsPayload) -> [[String: Any]] {
        var crumbs: [(String, [String: Any])] = payload.logs.map { log in
            var crumb: [String: Any] = ["timestamp": log.timestamp, "category": log.tag, "message": log.message,
                                        "level": log.level == "warning" ? "warning" : log.level, "type": "default"]
            if let metadata = log.metadata { crumb["data"] = jsonObject(.object(metadata)) }
            return (log.timestamp, crumb)
        }
        crumbs += payload.network_errors.map { digest in
            var data: [String: Any] = ["url": digest.request_url, "method": digest.request_method, "reason": digest.error_type]
            if let status = digest.status_code { data["status_code"] = status }
            return (digest.timestamp, ["timestamp": digest.timestamp, "type": "http", "category": "http", "level": "error",
                                       "message": digest.error_message, "data": data])
        }
        return crumbs.sorted { $0.0 < $1.0 }.suffix(100).map(\.1)
    }

    static func contexts(app: AppMetadata, host: HostMetadata) -> [String: Any] {
        let kernel = host.ios_version.components(separatedBy: "; kernel ").dropFirst().first
        var os: [String: Any] = ["name": "Linux", "version": host.ios_version.components(separatedBy: "; kernel ").first ?? host.ios_version]
        if let kernel { os["kernel_version"] = kernel }
        return [
            "os": os,
            "device": ["model": host.device_model, "arch": CrashReporter.architecture, "memory_size": host.total_memory_mb * 1_048_576,
                       "simulator": host.is_simulator, "processor_count": host.cpu_count],
            "app": ["app_identifier": app.bundle_id, "app_name": app.app_name, "app_version": app.app_version, "app_build": app.build_number],
        ]
    }

    static func text(of value: JSONValue) -> String {
        switch value {
        case .string(let text): return text
        case .int(let number): return String(number)
        case .double(let number): return String(number)
        case .bool(let flag): return flag ? "true" : "false"
        case .null: return "null"
        case .array, .object: return String(decoding: (try? JSONEncoder().encode(value)) ?? Data(), as: UTF8.self)
        }
    }

    static func jsonObject(_ value: JSONValue) -> Any {
        switch value {
        case .null: return NSNull()
        case .bool(let flag): return flag
        case .int(let number): return number
        case .double(let number): return number
        case .string(let text): return text
        case .array(let values): return values.map(jsonObject)
        case .object(let object): return object.mapValues(jsonObject)
        }
    }
}
