// Delivery to an ELK stack in seed 004's shape, posted as Logz.io's JSON bulk upload (one JSON
// object per line, `?token=…&type=…`); the URL is configurable, so a self-hosted Logstash HTTP
// input takes the same requests. Seed 004's iOS names map to Linux: `mobile` → `linux` (version,
// build_number, platform "linux", development), `ios.metadata` → `linux.metadata` (userInfo,
// keys, signal, top frames, host).
import CrashReportModel
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

public struct LogzioTransport: DiagnosticsTransport {
    /// Logz.io's listener (`https://listener.logz.io:8071`, or the region's), or a Logstash HTTP input.
    public var url: URL
    public var token: String
    /// Logz.io's log type, which selects its parsing.
    public var type: String
    public var timeout: Duration
    /// What the request goes out with (URLSession by default).
    public var client: any HTTPClient = URLSessionHTTPClient()
    public var name: String { "elk \(url.host ?? url.absoluteString)" }

    public init(url: URL = URL(string: "https://listener.logz.io:8071")!, token: String, type: String = "swift-crash-reporting",
                timeout: Duration = .seconds(15)) {
        self.url = url
        self.token = token
        self.type = type
        self.timeout = timeout
    }

    public func deliver(_ upload: DiagnosticsUpload) -> DeliveryOutcome {
        var lines = Data()
        for document in Self.documents(upload.payload) {
            guard let line = try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys, .withoutEscapingSlashes]) else {
                return .rejected(status: 0, message: "the report could not be encoded")
            }
            lines.append(line)
            lines.append(UInt8(ascii: "\n"))
        }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false), let body = try? Gzip.compress(lines) else {
            return .rejected(status: 0, message: "bad URL \(url)")
        }
        components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "token", value: token), URLQueryItem(name: "type", value: type)]
        var request = URLRequest(url: components.url ?? url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("gzip", forHTTPHeaderField: "Content-Encoding")
        request.httpBody = body
        return HTTPTransport.outcome(HTTPExchange.send(request, timeout: timeout, client: client))
    }

    /// One seed 004 document per report in the payload.
    static func documents(_ payload: DiagnosticsPayload) -> [[String: Any]] {
        payload.crash_reports.map { entry in
            var metadata: [String: Any] = [
                "report_id": entry.report_id, "kind": entry.kind, "exception_type": entry.exception_type,
                "stack_trace": Array(entry.stack_trace.prefix(10)), "signature": entry.signature,
                "host": ["model": payload.device_metadata.device_model, "os": payload.device_metadata.ios_version,
                         "device_identifier": payload.device_metadata.device_identifier],
                "test_run_id": payload.test_run_id,
            ]
            if let error = entry.error {
                metadata["user_info"] = SentryEvent.jsonObject(error.user_info)
                if !error.underlying.isEmpty { metadata["underlying"] = error.underlying.map(SentryEvent.jsonObject) }
            }
            if let signal = entry.signal { metadata["signal"] = ["number": signal.number, "name": signal.name, "code_name": signal.code_name] }
            if !payload.custom_keys.isEmpty { metadata["custom_keys"] = SentryEvent.jsonObject(.object(payload.custom_keys)) }
            if let user = payload.user_id { metadata["user_id"] = user }
            let (domain, code): (String, Int) = entry.error.map { ($0.domain, $0.code) }
                ?? ("\(payload.app_metadata.bundle_id).\(entry.kind)", entry.signal?.number ?? 0)
            return [
                "code": code, "domain": domain, "message": entry.exception_message,
                "environment": payload.app_metadata.environment, "reported_at": entry.timestamp,
                "linux": [
                    "version": payload.app_metadata.app_version,
                    "build_number": Int(payload.app_metadata.build_number) ?? 0,
                    "platform": "linux",
                    "development": payload.app_metadata.environment.lowercased().hasPrefix("dev"),
                ] as [String: Any],
                "linux.metadata": metadata,
            ]
        }
    }
}
