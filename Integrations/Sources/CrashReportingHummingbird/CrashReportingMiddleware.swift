// Hummingbird 2 middleware: what the server was doing, in the crash report. Each request is in the
// crash-readable table of requests in flight while it runs, leaves a screen-view breadcrumb when it starts (its route pattern, so a crash mid-request names the route
// that was being served) and an "http" breadcrumb when it ends (method, route, status, duration,
// request id); a 5xx answer or an error thrown by a handler becomes a non-fatal report, at most
// `maxReportsPerMinute` of them. Add it before the routes: Hummingbird bakes a router's middleware
// into each route as the route is registered.
import CrashReporting
import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

public struct CrashReportingMiddleware<Context: RequestContext>: RouterMiddleware {
    public struct Options: Sendable {
        /// A breadcrumb per finished request.
        public var breadcrumbs = true
        /// A screen view (the route pattern, e.g. "/users/{id}") as each request starts.
        public var routeAsScreenView = true
        /// 5xx answers and thrown errors (other than 4xx `HTTPResponseError`s) as non-fatal reports.
        public var reportsServerErrors = true
        /// Non-fatal reports at most this many per minute per middleware; the rest are counted in
        /// the next report's `suppressed_since_last` and dropped (a failing dependency must not
        /// turn every request into a report on disk).
        public var maxReportsPerMinute = 10
        /// The request's trace id, carried by its breadcrumb, its slot among the requests in flight
        /// and its non-fatal report, so a report can be joined to the trace. Default: the trace id
        /// of a W3C `traceparent` header (what OpenTelemetry, swift-otel and most proxies send).
        public var traceID: @Sendable (Request) -> String? = { request in
            request.headers[HTTPField.Name("traceparent")!].flatMap(CrashReportingMiddleware.traceID(traceparent:))
        }

        public init() {}
    }

    /// The trace id of a W3C trace-context `traceparent` value (`00-<32 hex>-<16 hex>-<2 hex>`), or
    /// nil when it is malformed or the all-zero id the specification calls invalid.
    public static func traceID(traceparent: String) -> String? {
        let parts = traceparent.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].count == 2, parts[1].count == 32, parts[2].count == 16,
              parts[1].allSatisfy({ $0.isHexDigit && !$0.isUppercase }), parts[1].contains(where: { $0 != "0" }) else {
            return nil
        }
        return String(parts[1])
    }

    public let options: Options
    private let limiter: ReportLimiter

    public init(options: Options = Options()) {
        self.options = options
        self.limiter = ReportLimiter(perMinute: options.maxReportsPerMinute)
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // The router matched the route before running the route's middleware.
        let route = context.endpointPath ?? "(no route)"
        if options.routeAsScreenView { CrashReporter.logScreenView(route) }
        // In crash-readable memory while it runs: a crash report lists it among the requests in flight.
        let traceID = options.traceID(request)
        let token = CrashReporter.beginRequest(method: request.method.rawValue, route: route, requestID: context.id,
                                               traceID: traceID ?? "")
        defer { CrashReporter.endRequest(token) }
        let started = ContinuousClock.now
        do {
            let response = try await next(request, context)
            finish(request, context, route: route, traceID: traceID, status: response.status.code, started: started, error: nil)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            finish(request, context, route: route, traceID: traceID, status: status, started: started, error: error)
            throw error
        }
    }

    private func finish(_ request: Request, _ context: Context, route: String, traceID: String?, status: Int,
                        started: ContinuousClock.Instant, error: (any Error)?) {
        let method = request.method.rawValue
        let requestID = context.id
        if options.breadcrumbs {
            let elapsed = ContinuousClock.now - started
            let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
            let level: CrashReporter.LogLevel = status >= 500 ? .error : status >= 400 ? .warning : .info
            var metadata = [
                "method": method, "route": route, "status": String(status),
                "duration_ms": String(format: "%.1f", milliseconds), "request_id": requestID,
            ]
            if let traceID { metadata["trace_id"] = traceID }
            CrashReporter.log("\(method) \(route) \(status)", level: level, tag: "http", metadata: metadata)
        }
        guard options.reportsServerErrors, status >= 500 else { return }
        guard let suppressed = limiter.take() else { return }
        var userInfo: [ErrorPayloadKey: ErrorPayloadValue] = [
            "route": .string(route), "method": .string(method), "status": .int(status), "request_id": .string(requestID),
        ]
        if let traceID { userInfo["trace_id"] = .string(traceID) }
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
final class ReportLimiter: Sendable {
    private struct Window {
        var start: ContinuousClock.Instant
        var taken = 0
        var suppressed = 0
    }
    private let perMinute: Int
    private let window: Mutex<Window>

    init(perMinute: Int) {
        self.perMinute = perMinute
        self.window = Mutex(Window(start: .now))
    }

    /// nil when over the limit; otherwise how many were refused since the last one allowed.
    func take(now: ContinuousClock.Instant = .now) -> Int? {
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
