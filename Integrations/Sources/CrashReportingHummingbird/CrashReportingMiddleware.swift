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
import Logging

/// The first `traceparent` field's value (the W3C form allows one), looked up only when the
/// ServiceContext has no trace, by a loop over the fields: `HTTPFields`' subscript goes through a
/// lazy filtered sequence and a join, a tenth of a point of the middleware's share in
/// tools/profile-middleware for a request without the header. `name` is made once, by the
/// caller's closure (`HTTPField.Name(_:)` validates its text each time, and a global would be a
/// `swift_once` call on every read).
private func traceparent(of fields: HTTPFields, name: HTTPField.Name) -> String? {
    for field in fields where field.name == name { return field.value }
    return nil
}

public struct CrashReportingMiddleware<Context: RequestContext>: RouterMiddleware {
    public struct Options: Sendable {
        /// Breadcrumbs, screen views, non-fatal reports and their rate limit.
        public var reporting = RequestReportingOptions()
        /// The request's trace, carried by its breadcrumb, its slot among the requests in flight and
        /// its non-fatal report, so a report can be joined to the trace. Default: the current
        /// ServiceContext's (a tracer bootstrapped and Hummingbird's TracingMiddleware before this
        /// one), else the W3C `traceparent` header's.
        public var trace: @Sendable (Request) -> TraceIdentity? = {
            [binding = ServiceContextBinding(), name = HTTPField.Name("traceparent")!] request in
            TraceIdentity.current(binding) ?? traceparent(of: request.headers, name: name).flatMap { TraceIdentity(traceparent: $0) }
        }

        public init() {}
    }

    public let options: Options
    private let reporter: RequestReporter
    private let requestIDs = RequestIDText()

