// What every framework middleware does with a request, framework-free: the screen view and the
// slot among the requests in flight as it starts; the "http" breadcrumb and, for a 5xx or a thrown
// error, a rate-limited non-fatal report as it ends. CrashReportingHummingbird and
// CrashReportingVapor only translate their framework's request, route and error into these calls.
@_spi(ServerIntegrations) import CrashReporting
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
    /// The request id, without an allocation when it has at most 32 bytes.
    public let requestIdentifier: RequestIdentifier
    public var requestID: String { requestIdentifier.description }
    public let trace: TraceIdentity?
    /// The slot in flight and the request's start (read once, for the slot and the duration).
    let token: CrashReporter.RequestToken
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
        begin(method: method, route: route, requestIdentifier: RequestIdentifier(requestID), trace: trace)
    }

    /// `begin`, with the request id as a `RequestIdentifier`.
    public func begin(method: String, route: String, requestIdentifier: RequestIdentifier, trace: TraceIdentity?) -> ReportedRequest {
        let token = requestIdentifier.withUTF8 {
            CrashReporter.beginRequest(method: method, route: route, requestIDUTF8: $0, traceID: trace?.traceID ?? "",
                                       routeAsScreenView: options.routeAsScreenView)
        }
        return ReportedRequest(method: method, route: route, requestIdentifier: requestIdentifier, trace: trace, token: token)
    }

    /// As it ends, with the status it answered (500 for an error that has none) and the error
    /// thrown, if any. Always call it exactly once per `begin` (it frees the slot).
    public func end(_ request: ReportedRequest, status: Int, error: (any Error)?) {
        CrashReporter.endRequest(request.token)
        let method = request.method, route = request.route
        if options.breadcrumbs {
            // The duration in tenths of a millisecond, measured in C from the clock read as the
            // request began, with the clock read that orders the breadcrumb (Decision 0058):
            // String(format:) costs about a microsecond here, and Duration's 128-bit arithmetic
            // was a tenth of the middleware's samples in tools/profile-middleware. Written from a
            // stack buffer (no dictionary, array or string built for it).
            request.requestIdentifier.withUTF8 {
                _ = CrashReporter.logHTTPRequest(method: method, route: route, status: status, durationTenthsOfMillisecond: 0,
                                                 requestIDUTF8: $0, traceID: request.trace?.traceID, spanID: request.trace?.spanID,
                                                 startedNanoseconds: request.token.startedNanoseconds)
            }
        }
        guard options.reportsServerErrors, status >= 500 else { return }
        reportServerError(request, status: status, error: error)
    }

    /// The non-fatal report of a 5xx or a thrown error, rate-limited. Not inlined into `end`: its
    /// clock read (`ContinuousClock.Instant`, a type of the standard library whose size is known
    /// only at run time) made every `end` call a metadata accessor and size its stack frame at
    /// run time, for every request, 5xx or not (tools/profile-middleware).
    @inline(never)
    func reportServerError(_ request: ReportedRequest, status: Int, error: (any Error)?) {
        let method = request.method, route = request.route
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
