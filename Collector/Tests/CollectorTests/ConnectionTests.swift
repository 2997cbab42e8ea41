// Connections an attacker holds: a refused upload gets no "100 Continue" and its body is never
// read (the connection closes after the answer), a stalled head is cut by the idle time-out, and
// past the connection limit a new connection waits until one closes. Outcomes only, never timings:
// each wait has a generous guard (SO_RCVTIMEO) that only a broken collector reaches.
@testable import Collector
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// A plain client socket for what RawHTTP does not do: half-sent requests, reads to end of stream.
final class Connection {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, connected == 0 else { throw RawHTTP.Failure(description: "connect: errno \(errno)") }
        var guardTime = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &guardTime, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// `body` on a thread of its own: a blocking read must not hold one of the cooperative threads
    /// the in-process server's handlers need.
    func off<T: Sendable>(_ body: @escaping @Sendable (Connection) -> T) async -> T {
        let connection = UncheckedBox(self)
        return await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: body(connection.value)) }.start()
        }
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Everything until the server closes; nil when the guard time passed first.
    func readToEnd() -> String? {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { return String(decoding: received, as: UTF8.self) }
            if count < 0 { return errno == ECONNRESET ? String(decoding: received, as: UTF8.self) : nil }
            received.append(contentsOf: buffer[0..<count])
        }
    }

    /// Reads until one whole response (head and Content-Length body) arrived.
    func readResponse() -> String? {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let text = String(decoding: received, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let head = text[..<end.lowerBound].lowercased()
                let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                if text.utf8.count - text[..<end.upperBound].utf8.count >= length { return text }
            }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return nil }
            received.append(contentsOf: buffer[0..<count])
        }
    }

    /// Whether anything is waiting to be read now (no wait).
    var hasData: Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }
}

@Suite struct ConnectionTests {
    @Test func refusedUploadsGetNoContinueAndNoBodyIsRead() async throws {
        try await TestCollector.with { collector in
            let port = collector.base.port!
            // A wrong token with Expect: 100-continue: the final answer, no interim one.
            let unauthorized = try await RawHTTP.request(
                port: port, method: "POST", path: "/api/v1/qa/diagnostics", headers: ["Authorization": "Bearer wrong"],
                body: Data(count: 64 * 1024), expectContinue: true)
            #expect(unauthorized.interim == nil)
            #expect(unauthorized.answer.status == 401)
            // A right token announcing more than 5 MB: 413 and no interim answer either.
            let connection = try Connection(port: port)
            connection.send("POST /api/v1/qa/diagnostics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(TestCollector.token)\r\n"
                            + "Expect: 100-continue\r\nContent-Length: \(6 * 1024 * 1024)\r\n\r\n")
            let tooLarge = try #require(await connection.off { $0.readToEnd() })
            #expect(tooLarge.hasPrefix("HTTP/1.1 413"), "\(tooLarge.prefix(200))")
            #expect(!tooLarge.contains("100 Continue"))

            // A wrong token announcing a 1 MB body it waits to send: answered and closed at once,
            // not held open waiting for (and draining) the body.
            let held = try Connection(port: port)
            held.send("POST /api/v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\nExpect: 100-continue\r\n"
                      + "Content-Length: 1048576\r\n\r\n")
            let answer = try #require(await held.off { $0.readToEnd() }, "the connection stayed open")
            #expect(answer.hasPrefix("HTTP/1.1 401"))

            // A valid upload still gets its "100 Continue".
            let accepted = try await RawHTTP.request(
                port: port, method: "POST", path: "/api/v1/qa/diagnostics", headers: ["Authorization": "Bearer \(TestCollector.token)"],
                body: try Fixtures.samplePayloadData(), expectContinue: true)
            #expect(accepted.interim == 100)
            #expect(accepted.answer.status == 201)
        }
    }

    @Test func aStalledHeadIsClosedByTheIdleTimeout() async throws {
        try await TestCollector.with(configure: { $0.idleTimeout = .seconds(1) }) { collector in
            let connection = try Connection(port: collector.base.port!)
            connection.send("GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")   // and never the rest
            let received = try #require(await connection.off { $0.readToEnd() }, "the collector kept the stalled connection past the guard")
            #expect(!received.contains("200 OK"))
            #expect(try await collector.get("/health").status == 200)
        }
    }

    @Test func pastTheConnectionLimitANewConnectionWaits() async throws {
        try await TestCollector.with(configure: { $0.maxConnections = 1; $0.idleTimeout = nil }) { collector in
            let port = collector.base.port!
            let first = try Connection(port: port)
            first.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(await first.off { $0.readResponse() }?.hasPrefix("HTTP/1.1 200") == true)   // accepted and counted
            let second = try Connection(port: port)
            second.send("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            // The first connection is served again meanwhile; the second is not accepted yet.
            first.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(await first.off { $0.readResponse() }?.hasPrefix("HTTP/1.1 200") == true)
            #expect(!second.hasData)
            // Once the first closes, the second is accepted and answered.
            shutdown(first.fd, Int32(SHUT_RDWR))
            #expect(await second.off { $0.readToEnd() }?.hasPrefix("HTTP/1.1 200") == true)
        }
    }
}
