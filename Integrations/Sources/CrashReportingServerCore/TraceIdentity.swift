// The trace a request belongs to, as a report carries it: a W3C trace id and, when known, the span
// id. Taken from the current swift-distributed-tracing ServiceContext when a tracer is bootstrapped
// (the instrument injects it as a `traceparent`, the W3C form swift-otel and most tracers write,
// so no tracer-specific key is needed), else from the request's own `traceparent` header.
import Instrumentation
import ServiceContextModule

public struct TraceIdentity: Sendable, Equatable {
    /// 32 lower-case hex digits, not all zero.
    public var traceID: String
    /// 16 lower-case hex digits, when known.
    public var spanID: String?

    public init(traceID: String, spanID: String? = nil) {
        self.traceID = traceID
        self.spanID = spanID
    }

    /// The trace of a W3C trace-context `traceparent` value (`00-<32 hex>-<16 hex>-<2 hex>`), or
    /// nil when it is malformed or carries the all-zero ids the specification calls invalid.
    public init?(traceparent: String) {
        let parts = traceparent.split(separator: "-", omittingEmptySubsequences: false)
        func isID(_ part: Substring, _ length: Int) -> Bool {
            part.count == length && part.allSatisfy { $0.isHexDigit && !$0.isUppercase } && part.contains { $0 != "0" }
        }
        guard parts.count >= 4, parts[0].count == 2, isID(parts[1], 32) else { return nil }
        self.traceID = String(parts[1])
        self.spanID = isID(parts[2], 16) ? String(parts[2]) : nil
    }

    /// The trace of `context` as the bootstrapped instrument propagates it (nil with the no-op
    /// instrument, or when the context holds no span).
    public init?(context: ServiceContext) {
        // An empty context holds no span: nothing to inject, and no trip through the instrument
        // (a reader lock), a dictionary and an injector on every request.
        guard !context.isEmpty else { return nil }
        var carrier: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &carrier, using: DictionaryInjector())
        guard let value = carrier["traceparent"] else { return nil }
        self.init(traceparent: value)
    }

    /// The current task's ServiceContext's trace, if any.
    public static var current: TraceIdentity? {
        ServiceContext.current.flatMap { TraceIdentity(context: $0) }
    }

    /// The current ServiceContext's trace, else the one of `traceparent` (a request's header).
    public static func resolve(traceparent: String?) -> TraceIdentity? {
        current ?? traceparent.flatMap { TraceIdentity(traceparent: $0) }
    }
}

struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key.lowercased()] = value
    }
}
