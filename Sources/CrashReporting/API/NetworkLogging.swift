// Network requests (seeds 000 and 003). Each logged request/response pair becomes an `api_log`
// event (seed 003 §5: headers redacted, bodies cut at 64 KiB, binary bodies as "base64:…"),
// spooled per session for upload to `POST /api/logs`. A failed request (transport error or HTTP
// status ≥ 400) also becomes a seed 000 `network_errors` digest, kept as a breadcrumb of kind
// "network" so that it survives a crash with the rest of the context; the payload keeps the 100
// most recent.
import CCrashCapture
import CrashReportModel
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc
import Synchronization

/// Seed 003 §5's `api_log` event, wire names as the log server expects them.
public struct APILogEvent: Codable, Sendable, Equatable {
    public var type = "api_log"
    public var appId: String
    public var method: String
    public var url: String
    public var statusCode: Int
    /// Milliseconds.
    public var duration: Int
    /// Milliseconds since 1970.
    public var timestamp: Int64
    public var requestHeaders: [String: String]
    public var requestBody: String?
    public var responseHeaders: [String: String]
    public var responseBody: String?
    public var error: String?
}

extension CrashReporter {
    public struct NetworkLogging: Sendable {
        /// Header names (any case) whose values are replaced by "[REDACTED]".
        public var redactedHeaders: Set<String> = ["authorization", "cookie", "set-cookie", "x-api-key"]
        /// Bodies are cut to this many bytes.
        public var maxBodyBytes = 64 * 1024
        /// When set, only requests to these hosts are logged.
        public var hostAllowlist: Set<String>?
        /// The most api_log bytes kept per session before new events are dropped (and counted).
        public var maxSpoolBytes = 5 * 1024 * 1024
        public init() {}
    }

    private static let networkSettings = Mutex((options: NetworkLogging(), spooledBytes: 0, dropped: 0))

    /// Options for `logNetworkRequest`; set them before logging.
    public static var networkLogging: NetworkLogging {
        get { networkSettings.withLock { $0.options } }
        set { networkSettings.withLock { $0.options = newValue } }
    }

    /// Logs one request and its outcome. Returns the api_log event as stored, or nil when the
    /// host is not in the allowlist (or before `start`).
    @discardableResult
    public static func logNetworkRequest(
        _ request: URLRequest, response: HTTPURLResponse?, requestBody: Data? = nil, responseBody: Data? = nil,
        error: (any Error)? = nil, startedAt: Date? = nil, endedAt: Date = Date(), retryCount: Int = 0
    ) -> APILogEvent? {
        let options = networkLogging
        guard let context = reportingContext() else { return nil }
        let url = request.url ?? response?.url
        if let allowlist = options.hostAllowlist, !allowlist.contains(url?.host?.lowercased() ?? "") { return nil }
        let method = request.httpMethod ?? "GET"
        let duration = startedAt.map { max(0, Int((endedAt.timeIntervalSince($0) * 1000).rounded())) } ?? 0
        let event = APILogEvent(
            appId: context.appID, method: method, url: url?.absoluteString ?? "", statusCode: response?.statusCode ?? 0,
            duration: duration, timestamp: Int64((endedAt.timeIntervalSince1970 * 1000).rounded()),
            requestHeaders: redactHeaders(request.allHTTPHeaderFields ?? [:], options),
            requestBody: (requestBody ?? request.httpBody).map { formatBody($0, options) },
            responseHeaders: redactHeaders((response?.allHeaderFields ?? [:]).reduce(into: [:]) { $0["\($1.key)"] = "\($1.value)" }, options),
            responseBody: responseBody.map { formatBody($0, options) },
            error: error.map { String(describing: $0) })
        spool(event, options: options, context: context)

        let status = response?.statusCode
        if error != nil || (status ?? 0) >= 400 {
            let digest = NetworkErrorDigest(
                timestamp: Timestamp.iso8601(endedAt), request_url: url.map { Redactor.seed000.redactURL($0) } ?? "",
                request_method: method, status_code: status, error_type: classify(error: error, status: status),
                error_message: Redactor.seed000.redact(error.map { ($0 as NSError).localizedDescription }
                    ?? HTTPURLResponse.localizedString(forStatusCode: status ?? 0)),
                request_duration_ms: duration, retry_count: retryCount)
            recordDigest(digest)
        }
        return event
    }

    /// The network error digests of this session, most recent last (at most 100; seed 000).
    public static func networkErrorDigests() -> [NetworkErrorDigest] {
        guard let crumbs = contextSnapshot()?.breadcrumbs else { return [] }
        return Array(crumbs.compactMap(digest(from:)).suffix(100))
    }

