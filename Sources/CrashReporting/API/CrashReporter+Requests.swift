// Requests in flight, for servers: a framework middleware calls `beginRequest` as a request starts
// and `endRequest` as it ends, and a crash report lists the requests that were running (route,
// method, request id, trace id, age, and whether it started on the crashing thread). The table is
// 128 fixed slots in static memory, read by the signal handler without locks.
import CCrashCapture
import CrashReportModel

extension CrashReporter {
    /// A request's slot in the table; pass it to `endRequest`.
    public struct RequestToken: Sendable, Equatable {
        let slot: Int32
        /// When the request began, in nanoseconds of CLOCK_MONOTONIC (the clock its age at a crash
        /// is read on).
        public let startedNanoseconds: UInt64
        /// False when every slot was taken (the request is counted as dropped in reports).
        public var isRecorded: Bool { slot != 0 }
        /// Nanoseconds since the request began (one clock read).
        public var elapsedNanoseconds: UInt64 {
            let now = ccr_request_clock_ns()
            return now > startedNanoseconds ? now - startedNanoseconds : 0
        }
    }

    /// Records a request as in flight. `route` is the pattern (`/users/{id}`), not the path, so no
    /// id or query string is kept. Texts are cut at 16 (method), 192 (route) and 64 bytes (ids).
    /// Lock-free and allocation-free; works before `start` too (the table is static).
    public static func beginRequest(method: String, route: String, requestID: String = "", traceID: String = "") -> RequestToken {
        utf8(of: requestID) { beginRequest(method: method, route: route, requestIDUTF8: $0, traceID: traceID) }
    }

    /// `beginRequest` with the request id as UTF-8 bytes, for an integration that holds it without
    /// a String (CrashReportingHummingbird's ids: a String of more than 15 bytes is an allocation).
    /// With `routeAsScreenView`, the route is logged as a screen view first (`logScreenView`), in
    /// the append that reads the request's start (`ccr_breadcrumb_request`, Decision 0058).
    @_spi(ServerIntegrations)
    public static func beginRequest(method: String, route: String, requestIDUTF8 requestID: UnsafeBufferPointer<UInt8>,
                                    traceID: String, routeAsScreenView: Bool = false) -> RequestToken {
        let started: UInt64
        if routeAsScreenView, route.utf8.count <= maximumMessageCharacters {
            started = utf8(of: route) { ccr_breadcrumb_request(1, 1, "screen", 6, $0.baseAddress, $0.count) }
        } else {
            if routeAsScreenView { logScreenView(route) }   // cut to the message limit, as any screen view
            started = ccr_request_clock_ns()
        }
        let slot = utf8(of: method) { m in
            utf8(of: route) { r in
                utf8(of: traceID) { t in
                    ccr_request_begin(m.baseAddress, m.count, r.baseAddress, r.count, requestID.baseAddress, requestID.count,
                                      t.baseAddress, t.count, started)
                }
            }
        }
        return RequestToken(slot: slot, startedNanoseconds: started)
    }

    /// `text`'s UTF-8 without the `var` copy `withUTF8` needs (a retain and a release of a heap
    /// String, on every request's route: about half of `beginRequest`'s share in
    /// tools/profile-middleware); a String without contiguous UTF-8 is copied as before.
    @inline(__always)
    static func utf8<R>(of text: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = text
        return copy.withUTF8(body)
    }

    /// Ends what `beginRequest` started.
    public static func endRequest(_ token: RequestToken) {
        ccr_request_end(token.slot)
    }

    /// Requests begun and not yet ended in this process.
    public static var requestsInFlight: Int { Int(ccr_requests_in_flight()) }

    /// The "http" breadcrumb of a finished request, as the server integrations write it (tag
    /// "http"): the message "METHOD route status"; level error for a 5xx, warning for a 4xx, else
    /// info; metadata `method`, `route`, `status`, `duration_ms` (tenths of a millisecond, e.g.
    /// "12.3"; a negative one as 0), `request_id`, then `trace_id` and `span_id` when given. Written
    /// from a buffer on the stack, with no allocation, when it all fits in 1 KiB (texts escaped as
    /// JSON needs); otherwise through `log(_:level:tag:metadataPairs:)`, the same breadcrumb with
    /// its texts cut to the usual limits. Returns true when it was written from the stack buffer.
    @discardableResult
    public static func logHTTPRequest(method: String, route: String, status: Int, durationTenthsOfMillisecond tenths: Int,
                                      requestID: String, traceID: String? = nil, spanID: String? = nil) -> Bool {
        utf8(of: requestID) {
            logHTTPRequest(method: method, route: route, status: status, durationTenthsOfMillisecond: tenths, requestIDUTF8: $0,
                           traceID: traceID, spanID: spanID)
        }
    }

    /// `logHTTPRequest` with the request id as UTF-8 bytes (see `beginRequest(method:route:requestIDUTF8:traceID:)`).
    /// With `startedNanoseconds` (a `RequestToken`'s), the duration is measured from it as the
    /// breadcrumb is written, and `tenths` is ignored; the breadcrumb is then ordered as the
    /// request's screen view is (`ccr_breadcrumb_request`).
    @_spi(ServerIntegrations) @discardableResult
    public static func logHTTPRequest(method: String, route: String, status: Int, durationTenthsOfMillisecond tenths: Int,
                                      requestIDUTF8 requestID: UnsafeBufferPointer<UInt8>, traceID: String? = nil,
                                      spanID: String? = nil, startedNanoseconds: UInt64 = 0) -> Bool {
        var measured: Int64 = 0
        // Formatted and escaped in C (ccr_breadcrumb_http): building it here, byte by byte through
        // Swift's buffer and String accessors, was half of the breadcrumb's share in
        // tools/profile-middleware.
        let written = utf8(of: method) { m in
            utf8(of: route) { r in
                utf8(of: traceID ?? "") { t in
                    utf8(of: spanID ?? "") { sp in
                        ccr_breadcrumb_http(m.baseAddress, m.count, r.baseAddress, r.count, Int64(status), Int64(tenths),
                                            startedNanoseconds, requestID.baseAddress, requestID.count, t.baseAddress, t.count,
                                            traceID == nil ? 0 : 1, sp.baseAddress, sp.count,
                                            traceID != nil && spanID != nil ? 1 : 0, maximumMessageCharacters, &measured)
                    }
                }
            }
        } != 0
        guard !written else { return true }
        let level: LogLevel = status >= 500 ? .error : status >= 400 ? .warning : .info
        let tenths = Int(clamping: measured)
        var pairs: [(key: String, value: String)] = [
            ("method", method), ("route", route), ("status", String(status)), ("duration_ms", "\(tenths / 10).\(tenths % 10)"),
            ("request_id", String(decoding: requestID, as: UTF8.self)),
        ]
        if let traceID {
            pairs.append(("trace_id", traceID))
            if let spanID { pairs.append(("span_id", spanID)) }
        }
        log("\(method) \(route) \(status)", level: level, tag: "http", metadataPairs: pairs)
        return false
    }
}
