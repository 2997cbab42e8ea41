// A minimal HTTP/1.1 client over a plain socket, for the answers URLSession on Linux cannot be
// trusted with: given a 401 with "WWW-Authenticate: Basic" and no credential delegate, its
// request never completes. Runs on a thread of its own so that a blocking read never holds one
// of the few cooperative threads the in-process server's handlers need.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

enum RawHTTP {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func request(port: Int, method: String, path: String, headers: [String: String]) async throws -> HTTPAnswer {
        try await withCheckedThrowingContinuation { continuation in
            // A thread of its own: Dispatch's global pool is small here (2 cores) and URLSession
            // needs it, so blocking it would stall the other tests' requests.
            let thread = Thread {
                continuation.resume(with: Result { try blockingRequest(port: port, method: method, path: path, headers: headers) })
            }
            thread.start()
        }
    }

    private static func blockingRequest(port: Int, method: String, path: String, headers: [String: String]) throws -> HTTPAnswer {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "connect: errno \(errno)") }

        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\nContent-Length: 0\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        let bytes = Array(head.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw Failure(description: "send: errno \(errno)") }
            sent += count
        }
        // Read up to the end of the body that Content-Length announces: the server keeps its side
        // open until the client closes, so waiting for end-of-stream would wait for a time-out.
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            if let split = response.firstRange(of: Array("\r\n\r\n".utf8)),
               let length = contentLength(String(decoding: response[..<split.lowerBound], as: UTF8.self)),
               response.count >= split.upperBound + length { break }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            guard count > 0 else { throw Failure(description: "recv: errno \(errno)") }
            response.append(contentsOf: buffer[0..<count])
        }
        guard let split = response.firstRange(of: Array("\r\n\r\n".utf8)) else { throw Failure(description: "no header end") }
        let lines = String(decoding: response[..<split.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw Failure(description: "bad status line \(lines[0])") }
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return HTTPAnswer(status: status, headers: fields, body: Data(response[split.upperBound...]))
    }

    private static func contentLength(_ head: String) -> Int? {
        for line in head.components(separatedBy: "\r\n") where line.lowercased().hasPrefix("content-length:") {
            return Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}
