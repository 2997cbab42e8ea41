// Vapor 4 middleware: the same as CrashReportingHummingbird's (CrashReportingServerCore does the
// bookkeeping): the request among the requests in flight while it runs, the route pattern as the
// screen view, an "http" breadcrumb as it ends, 5xx answers and thrown errors as rate-limited
// non-fatal reports. Use it as global middleware (`app.middleware.use(CrashReportingMiddleware())`):
// Vapor routes a request before it runs the global middleware (DefaultResponder sets
// `request.route`, then runs the route's cached chain), so the route pattern is known, and a URL no
// route matches comes through as "(no route)". As route middleware (`app.grouped(...)`) it works
// too, for the routes registered through it only.
// A future-based `Middleware`, not an `AsyncMiddleware`: Vapor runs an AsyncMiddleware in a Task
// of its own and its `next` through another, which cost ~30 µs of CPU a request on this machine
// (tools/bench-middleware; Docs/Decisions/0023); the bookkeeping itself needs no suspension.
import CrashReporting
@_exported import CrashReportingServerCore
import Synchronization
import Vapor

public struct CrashReportingMiddleware: Middleware {
    public struct Options: Sendable {
        /// Breadcrumbs, screen views, non-fatal reports and their rate limit.
        public var reporting = RequestReportingOptions()
        /// The request's trace. Default: its ServiceContext's (`request.serviceContext`, set by
        /// Vapor's TracingMiddleware before this one, with a tracer bootstrapped), else the W3C
        /// `traceparent` header's.
        public var trace: @Sendable (Request) -> TraceIdentity? = { request in
            TraceIdentity(context: request.serviceContext)
                ?? request.headers.first(name: "traceparent").flatMap { TraceIdentity(traceparent: $0) }
        }

        public init() {}
    }

    public let options: Options
    private let reporter: RequestReporter

    public init(options: Options = Options()) {
        self.options = options
        self.reporter = RequestReporter(options: options.reporting)
    }

    /// Vapor's route pattern in its own notation, "/users/:id"; nil when no route matched the URL.
    public static func routePattern(_ request: Request) -> String? {
        request.route.map(RoutePatterns.shared.pattern(of:))
    }

    public func respond(to request: Request, chainingTo next: any Responder) -> EventLoopFuture<Response> {
        let reported = reporter.begin(method: request.method.rawValue, route: Self.routePattern(request) ?? "(no route)",
                                      requestID: request.id, trace: options.trace(request))
        let reporter = self.reporter
        return next.respond(to: request).always { result in
            switch result {
            case .success(let response): reporter.end(reported, status: Int(response.status.code), error: nil)
            case .failure(let error): reporter.end(reported, status: Int((error as? any AbortError)?.status.code ?? 500), error: error)
            }
        }
    }
}

/// Each route's pattern, joined once: joining a route's path components took an array, a string per
/// component and the joined string on every request. Routes are registered at boot, so the table
/// stays small; it keeps the routes it names (an identifier is never reused while its route is
/// kept), and past 4096 routes joins without keeping.
final class RoutePatterns: Sendable {
    static let shared = RoutePatterns()
    private let patterns = Mutex<[ObjectIdentifier: (route: Route, pattern: String)]>([:])

    func pattern(of route: Route) -> String {
        if let known = patterns.withLock({ $0[ObjectIdentifier(route)]?.pattern }) { return known }
        let pattern = "/" + route.path.map(\.description).joined(separator: "/")
        patterns.withLock { table in
            if table.count < 4096 { table[ObjectIdentifier(route)] = (route, pattern) }
        }
        return pattern
    }
}
