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
    @_spi(ServerIntegrations)
    public static func beginRequest(method: String, route: String, requestIDUTF8 requestID: UnsafeBufferPointer<UInt8>,
                                    traceID: String) -> RequestToken {
        let started = ccr_request_clock_ns()
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
    private static func utf8<R>(of text: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
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
    /// "12.3"), `request_id`, then `trace_id` and `span_id` when given. Written from a buffer on the
    /// stack, with no allocation, when no text holds a byte JSON escapes and all fits in 1 KiB;
    /// otherwise through `log(_:level:tag:metadataPairs:)`, the same breadcrumb. Returns true when
    /// it was written from the stack buffer.
    @discardableResult
    public static func logHTTPRequest(method: String, route: String, status: Int, durationTenthsOfMillisecond tenths: Int,
                                      requestID: String, traceID: String? = nil, spanID: String? = nil) -> Bool {
        utf8(of: requestID) {
            logHTTPRequest(method: method, route: route, status: status, durationTenthsOfMillisecond: tenths, requestIDUTF8: $0,
                           traceID: traceID, spanID: spanID)
        }
    }

    /// `logHTTPRequest` with the request id as UTF-8 bytes (see `beginRequest(method:route:requestIDUTF8:traceID:)`).
    @_spi(ServerIntegrations) @discardableResult
    public static func logHTTPRequest(method: String, route: String, status: Int, durationTenthsOfMillisecond tenths: Int,
                                      requestIDUTF8 requestID: UnsafeBufferPointer<UInt8>, traceID: String? = nil,
                                      spanID: String? = nil) -> Bool {
        let level: LogLevel = status >= 500 ? .error : status >= 400 ? .warning : .info
        let written = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1024) { buffer -> Bool in
            var out = PlainBytes(buffer)
            out.text(method)
            out.ascii(" ")
            out.text(route)
            out.ascii(" ")
            out.decimal(status)
            let messageLength = out.count
            out.ascii("{\"method\":")
            out.quoted(method)
            out.ascii(",\"route\":")
            out.quoted(route)
            out.ascii(",\"status\":\"")
            out.decimal(status)
            out.ascii("\",\"duration_ms\":\"")
            out.decimal(tenths / 10)
            out.ascii(".")
            out.decimal(tenths % 10)
            out.ascii("\",\"request_id\":")
            out.quoted(requestID)
            if let traceID {
                out.ascii(",\"trace_id\":")
                out.quoted(traceID)
                if let spanID {
                    out.ascii(",\"span_id\":")
                    out.quoted(spanID)
                }
            }
            out.ascii("}")
            guard !out.failed, messageLength <= maximumMessageCharacters, let base = buffer.baseAddress else { return false }
            base.withMemoryRebound(to: CChar.self, capacity: out.count) { bytes in
                ccr_breadcrumb_append(level.rawValue, 0, "http", 4, bytes, messageLength, bytes + messageLength, out.count - messageLength)
            }
            return true
        }
        guard !written else { return true }
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

/// Bytes written into a fixed buffer: texts copied as they are, and `failed` once one would not fit
/// or (`quoted`) holds a byte a JSON string escapes (a quote, a backslash, a control character),
/// which `logHTTPRequest` leaves to the escaping writer.
private struct PlainBytes {
    let buffer: UnsafeMutableBufferPointer<UInt8>
    var count = 0
    var failed = false

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) { self.buffer = buffer }

    mutating func bytes(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard !failed, bytes.count <= buffer.count - count, let target = buffer.baseAddress else {
            failed = true
            return
        }
        if let source = bytes.baseAddress { (target + count).initialize(from: source, count: bytes.count) }
        count += bytes.count
    }

    mutating func ascii(_ text: StaticString) {
        text.withUTF8Buffer { bytes($0) }
    }

    mutating func text(_ text: String, plainOnly: Bool = false) {
        let copied = text.utf8.withContiguousStorageIfAvailable { source -> Bool in
            if plainOnly, Self.needsEscape(source) { return false }
            bytes(source)
            return true
        }
        if copied != true { failed = true }
    }

    /// Whether any byte is one a JSON string escapes: below 0x20, a quote or a backslash (eight
    /// bytes at a time: a byte loop was a tenth of the middleware's samples in
    /// tools/profile-middleware).
    static func needsEscape(_ source: UnsafeBufferPointer<UInt8>) -> Bool {
        JSONStringReader.plainRun(source, from: 0).end < source.count
    }

    mutating func quoted(_ text: String) {
        ascii("\"")
        self.text(text, plainOnly: true)
        ascii("\"")
    }

    mutating func quoted(_ utf8: UnsafeBufferPointer<UInt8>) {
        ascii("\"")
        if Self.needsEscape(utf8) { failed = true } else { bytes(utf8) }
        ascii("\"")
    }

    mutating func decimal(_ value: Int) {
        if value < 0 { ascii("-") }
        var length = 1
        var power: UInt = 10
        while length < 20 && value.magnitude >= power {   // UInt.max has 20 digits
            length += 1
            power = power.multipliedReportingOverflow(by: 10).partialValue
        }
        guard !failed, length <= buffer.count - count else {
            failed = true
            return
        }
        var rest = value.magnitude
        for position in stride(from: count + length - 1, through: count, by: -1) {
            buffer[position] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
        count += length
    }
}
