// A minimal HTTP/1.1 client over a plain socket, for what URLSession on Linux cannot be trusted
// with or does not show: given a 401 with "WWW-Authenticate: Basic" and no credential delegate its
// request never completes, and it hides interim answers such as "100 Continue". Runs on a thread
// of its own so that a blocking read never holds one of the few cooperative threads the
// in-process server's handlers need.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

enum RawHTTP {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// With `expectContinue`, the head goes out with "Expect: 100-continue" and the body only after
    /// an interim answer; `interim` then holds that answer's status (nil when none came in time).
    static func request(port: Int, method: String, path: String, headers: [String: String], body: Data = Data(),
                        expectContinue: Bool = false) async throws -> (answer: HTTPAnswer, interim: Int?) {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result {
                    try blockingRequest(port: port, method: method, path: path, headers: headers, body: body,
                                        expectContinue: expectContinue)
                })
            }
            thread.start()
        }
    }

    static func request(port: Int, method: String, path: String, headers: [String: String]) async throws -> HTTPAnswer {
        try await request(port: port, method: method, path: path, headers: headers, body: Data()).answer
    }

    private static func blockingRequest(port: Int, method: String, path: String, headers: [String: String], body: Data,
                                        expectContinue: Bool) throws -> (answer: HTTPAnswer, interim: Int?) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "connect: errno \(errno)") }

        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\nContent-Length: \(body.count)\r\n"
        if expectContinue { head += "Expect: 100-continue\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        try sendAll(fd, Array(head.utf8))

        var received: [UInt8] = []
        var interim: Int?
        if expectContinue {
            // libcurl waits 1 s for the interim answer; wait at most that long too.
            setTimeout(fd, seconds: 1)
            if let split = try readHead(fd, into: &received) {
                let status = try statusCode(received[..<split.lowerBound])
                if (100..<200).contains(status) {
                    interim = status
                    received.removeSubrange(..<split.upperBound)
                }
            }
        }
        if interim != nil || !expectContinue || received.isEmpty { try sendAll(fd, [UInt8](body)) }
        setTimeout(fd, seconds: 30)
        // Read to the end of the body Content-Length announces: the server keeps its side open
        // until the client closes, so waiting for end-of-stream would wait for a time-out.
        while true {
            if let split = received.firstRange(of: Array("\r\n\r\n".utf8)),
               let length = contentLength(String(decoding: received[..<split.lowerBound], as: UTF8.self)),
               received.count >= split.upperBound + length { break }
            guard try readSome(fd, into: &received) else { break }
        }
        guard let split = received.firstRange(of: Array("\r\n\r\n".utf8)) else { throw Failure(description: "no header end") }
        let lines = String(decoding: received[..<split.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let answer = HTTPAnswer(status: try statusCode(received[..<split.lowerBound]), headers: fields,
                                body: Data(received[split.upperBound...]))
        return (answer, interim)
    }

    private static func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw Failure(description: "send: errno \(errno)") }
            sent += count
        }
    }

    /// Reads until a header block ends; nil on time-out.
    private static func readHead(_ fd: Int32, into received: inout [UInt8]) throws -> Range<Int>? {
        while true {
            if let split = received.firstRange(of: Array("\r\n\r\n".utf8)) { return split }
            do {
                guard try readSome(fd, into: &received) else { return nil }
            } catch let failure as Failure where failure.description.contains("errno \(EAGAIN)") {
                return nil
            }
        }
    }

    /// False at end of stream.
    private static func readSome(_ fd: Int32, into received: inout [UInt8]) throws -> Bool {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count == 0 { return false }
        guard count > 0 else { throw Failure(description: "recv: errno \(errno)") }
        received.append(contentsOf: buffer[0..<count])
        return true
    }

    private static func setTimeout(_ fd: Int32, seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    private static func statusCode(_ head: ArraySlice<UInt8>) throws -> Int {
        let line = String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n")[0]
        let parts = line.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw Failure(description: "bad status line \(line)") }
        return status
    }

    private static func contentLength(_ head: String) -> Int? {
        for line in head.components(separatedBy: "\r\n") where line.lowercased().hasPrefix("content-length:") {
            return Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}
