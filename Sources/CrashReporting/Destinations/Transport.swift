// Where payloads go. A transport turns one upload into one outcome; the pipeline (Uploader.swift)
// owns the policy: what a 400 or a refused connection means for the record on disk.
// `HTTPTransport` speaks seed 000's contract; other destinations implement the same protocol.
import CrashReportModel
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// One payload, ready to send: the gzip'd JSON body and the key that makes a repeat harmless.
public struct DiagnosticsUpload: Sendable {
    public var payload: DiagnosticsPayload
    /// gzip'd JSON of `payload`.
    public var body: Data
    /// The record id: a collector stores a key once, whatever the number of deliveries.
    public var idempotencyKey: String
}

/// What a destination said about one upload.
public enum DeliveryOutcome: Sendable, Equatable {
    /// Stored (2xx, or a key the destination already had). `receipt`: its id for the payload.
    case delivered(receipt: String?)
    /// Refused for good (400 and the like): sending it again cannot help.
    case rejected(status: Int, message: String)
    /// 413: the payload must shrink.
    case tooLarge(maxBytes: Int?)
    /// 401/403: the token or endpoint is wrong; every upload will fail until the configuration changes.
    case unauthorized(status: Int, message: String)
    /// The destination answered but cannot take it now (5xx, 429, 408): try this record again
    /// later (`after`, when the destination said when); other records may still go through.
    case retryLater(reason: String, after: Duration?)
    /// No answer at all (refused, reset, time-out, DNS): the destination is down, and every
    /// record would fail the same way.
    case unreachable(reason: String)
}

public protocol DiagnosticsTransport: Sendable {
    /// Names the destination in logs and in the upload status.
    var name: String { get }
    /// Sends one upload and waits for the answer (called on the pipeline's own thread).
    func deliver(_ upload: DiagnosticsUpload) -> DeliveryOutcome
}

/// Seed 000's upload contract: `POST {endpoint}/api/v1/qa/diagnostics`, gzip'd JSON, bearer token.
public struct HTTPTransport: DiagnosticsTransport {
    public var endpoint: URL
    public var token: String?
    public var timeout: Duration
    /// What the request goes out with (URLSession by default).
    public var client: any HTTPClient = URLSessionHTTPClient()
    public var name: String { "collector \(endpoint.absoluteString)" }

    public init(endpoint: URL, token: String?, timeout: Duration = .seconds(15)) {
        self.endpoint = endpoint
        self.token = token
        self.timeout = timeout
    }

    public func deliver(_ upload: DiagnosticsUpload) -> DeliveryOutcome {
        var request = URLRequest(url: endpoint.appendingPathComponent("api/v1/qa/diagnostics"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("gzip", forHTTPHeaderField: "Content-Encoding")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        request.setValue(upload.payload.test_run_id, forHTTPHeaderField: "X-Test-Run-ID")
        request.setValue(upload.payload.app_metadata.app_version, forHTTPHeaderField: "X-App-Version")
        request.setValue(upload.idempotencyKey, forHTTPHeaderField: "Idempotency-Key")
        request.setValue("swift-crash-reporting/\(CrashReporter.version)", forHTTPHeaderField: "User-Agent")
        request.httpBody = upload.body
        let answer = HTTPExchange.send(request, timeout: timeout, client: client)
        return Self.outcome(answer)
    }

    /// What a person needs to fix a redirecting endpoint: where it points.
    static func redirectMessage(_ headers: [String: String]) -> String {
        "redirected to \(headers["location"].map { "\"\($0)\"" } ?? "(no Location header)"); redirects are not followed "
            + "(the token must go only to the configured endpoint): configure the final URL"
    }