    /// Reads a digest back from a breadcrumb of kind "network".
    public static func digest(from breadcrumb: CrashRecord.Breadcrumb) -> NetworkErrorDigest? {
        guard breadcrumb.kind == "network", let m = breadcrumb.metadata else { return nil }
        return NetworkErrorDigest(
            timestamp: m["timestamp"] ?? "", request_url: m["request_url"] ?? "", request_method: m["request_method"] ?? "",
            status_code: m["status_code"].flatMap(Int.init), error_type: m["error_type"] ?? "unknown",
            error_message: m["error_message"] ?? "", request_duration_ms: Int(m["request_duration_ms"] ?? "") ?? 0,
            retry_count: Int(m["retry_count"] ?? "") ?? 0)
    }

    /// Seed 000's error types.
    public static func classify(error: (any Error)?, status: Int?) -> String {
        if let error {
            if let urlError = error as? URLError {
                switch urlError.code {
                case .timedOut: return "timeout"
                case .notConnectedToInternet, .networkConnectionLost, .cannotConnectToHost, .internationalRoamingOff,
                     .dataNotAllowed: return "network_unreachable"
                case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
                     .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot, .clientCertificateRejected,
                     .clientCertificateRequired: return "ssl_error"
                case .cannotFindHost, .dnsLookupFailed: return "dns_failure"
                default: break
                }
            }
            let ns = error as NSError
            if ns.domain == NSPOSIXErrorDomain {
                switch Int32(ns.code) {
                case ETIMEDOUT: return "timeout"
                case ECONNREFUSED, ENETUNREACH, EHOSTUNREACH, ENETDOWN, ECONNRESET: return "network_unreachable"
                default: break
                }
            }
            return "unknown"
        }
        switch status ?? 0 {
        case 500...599: return "server_error"
        case 400...499: return "client_error"
        default: return "unknown"
        }
    }

    private static func redactHeaders(_ headers: [String: String], _ options: NetworkLogging) -> [String: String] {
        headers.reduce(into: [:]) { result, header in
            result[header.key] = options.redactedHeaders.contains(header.key.lowercased()) ? "[REDACTED]" : header.value
        }
    }

    /// UTF-8 text as it is, anything else as "base64:…", cut to maxBodyBytes first.
    static func formatBody(_ body: Data, _ options: NetworkLogging) -> String {
        let cut = body.prefix(options.maxBodyBytes)
        if let text = String(data: cut, encoding: .utf8), !text.unicodeScalars.contains(where: { $0.value < 0x20 && !"\n\r\t".unicodeScalars.contains($0) }) {
            return text
        }
        // A cut in the middle of a UTF-8 sequence: retry without the broken tail before giving up on text.
        if cut.count < body.count {
            for drop in 1...3 where cut.count > drop {
                if let text = String(data: cut.dropLast(drop), encoding: .utf8) { return text }
            }
        }
        return "base64:" + cut.base64EncodedString()
    }

    private static func recordDigest(_ digest: NetworkErrorDigest) {
        var metadata: [String: String] = [
            "timestamp": digest.timestamp, "request_url": digest.request_url, "request_method": digest.request_method,
            "error_type": digest.error_type, "error_message": digest.error_message,
            "request_duration_ms": String(digest.request_duration_ms), "retry_count": String(digest.retry_count),
        ]
        if let status = digest.status_code { metadata["status_code"] = String(status) }
        let message = "\(digest.request_method) \(digest.request_url) \(digest.status_code.map(String.init) ?? digest.error_type)"
        append(level: .error, kind: 4, tag: "network", message: message, metadata: metadata)
    }

    /// Appends the event to <reports>/api_logs/<session>.jsonl, bounded per session.
    private static func spool(_ event: APILogEvent, options: NetworkLogging, context: ReportingContext) {
        guard let sessionPath = context.sessionPath, let data = try? JSONEncoder().encode(event) else { return }
        let folder = ((sessionPath as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent + "/api_logs"
        let accepted = networkSettings.withLock { settings -> Bool in
            guard settings.spooledBytes + data.count + 1 <= options.maxSpoolBytes else {
                settings.dropped += 1
                return false
            }
            settings.spooledBytes += data.count + 1
            return true
        }
        guard accepted else { return }
        ReportsDirectory.makeFolder(folder)
        let file = folder + "/" + fileName(of: sessionPath).replacingOccurrences(of: ".session", with: ".jsonl")
        let fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var line = data
        line.append(UInt8(ascii: "\n"))
        _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }   // one write: lines never interleave
    }

    /// api_log events dropped this session because the spool was full.
    public static var droppedNetworkEvents: Int { networkSettings.withLock { $0.dropped } }
}
