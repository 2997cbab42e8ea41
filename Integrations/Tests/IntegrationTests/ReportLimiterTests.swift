// The middleware's limit on non-fatal reports, on a clock the test moves.
import CrashReportingServerCore
import Foundation
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
    let binding = ServiceContextBinding()
    ServiceContext.withValue(context) {
        #expect(TraceIdentity.resolve(traceparent: header) == TraceIdentity(traceID: "4bf92f3577b34da6a3ce929d0e0e4736", spanID: "00f067aa0ba902b7"))
        #expect(TraceIdentity.current(binding) == TraceIdentity(traceID: "4bf92f3577b34da6a3ce929d0e0e4736", spanID: "00f067aa0ba902b7"),
                "the binding check lets a bound context's trace through")
    }
    #expect(TraceIdentity.current == nil)
}

@Test("the binding check sees a ServiceContext bound in a task, after a suspension, in a child task and on a thread outside any task; none outside")
func serviceContextBinding() async {
    let binding = ServiceContextBinding()
    var context = ServiceContext.topLevel
    context[W3CTestInstrument.SpanKey.self] = "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"
    #expect(binding.isUnbound, "nothing bound: unbound (the probe at init found the runtime's binding)")
    await ServiceContext.withValue(context) {
        #expect(!binding.isUnbound)
        await Task.yield()
        #expect(!binding.isUnbound, "after a suspension")
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { binding.isUnbound }
            for await unbound in group { #expect(!unbound, "a child task inherits its parent's binding") }
        }
        let detached = await Task.detached { binding.isUnbound }.value
        #expect(detached, "a detached task inherits none")
    }
    ServiceContext.$current.withValue(nil) {
        #expect(!binding.isUnbound, "nil bound explicitly: not known to be unbound, so current is asked (and says nil)")
    }
    #expect(binding.isUnbound)
    // Outside any task (a thread of its own): the runtime's thread-local bindings.
    let bound = context
    let outside = await withCheckedContinuation { (done: CheckedContinuation<[Bool], Never>) in
        Thread {
            var seen = [binding.isUnbound]
            ServiceContext.withValue(bound) { seen.append(binding.isUnbound) }
            seen.append(binding.isUnbound)
            done.resume(returning: seen)
        }.start()
    }
    #expect(outside == [true, false, true], "on a thread outside any task: unbound, bound within withValue, unbound after")
}