    static func outcome(_ answer: HTTPExchange.Answer) -> DeliveryOutcome {
        switch answer {
        case .failed(let error):
            return .unreachable(reason: error)
        case .response(let status, let headers, let body):
            let json = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
            let message = (json?["message"] as? String) ?? (json?["error"] as? String)
                ?? String(decoding: body.prefix(300), as: UTF8.self)
            switch status {
            case 200..<300:
                return .delivered(receipt: json?["diagnostics_id"] as? String)
            case 409:   // "already have it": a collector that answers a repeated key this way
                return .delivered(receipt: json?["diagnostics_id"] as? String)
            case 401, 403:
                return .unauthorized(status: status, message: message)
            case 300..<400:
                // Never followed (HTTPExchange): the token would go to the host the Location names.
                // A configuration error, not a verdict on the report: it is kept.
                return .unauthorized(status: status, message: redirectMessage(headers))
            case 404, 405:
                // A wrong endpoint, not a bad payload: keep the reports for a corrected configuration.
                return .unauthorized(status: status, message: "not a collector at this URL: \(message)")
            case 413:
                return .tooLarge(maxBytes: json?["max_size_bytes"] as? Int)
            case 408, 425, 429, 500...599:
                let after = headers["retry-after"].flatMap(Int.init).map { Duration.seconds($0) }
                return .retryLater(reason: "HTTP \(status): \(message)", after: after)
            case 400, 422:
                return .rejected(status: status, message: message)
            case 400..<500:
                return .unauthorized(status: status, message: message)
            default:
                return .retryLater(reason: "HTTP \(status): \(message)", after: nil)
            }
        }
    }
}

/// How a destination's request leaves: the outgoing check on its body (Privacy/OutgoingCheck.swift),
/// then the destination's `HTTPClient`, with the pipeline's "body sent" callback for this thread.
enum HTTPExchange {
    typealias Answer = HTTPAnswer

    /// What the pipeline wants to hear about the exchange in progress on this thread: called once,
    /// on URLSession's delegate queue, when the first bytes of the body were sent. Per thread (the
    /// pipeline calls its transports synchronously on its own thread), kept with a pthread key:
    /// a `@TaskLocal` read and written outside any task crashed in release builds
    /// (`swift_task_localValuePush`, Swift 6.3.1, seen in tools/e2e-collector-symbolication).
    enum Attempt {
        private final class Box {
            let callback: @Sendable () -> Void
            init(_ callback: @escaping @Sendable () -> Void) { self.callback = callback }
        }

        private static let key: pthread_key_t = {
            var key = pthread_key_t()
            precondition(pthread_key_create(&key, nil) == 0, "no pthread key left for the upload pipeline")
            return key
        }()

        /// The callback set by `withBodySent` on this thread, if any.
        static var bodySent: (@Sendable () -> Void)? {
            pthread_getspecific(key).map { Unmanaged<Box>.fromOpaque($0).takeUnretainedValue().callback }
        }

        /// Runs `body` with `callback` as this thread's `bodySent`.
        static func withBodySent<T>(_ callback: @escaping @Sendable () -> Void, _ body: () throws -> T) rethrows -> T {
            let box = Box(callback)
            let previous = pthread_getspecific(key)
            pthread_setspecific(key, Unmanaged.passUnretained(box).toOpaque())
            defer {
                pthread_setspecific(key, previous)
                withExtendedLifetime(box) {}
            }
            return try body()
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func send(_ request: URLRequest, timeout: Duration, client: any HTTPClient) -> Answer {
        guard let url = request.url else { return .failed("a request without a URL") }
        var outgoing = HTTPRequest(url: url, method: request.httpMethod ?? "GET", headers: request.allHTTPHeaderFields ?? [:],
                                   body: request.httpBody ?? Data())
        // The last look at what leaves the process.
        let gzipped = outgoing.headers.first { $0.key.lowercased() == "content-encoding" }?.value == "gzip"
        if let cleaned = OutgoingCheck.cleaned(outgoing.body, gzipped: gzipped) {
            outgoing.body = cleaned.body
        }
        return client.send(outgoing, timeout: timeout, bodySent: Attempt.bodySent)
    }
}
