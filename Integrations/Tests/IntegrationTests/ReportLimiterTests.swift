// The middleware's limit on non-fatal reports, on a clock the test moves.
@testable import CrashReportingHummingbird
import Hummingbird
import Testing

@Test("at most N reports a minute; the next one allowed says how many were dropped")
func reportLimiter() {
    let limiter = ReportLimiter(perMinute: 3)
    let start = ContinuousClock.now
    #expect((0..<3).map { _ in limiter.take(now: start) } == [0, 0, 0])
    #expect(limiter.take(now: start + .seconds(10)) == nil)
    #expect(limiter.take(now: start + .seconds(59)) == nil)
    #expect(limiter.take(now: start + .seconds(60)) == 2, "a new minute: allowed, with the 2 dropped")
    #expect(limiter.take(now: start + .seconds(61)) == 0)
}

@Test("the trace id of a W3C traceparent header; malformed or all-zero ids are none")
func traceparent() {
    typealias Middleware = CrashReportingMiddleware<BasicRequestContext>
    #expect(Middleware.traceID(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") == "4bf92f3577b34da6a3ce929d0e0e4736")
    #expect(Middleware.traceID(traceparent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01") == nil)
    #expect(Middleware.traceID(traceparent: "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01") == nil, "upper case is invalid")
    #expect(Middleware.traceID(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01") == nil, "31 digits")
    #expect(Middleware.traceID(traceparent: "garbage") == nil)
}
