// The middleware's limit on non-fatal reports, on a clock the test moves.
import CrashReportingServerCore
import Instrumentation
import ServiceContextModule
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

@Test("the trace of a W3C traceparent header; malformed or all-zero ids are none")
func traceparent() {
    let trace = TraceIdentity(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    #expect(trace == TraceIdentity(traceID: "4bf92f3577b34da6a3ce929d0e0e4736", spanID: "00f067aa0ba902b7"))
    #expect(TraceIdentity(traceparent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01") == nil)
    #expect(TraceIdentity(traceparent: "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01") == nil, "upper case is invalid")
    #expect(TraceIdentity(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01") == nil, "31 digits")
    #expect(TraceIdentity(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01")?.spanID == nil, "a zero span id is none")
    #expect(TraceIdentity(traceparent: "garbage") == nil)
}

/// A tracer's instrument as swift-otel's behaves: it injects the context's span as `traceparent`.
struct W3CTestInstrument: Instrument {
    enum SpanKey: ServiceContextKey { typealias Value = String }
    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
        where Extract.Carrier == Carrier {}
    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
        where Inject.Carrier == Carrier {
        guard let span = context[SpanKey.self] else { return }
        injector.inject("00-\(span)-01", forKey: "traceparent", into: &carrier)
    }
}

@Test("the current ServiceContext's trace and span, as the bootstrapped instrument propagates it; else the header's")
func serviceContextTrace() {
    InstrumentationSystem.bootstrap(W3CTestInstrument())   // the only test in this process that bootstraps
    let header = "00-11111111111111111111111111111111-2222222222222222-01"
    #expect(TraceIdentity.resolve(traceparent: header)?.traceID == "11111111111111111111111111111111", "no context: the header")
    var context = ServiceContext.topLevel
    context[W3CTestInstrument.SpanKey.self] = "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"
    ServiceContext.withValue(context) {
        #expect(TraceIdentity.resolve(traceparent: header) == TraceIdentity(traceID: "4bf92f3577b34da6a3ce929d0e0e4736", spanID: "00f067aa0ba902b7"))
    }
    #expect(TraceIdentity.current == nil)
}
