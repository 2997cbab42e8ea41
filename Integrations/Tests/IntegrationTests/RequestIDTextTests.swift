// CrashReportingHummingbird's request id text: made without RequestID.description's cost, it must
// be what description gives (the id Hummingbird's own log lines carry), for every id.
@testable import CrashReportingHummingbird
import Hummingbird
import Logging
import Testing

@Suite("Hummingbird request ids")
struct RequestIDTextTests {
    @Test("the request id text is RequestID's description: fresh ids, leading zeros, extremes, and read from a logger")
    func sameAsDescription() throws {
        let texts = try #require(RequestIDText(), "RequestID's layout or format changed: the middleware falls back to context.id")
        var ids = (0..<2000).map { _ in RequestID() }
        // Counters with leading zeros and at the extremes (the layout is what the init checked).
        for value: UInt64 in [0, 1, 0xF, 0x10, 0xABC, 0x0123_4567_89AB_CDEF, 0x7FFF_FFFF_FFFF_FFFF, 0x8000_0000_0000_0000, .max] {
            ids.append(unsafeBitCast(value, to: RequestID.self))
        }
        let differing = ids.filter { texts.text(of: $0) != $0.description }.map(\.description)
        #expect(differing.isEmpty, "ids whose text differs from their description: \(differing.prefix(5))")

        var logger = Logger(label: "test")
        let id = RequestID()
        logger[metadataKey: "hb.request.id"] = .stringConvertible(id)
        #expect(texts.text(of: logger) == id.description)
        logger[metadataKey: "hb.request.id"] = .string("not a RequestID")
        #expect(texts.text(of: logger) == nil, "anything else under the key: nil, and the middleware reads context.id")
    }
}
