// Hummingbird 2 middleware: what the server was doing, in the crash report. Each request is in the
// crash-readable table of requests in flight while it runs, leaves a screen-view breadcrumb when it
// starts (its route pattern, so a crash mid-request names the route that was being served) and an
// "http" breadcrumb when it ends (method, route, status, duration, request id, trace); a 5xx answer
// or an error thrown by a handler becomes a non-fatal report, at most `maxReportsPerMinute` of
// them. The bookkeeping is CrashReportingServerCore's, shared with CrashReportingVapor. Add it
// before the routes: Hummingbird bakes a router's middleware into each route as it is registered.
import CrashReporting
@_exported import CrashReportingServerCore
import HTTPTypes
import Hummingbird

/// Built once: `HTTPField.Name(_:)` validates its text each time.
private let traceparentField = HTTPField.Name("traceparent")!

public struct CrashReportingMiddleware<Context: RequestContext>: RouterMiddleware {
    public struct Options: Sendable {
        /// Breadcrumbs, screen views, non-fatal reports and their rate limit.
        public var reporting = RequestReportingOptions()
        /// The request's trace, carried by its breadcrumb, its slot among the requests in flight and
        /// its non-fatal report, so a report can be joined to the trace. Default: the current
        /// ServiceContext's (a tracer bootstrapped and Hummingbird's TracingMiddleware before this
        /// one), else the W3C `traceparent` header's.
        public var trace: @Sendable (Request) -> TraceIdentity? = { request in
            TraceIdentity.resolve(traceparent: request.headers[traceparentField])
        }

        public init() {}
    }

    public let options: Options
    private let reporter: RequestReporter

    public init(options: Options = Options()) {
        self.options = options
        self.reporter = RequestReporter(options: options.reporting)
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // The router matched the route before running the route's middleware.
        let reported = reporter.begin(method: request.method.rawValue, route: context.endpointPath ?? "(no route)",
                                      requestID: context.id, trace: options.trace(request))
        do {
            let response = try await next(request, context)
            reporter.end(reported, status: response.status.code, error: nil)
            return response
        } catch {
            reporter.end(reported, status: (error as? any HTTPResponseError)?.status.code ?? 500, error: error)
            throw error
        }
    }
}
