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

    /// `current`, asked first of `binding` whether a ServiceContext is bound at all.
    public static func current(_ binding: ServiceContextBinding) -> TraceIdentity? {
        binding.isUnbound ? nil : current
    }

    /// The current ServiceContext's trace, else the one of `traceparent` (a request's header).
    public static func resolve(traceparent: String?) -> TraceIdentity? {
        current ?? traceparent.flatMap { TraceIdentity(traceparent: $0) }
    }
}

/// Whether the current task (or thread) has a ServiceContext bound, asked of the Swift runtime
/// with the task-local's key, found once. Most servers' requests run with none (no tracer, or no
/// tracing middleware before ours), and `ServiceContext.current` then costs a generic
/// `TaskLocal.get()` (its value copied through value witnesses) and a lazy global's `swift_once`
/// on every request: half of the trace's 0.3 points of the Hummingbird middleware's share in
/// tools/profile-middleware (Docs/Decisions/0061). The key is what `TaskLocal` itself passes to
/// the runtime: the `TaskLocal` object's address. At init, a context bound by `withValue` must be
/// found with it; if not, `isUnbound` is always false and `current` asks as before.
public struct ServiceContextBinding: Sendable {
    private let key: UInt
    private let usable: Bool

    public init() {
        key = UInt(bitPattern: Unmanaged.passUnretained(ServiceContext.$current).toOpaque())
        let probe = key
        usable = ServiceContext.$current.withValue(.topLevel) { Self.bound(probe) }
    }

    /// True only when no ServiceContext is bound, so `ServiceContext.current` is nil.
    public var isUnbound: Bool { usable && !Self.bound(key) }

    private static func bound(_ key: UInt) -> Bool {
        taskLocalValue(UnsafeRawPointer(bitPattern: key)!) != nil
    }
}

/// The Swift runtime's look-up of a task-local binding by key (the one `TaskLocal.get()` makes):
/// the bound value's address, or nil when the task and its parents (or, outside a task, the
/// thread) bind none.
@_silgen_name("swift_task_localValueGet")
private func taskLocalValue(_ key: UnsafeRawPointer) -> UnsafeMutableRawPointer?

struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key.lowercased()] = value
    }
}
