// What every framework middleware does with a request, framework-free: the screen view and the
// slot among the requests in flight as it starts; the "http" breadcrumb and, for a 5xx or a thrown
// error, a rate-limited non-fatal report as it ends. CrashReportingHummingbird and
// CrashReportingVapor only translate their framework's request, route and error into these calls.
import CrashReporting
import Foundation
import Synchronization

/// The options every middleware shares.
public struct RequestReportingOptions: Sendable {
    /// A breadcrumb per finished request.
    public var breadcrumbs = true
    /// A screen view (the route pattern, e.g. "/users/{id}") as each request starts.
    public var routeAsScreenView = true
    /// 5xx answers and thrown errors (other than those the framework maps to 4xx) as non-fatal reports.
    public var reportsServerErrors = true
    /// Non-fatal reports at most this many per minute per middleware; the rest are counted in
    /// the next report's `suppressed_since_last` and dropped (a failing dependency must not
    /// turn every request into a report on disk).
    public var maxReportsPerMinute = 10

    public init() {}
}

/// A request being served: begun by `RequestReporter.begin`, ended by `RequestReporter.end`.
public struct ReportedRequest: Sendable {
    public let method: String
    public let route: String
    public let requestID: String
    public let trace: TraceIdentity?
    let token: CrashReporter.RequestToken
    let started: ContinuousClock.Instant
}

/// The per-request bookkeeping of a middleware; one per middleware instance. Thread-safe.
public struct RequestReporter: Sendable {
    public let options: RequestReportingOptions
    let limiter: ReportLimiter

    public init(options: RequestReportingOptions) {
        self.options = options
        self.limiter = ReportLimiter(perMinute: options.maxReportsPerMinute)
    }

    /// As the request starts, once its route is known: screen view, slot in flight.
    public func begin(method: String, route: String, requestID: String, trace: TraceIdentity?) -> ReportedRequest {
        if options.routeAsScreenView { CrashReporter.logScreenView(route) }
        let token = CrashReporter.beginRequest(method: method, route: route, requestID: requestID, traceID: trace?.traceID ?? "")
        return ReportedRequest(method: method, route: route, requestID: requestID, trace: trace, token: token, started: .now)
    }

    /// As it ends, with the status it answered (500 for an error that has none) and the error
    /// thrown, if any. Always call it exactly once per `begin` (it frees the slot).
    public func end(_ request: ReportedRequest, status: Int, error: (any Error)?) {
        CrashReporter.endRequest(request.token)
        let method = request.method, route = request.route
        if options.breadcrumbs {
            let elapsed = ContinuousClock.now - request.started
            // Tenths of a millisecond in integers: String(format:) costs about a microsecond here.
            let tenths = elapsed.components.seconds * 10_000 + elapsed.components.attoseconds / 100_000_000_000_000
            let level: CrashReporter.LogLevel = status >= 500 ? .error : status >= 400 ? .warning : .info
            // Pairs written into the breadcrumb's JSON as they come: no dictionary, no sorting
            // (the dictionary and its sorted keys were most of this call's ~2 µs), and no array
            // (HTTPBreadcrumbFields is a sequence of its own fields).
            let fields = HTTPBreadcrumbFields(method: method, route: route, status: String(status),
                                              duration: "\(tenths / 10).\(tenths % 10)", requestID: request.requestID,
                                              traceID: request.trace?.traceID, spanID: request.trace?.spanID)
            CrashReporter.log("\(method) \(route) \(status)", level: level, tag: "http", metadataPairs: fields)
        }
        guard options.reportsServerErrors, status >= 500 else { return }
        guard let suppressed = limiter.take() else { return }
        var userInfo: [ErrorPayloadKey: ErrorPayloadValue] = [
            "route": .string(route), "method": .string(method), "status": .int(status), "request_id": .string(request.requestID),
        ]
        if let trace = request.trace {
            userInfo["trace_id"] = .string(trace.traceID)
            if let span = trace.spanID { userInfo["span_id"] = .string(span) }
        }
        if suppressed > 0 { userInfo["suppressed_since_last"] = .int(suppressed) }
        if let error {
            _ = try? CrashReporter.record(error: error, userInfo: userInfo)
        } else {
            _ = try? CrashReporter.record(domain: "http.server", code: status, message: "\(method) \(route) answered \(status)",
                                          userInfo: userInfo)
        }
    }
}

/// The "http" breadcrumb's metadata, in order, without an array: method, route, status,
/// duration_ms, request_id, then trace_id and span_id when known.
struct HTTPBreadcrumbFields: Sequence, IteratorProtocol {
    let method: String, route: String, status: String, duration: String, requestID: String
    let traceID: String?, spanID: String?
    private var position = 0

    init(method: String, route: String, status: String, duration: String, requestID: String, traceID: String?, spanID: String?) {
        (self.method, self.route, self.status, self.duration, self.requestID) = (method, route, status, duration, requestID)
        (self.traceID, self.spanID) = (traceID, spanID)
    }

    mutating func next() -> (key: String, value: String)? {
        defer { position += 1 }
        switch position {
        case 0: return ("method", method)
        case 1: return ("route", route)
        case 2: return ("status", status)
        case 3: return ("duration_ms", duration)
        case 4: return ("request_id", requestID)
        case 5: if let traceID { return ("trace_id", traceID) } else { return nil }
        case 6: if traceID != nil, let spanID { return ("span_id", spanID) } else { return nil }
        default: return nil
        }
    }
}

/// A minute-long window of at most `perMinute` reports. Thread-safe.
public final class ReportLimiter: Sendable {
    private struct Window {
        var start: ContinuousClock.Instant
        var taken = 0
        var suppressed = 0
    }
    private let perMinute: Int
    private let window: Mutex<Window>

    public init(perMinute: Int) {
        self.perMinute = perMinute
        self.window = Mutex(Window(start: .now))
    }

    /// nil when over the limit; otherwise how many were refused since the last one allowed.
    public func take(now: ContinuousClock.Instant = .now) -> Int? {
        window.withLock { window in
            if now - window.start >= .seconds(60) {
                window.start = now
                window.taken = 0
            }
            guard window.taken < perMinute else {
                window.suppressed += 1
                return nil
            }
            window.taken += 1
            defer { window.suppressed = 0 }
            return window.suppressed
        }
    }
}
