// CrashReporter.logHTTPRequest, the server integrations' "http" breadcrumb: written from a stack
// buffer when it can, it must give the breadcrumb the escaping writer gives for the same request.
import CrashReportModel
import CrashReporting
import Foundation
import Testing

extension InProcessSession {
    @Suite("http breadcrumbs")
    struct HTTPBreadcrumbTests {
        struct Request: CustomStringConvertible {
            var method = "GET", route = "/users/:id", status = 200, tenths = 123, requestID = "9F2C6A1E-53B4-4C7A-9D3E-0B5F1A2C3D4E"
            var traceID: String? = nil, spanID: String? = nil
            /// Whether the stack buffer can take it: no byte to escape, and all within 1 KiB.
            var plain = true
            var description: String { "\(method) \(route) \(status) \(tenths) \(requestID) \(traceID ?? "-") \(spanID ?? "-")" }
        }

        static let requests: [Request] = {
            var cases: [Request] = [Request()]
            cases.append(Request(status: 404, tenths: 0, traceID: "4bf92f3577b34da6a3ce929d0e0e4736"))
            cases.append(Request(method: "POST", route: "/orders", status: 500, tenths: 7, requestID: "r-1",
                                 traceID: "4bf92f3577b34da6a3ce929d0e0e4736", spanID: "00f067aa0ba902b7"))
            cases.append(Request(spanID: "span without a trace: not written"))
            cases.append(Request(route: "/caf\u{E9}/\u{65E5}\u{672C}\u{2028}\u{7F}", requestID: "id-\u{1F600}"))   // UTF-8 and DEL as they are
            cases.append(Request(route: "/a \"quoted\" \\ route", requestID: "line\nbreak\t\u{1}", plain: false))   // escaped: the other writer
            cases.append(Request(traceID: "trace\"quote", plain: false))
            cases.append(Request(requestID: "nul\u{0}byte", plain: false))
            // A route near 1000 bytes: the message is at the limit, and with the metadata (which
            // repeats it) the whole is over 1 KiB.
            cases.append(Request(route: "/" + String(repeating: "r", count: 990), plain: false))
            cases.append(Request(route: "/" + String(repeating: "s", count: 900), requestID: String(repeating: "i", count: 200), plain: false))
            cases.append(Request(route: NSString(string: "/made/by/nsstring") as String, requestID: NSString(string: "ns-id") as String))
            // Digits: powers of ten, where a digit count is easiest to get wrong, and the extremes.
            cases.append(Request(status: 100, tenths: 100))
            cases.append(Request(status: 1000, tenths: 10))
            cases.append(Request(status: 10, tenths: 1000))
            cases.append(Request(status: 9, tenths: 99_999))
            cases.append(Request(status: -1, tenths: 1_234_567_890))
            cases.append(Request(status: Int.max, tenths: Int.max))
            cases.append(Request(status: Int.min, tenths: 10_000_000_000_000_000))
            cases.append(Request(method: "", route: "", requestID: ""))
            return cases
        }()

        @Test("the stack-buffer writer gives the escaping writer's breadcrumb, for plain, escaped, long and bridged texts")
        func sameBreadcrumbEitherWay() throws {
            try SharedReporter.start()
            for request in Self.requests {
                let fromStack = CrashReporter.logHTTPRequest(method: request.method, route: request.route, status: request.status,
                                                             durationTenthsOfMillisecond: request.tenths, requestID: request.requestID,
                                                             traceID: request.traceID, spanID: request.spanID)
                #expect(fromStack == request.plain, "\(request): written from the stack buffer: \(fromStack)")
                // The breadcrumb as the middlewares wrote it before: pairs through the escaping writer.
                var pairs: [(key: String, value: String)] = [
                    ("method", request.method), ("route", request.route), ("status", String(request.status)),
                    ("duration_ms", "\(request.tenths / 10).\(request.tenths % 10)"), ("request_id", request.requestID),
                ]
                if let trace = request.traceID {
                    pairs.append(("trace_id", trace))
                    if let span = request.spanID { pairs.append(("span_id", span)) }
                }
                let level: CrashReporter.LogLevel = request.status >= 500 ? .error : request.status >= 400 ? .warning : .info
                CrashReporter.log("\(request.method) \(request.route) \(request.status)", level: level, tag: "http", metadataPairs: pairs)
            }
            let crumbs = try #require(CrashReporter.contextSnapshot()?.breadcrumbs.filter { $0.tag == "http" })
            let ours = try #require(crumbs.count >= 2 * Self.requests.count ? Array(crumbs.suffix(2 * Self.requests.count)) : nil,
                                    "\(crumbs.count) http breadcrumbs")
            for (index, request) in Self.requests.enumerated() {
                let fast = ours[2 * index], reference = ours[2 * index + 1]
                #expect(fast.message == reference.message && fast.level == reference.level && fast.kind == reference.kind,
                        "\(request): \(fast.message) \(fast.level) against \(reference.message) \(reference.level)")
                #expect(fast.metadata == reference.metadata, "\(request): \(String(describing: fast.metadata)) against \(String(describing: reference.metadata))")
                // The ring keeps a breadcrumb's metadata only up to its slot's size: the long
                // requests' is dropped by both writers alike.
                if request.route.utf8.count + request.requestID.utf8.count < 512 {
                    #expect(fast.metadata?["duration_ms"] == "\(request.tenths / 10).\(request.tenths % 10)", "\(request)")
                }
            }
            // The first request in full, as a reader sees it.
            #expect(ours[0].message == "GET /users/:id 200" && ours[0].level == "info")
            #expect(ours[0].metadata == ["method": "GET", "route": "/users/:id", "status": "200", "duration_ms": "12.3",
                                         "request_id": "9F2C6A1E-53B4-4C7A-9D3E-0B5F1A2C3D4E"])
        }

        @Test("the check for bytes to escape, eight at a time, decides as a byte-by-byte check does, at every position")
        func escapeCheckByPosition() throws {
            try SharedReporter.start()
            // Every ASCII character, and characters whose UTF-8 holds bytes that differ from a
            // quote (0xA2: U+00A2 is C2 A2), a backslash (0xDC: U+071C is DC 9C) or a control
            // character (0x80…0x9F) by the top bit only, at each position of a 21-byte text (two words and a tail of 5), in each text
            // the writer checks (route, request id, trace id). A byte loop was the reference: a
            // text needs the escaping writer exactly when it holds a control character, a quote
            // or a backslash.
            let characters = (0..<128).map { String(UnicodeScalar(UInt8($0))) } + ["\u{80}", "\u{9F}", "\u{A2}", "\u{71C}", "\u{5C5C}", "\u{1F600}"]
            var mismatches: [String] = []
            for character in characters {
                let escaped = character.utf8.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
                for position in 0...20 {
                    let text = String(repeating: "a", count: position) + character + String(repeating: "b", count: 20 - position)
                    for field in 0..<3 {
                        let fromStack = CrashReporter.logHTTPRequest(method: "GET", route: field == 0 ? text : "/r", status: 200,
                                                                     durationTenthsOfMillisecond: 1, requestID: field == 1 ? text : "id",
                                                                     traceID: field == 2 ? text : nil)
                        if fromStack == escaped { mismatches.append("\(character.unicodeScalars.map { $0.value }) at \(position) in field \(field)") }
                    }
                }
            }
            let wrong = mismatches.count
            #expect(wrong == 0, "cases that took the wrong writer, e.g. \(mismatches.prefix(5))")
        }
    }
}
