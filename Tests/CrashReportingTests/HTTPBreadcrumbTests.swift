// CrashReporter.logHTTPRequest, the server integrations' "http" breadcrumb: kept as its fields and
// formatted by the session's reader, or formatted and escaped in C from a stack buffer, when it
// fits (ccr_breadcrumb_http), it must give the breadcrumb the Swift writer gives for the same request.
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
            /// Whether the stack buffer can take it: all within 1 KiB once escaped, the message within 1,000 bytes.
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
            cases.append(Request(route: "/a \"quoted\" \\ route", requestID: "line\nbreak\t\u{1}\r\u{1F}"))   // escaped in C
            cases.append(Request(traceID: "trace\"quote", spanID: "span\\slash"))
            cases.append(Request(requestID: "nul\u{0}byte"))
            // Escapes that take it over 1 KiB: 300 quotes are 600 bytes escaped (the Swift writer).
            cases.append(Request(route: "/" + String(repeating: "\"", count: 300), requestID: String(repeating: "\u{1}", count: 100), plain: false))
            // A route near 1000 bytes: the message is at the limit, and with the metadata (which
            // repeats it) the whole is over 1 KiB.
            cases.append(Request(route: "/" + String(repeating: "r", count: 990), plain: false))
            cases.append(Request(route: "/" + String(repeating: "s", count: 900), requestID: String(repeating: "i", count: 200), plain: false))
            // Kept as its fields, formatted by the reader (Decision 0060), unless even escaped
            // throughout it could not fit: this route is formatted as it is written, and fits.
            cases.append(Request(route: "/" + String(repeating: "p", count: 150), traceID: "4bf92f3577b34da6a3ce929d0e0e4736"))
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

        @Test("every ASCII character and six others, at every position of each text, read back as it was written, from the stack buffer")
        func escapesByPosition() throws {
            try SharedReporter.start()
            // Every ASCII character, and characters whose UTF-8 holds bytes that differ from a
            // quote (0xA2: U+00A2 is C2 A2), a backslash (0xDC: U+071C is DC 9C) or a control
            // character (0x80…0x9F) by the top bit only, at each position of a 21-byte text, in
            // each text C escapes (route, request id, trace id, span id). Read back through the
            // session's reader and the JSON decoder, each must be the text written.
            let characters = (0..<128).map { String(UnicodeScalar(UInt8($0))) } + ["\u{80}", "\u{9F}", "\u{A2}", "\u{71C}", "\u{5C5C}", "\u{1F600}"]
            var mismatches: [String] = []
            var written = 0
            for character in characters {
                var texts: [String] = []
                for position in 0...20 {
                    let text = String(repeating: "a", count: position) + character + String(repeating: "b", count: 20 - position)
                    texts.append(text)
                    let fromStack = CrashReporter.logHTTPRequest(method: "GET", route: text, status: 200, durationTenthsOfMillisecond: 1,
                                                                 requestID: text, traceID: text, spanID: text)
                    if !fromStack { mismatches.append("\(character.unicodeScalars.map { $0.value }) at \(position): not from the stack") }
                }
                let crumbs = try #require(CrashReporter.contextSnapshot()?.breadcrumbs.filter { $0.tag == "http" }.suffix(texts.count))
                for (text, crumb) in zip(texts, crumbs) {
                    let metadata = crumb.metadata ?? [:]
                    written += 1
                    // The reader writes a message up to its first NUL byte (both writers alike).
                    let message = character == "\u{0}" ? "GET " + text.prefix { $0 != "\u{0}" } : "GET \(text) 200"
                    if crumb.message != message || metadata["route"] != text || metadata["request_id"] != text
                        || metadata["trace_id"] != text || metadata["span_id"] != text {
                        mismatches.append("\(character.unicodeScalars.map { $0.value }) in \(text.debugDescription): read back \(crumb.message.debugDescription) \(metadata)")
                    }
                }
            }
            #expect(written == characters.count * 21)
            #expect(mismatches.isEmpty, "\(mismatches.count) cases read back otherwise, e.g. \(mismatches.prefix(5))")
        }
    }
}