    public init(options: Options = Options()) {
        self.options = options
        self.reporter = RequestReporter(options: options.reporting)
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // The router matched the route before running the route's middleware.
        let reported = reporter.begin(method: request.method.rawValue, route: context.endpointPath ?? "(no route)",
                                      requestIdentifier: requestIDs?.identifier(of: context) ?? RequestIdentifier(context.id),
                                      trace: options.trace(request))
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

/// Hummingbird's request id as its `description` writes it (the process's random prefix, then the
/// id's 64-bit counter as 16 hex digits), made without an allocation (a `RequestIdentifier`, up to
/// 32 bytes inline; the prefix has at most 16): `context.id` formats it through `String(_:radix:)`,
/// a character count, `String(repeating:)` and two concatenations, which was a quarter of the
/// middleware's samples in tools/profile-middleware, and a String of 17 bytes or more is an
/// allocation, freed on whichever thread ends the request. `RequestID`'s counter is not public, so
/// it is read as the struct's only 8 bytes; at init two fresh ids are formatted both ways, and
/// unless both agree (size, layout and format as expected) this is nil and `context.id` is used.
struct RequestIDText: Sendable {
    /// The id's text as `RequestIdentifier`'s inline words hold it, with the prefix written and the
    /// 16 digits' bytes (and the rest) zero: each id is this, with its digits stored at
    /// `prefixCount`. Two unaligned stores instead of copying the prefix byte by byte into a
    /// buffer a closure is given.
    private let template: (UInt64, UInt64, UInt64, UInt64)
    private let prefixCount: Int
    /// Whether a `RequestID` in a logger's metadata value is read straight from the value's bytes
    /// (its type compared, its 8 bytes loaded) instead of `as? RequestID`, a dynamic cast
    /// (`tryCast`, `swift_dynamicCast`: ~0.1 points of the middleware's share in
    /// tools/profile-middleware). Checked at init on a fresh id: true when the read gives it back.
    let readsContainer: Bool
    /// `RequestID`'s type metadata, as the value's container holds it. Kept here rather than in a
    /// static: a static is a lazy global, a `swift_once` call on every read.
    private let requestIDMetadata = UInt64(UInt(bitPattern: ObjectIdentifier(RequestID.self)))

    init?() {
        guard MemoryLayout<RequestID>.size == 8, MemoryLayout<RequestID>.stride == 8 else { return nil }
        var prefix: [UInt8]?
        for _ in 0..<2 {
            let probe = RequestID()
            let text = Array(probe.description.utf8)
            let digits = Self.digits(of: probe)
            guard text.count > 16, Array(text.suffix(16)) == digits else { return nil }
            let head = Array(text.dropLast(16))
            guard prefix == nil || prefix == head else { return nil }
            prefix = head
        }
        guard let prefix, prefix.count + 16 <= RequestIdentifier.inlineCapacity else { return nil }
        var template: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &template) { raw in raw.copyBytes(from: prefix) }
        self.template = template
        prefixCount = prefix.count
        let probe = RequestID(), metadata = requestIDMetadata
        let read = Self.words(of: .stringConvertible(probe))
        readsContainer = MemoryLayout<any CustomStringConvertible & Sendable>.size == 40
            && MemoryLayout<Logger.MetadataValue?>.size >= 40
            && read?.value == unsafeBitCast(probe, to: UInt64.self) && read?.type == metadata
            && Self.words(of: .stringConvertible("a string"))?.type != metadata
            && Self.words(of: .stringConvertible(12345 as Int))?.type != metadata
    }

    /// For a `.stringConvertible` metadata value, the first word of its existential container
    /// (`any CustomStringConvertible & Sendable`, 40 bytes on 64-bit platforms: three words of
    /// inline buffer, where an 8-byte value is stored, then the value's type metadata, then its
    /// witness table) and its type metadata word, read from the value's own bytes: the
    /// container is the case's payload, at the value's start. Binding the payload (`case
    /// .stringConvertible(let v)`) copied it into a new container each time, and `type(of:)` or a
    /// generic `withUnsafeBytes` were runtime calls. Trusted only as far as init's probe found it
    /// right (`readsContainer`). nil for any other case. `value` is `inout` so that its bytes are
    /// read where they are: a borrowed value was first copied (and later destroyed) through
    /// `Logger.MetadataValue`'s value witnesses.
    private static func words(of value: inout Logger.MetadataValue?) -> (value: UInt64, type: UInt64)? {
        guard case .stringConvertible? = value else { return nil }
        return withUnsafeBytes(of: &value) { raw in
            (raw.load(fromByteOffset: 0, as: UInt64.self), raw.load(fromByteOffset: 24, as: UInt64.self))
        }
    }

    private static func words(of value: Logger.MetadataValue?) -> (value: UInt64, type: UInt64)? {
        var value = value
        return words(of: &value)
    }

    /// The context's request id, or nil when its logger holds no `RequestID` under "hb.request.id".
    func identifier<Context: RequestContext>(of context: Context) -> RequestIdentifier? {
        identifier(of: context.logger)
    }

    func identifier(of logger: Logger) -> RequestIdentifier? {
        var value = logger[metadataKey: "hb.request.id"]
        if readsContainer {
            guard let words = Self.words(of: &value), words.type == requestIDMetadata else { return nil }
            return identifier(of: unsafeBitCast(words.value, to: RequestID.self))
        }
        guard case .stringConvertible(let stored)? = value, let id = stored as? RequestID else { return nil }
        return identifier(of: id)
    }

    /// What `id.description` gives, inline.
    func identifier(of id: RequestID) -> RequestIdentifier {
        Self.text(of: unsafeBitCast(id, to: UInt64.self), template: template, prefixCount: prefixCount)
    }

    /// `template` (a prefix of `prefixCount` bytes, 0 to 16, then zeros) with `value`'s 16 hex
    /// digits, most significant first, stored at the prefix's end: two 8-byte stores, unaligned
    /// unless the prefix has 0, 8 or 16 bytes (Hummingbird's has 16 in 15 processes out of 16;
    /// the tests try every length).
    static func text(of value: UInt64, template: (UInt64, UInt64, UInt64, UInt64), prefixCount at: Int) -> RequestIdentifier {
        precondition(at >= 0 && at + 16 <= RequestIdentifier.inlineCapacity)
        var words = template
        withUnsafeMutableBytes(of: &words) { raw in
            raw.storeBytes(of: hexDigits(UInt32(truncatingIfNeeded: value >> 32)).bigEndian, toByteOffset: at, as: UInt64.self)
            raw.storeBytes(of: hexDigits(UInt32(truncatingIfNeeded: value)).bigEndian, toByteOffset: at + 8, as: UInt64.self)
        }
        return RequestIdentifier(inlineWords: words, count: at + 16)
    }

    /// The eight hex digits of `half` as bytes, the last digit in the lowest byte: its nibbles
    /// spread one to a byte, then '0' added to every byte, and 39 more ('a' − '0' − 10) to those
    /// above 9.
    private static func hexDigits(_ half: UInt32) -> UInt64 {
        var n = UInt64(half)
        n = (n | n << 16) & 0x0000_FFFF_0000_FFFF
        n = (n | n << 8) & 0x00FF_00FF_00FF_00FF
        n = (n | n << 4) & 0x0F0F_0F0F_0F0F_0F0F
        let aboveNine = ((n &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        return n &+ 0x3030_3030_3030_3030 &+ aboveNine &* 39
    }

    /// The id's 16 digits as `text(of:template:prefixCount:)` writes them (no prefix): what init
    /// compares with `RequestID.description`.
    private static func digits(of id: RequestID) -> [UInt8] {
        text(of: unsafeBitCast(id, to: UInt64.self), template: (0, 0, 0, 0), prefixCount: 0).withUTF8 { Array($0) }
    }
}
