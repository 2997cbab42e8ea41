// Network logging: api_log events (seed 003 §5) with headers redacted, bodies cut and binary
// bodies in base64; failures as seed 000 digests with a redacted URL and a classified error.
@testable import CrashReporting
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

extension InProcessSession {
    @Suite("Network logging", .serialized)
    struct NetworkLoggingTests {
        @Test("api_log events: redacted headers, UTF-8 and base64 bodies cut at 64 KiB, spooled per session")
        func apiLogEvents() throws {
            try SharedReporter.start()
            var request = URLRequest(url: URL(string: "https://api.example.com/v1/orders/12345?date=2026-02-16")!)
            request.httpMethod = "POST"
            request.setValue("Bearer abc.def", forHTTPHeaderField: "Authorization")
            request.setValue("session=xyz", forHTTPHeaderField: "Cookie")
            request.setValue("application/json", forHTTPHeaderField: "Accept")
            let response = HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: "HTTP/1.1",
                                           headerFields: ["Set-Cookie": "id=1", "Content-Type": "application/octet-stream"])
            let started = Date(timeIntervalSince1970: 1_760_000_000)
            let big = Data(repeating: UInt8(ascii: "a"), count: 70_000)
            let binary = Data([0, 1, 2, 255, 254])
            let event = try #require(CrashReporter.logNetworkRequest(request, response: response, requestBody: big, responseBody: binary,
                                                                     startedAt: started, endedAt: started.addingTimeInterval(0.124)))
            #expect(event.type == "api_log" && event.appId == "com.example.in-process-tests")
            #expect(event.method == "POST" && event.statusCode == 200 && event.duration == 124 && event.timestamp == 1_760_000_000_124)
            #expect(event.requestHeaders["Authorization"] == "[REDACTED]")
            #expect(event.requestHeaders["Cookie"] == "[REDACTED]")
            #expect(event.requestHeaders["Accept"] == "application/json")
            #expect(event.responseHeaders["Set-Cookie"] == "[REDACTED]")
            #expect(event.requestBody?.utf8.count == 64 * 1024)
            #expect(event.responseBody == "base64:" + binary.base64EncodedString())
            #expect(event.error == nil)

            let spool = SharedReporter.directory.appendingPathComponent("api_logs")
            let files = try FileManager.default.contentsOfDirectory(atPath: spool.path)
            #expect(files.count == 1)
            let lines = try String(contentsOf: spool.appendingPathComponent(files[0]), encoding: .utf8).split(separator: "\n")
            let stored = try JSONDecoder().decode(APILogEvent.self, from: Data(lines.last!.utf8))
            #expect(stored == event)
        }

        @Test("a failure becomes a digest: URL ids and query values redacted, error classified")
        func failureDigest() throws {
            try SharedReporter.start()
            let request = URLRequest(url: URL(string: "https://api.example.com/v1/children/12345/daily-feed?date=2026-02-16")!)
            let response = HTTPURLResponse(url: request.url!, statusCode: 503, httpVersion: nil, headerFields: nil)
            let started = Date()
            CrashReporter.logNetworkRequest(request, response: response, startedAt: started, endedAt: started.addingTimeInterval(1.234), retryCount: 3)
            CrashReporter.logNetworkRequest(URLRequest(url: URL(string: "https://api.example.com/health")!), response: nil,
                                            error: URLError(.timedOut), startedAt: started, endedAt: started.addingTimeInterval(2))
            let digests = CrashReporter.networkErrorDigests()
            try #require(digests.count >= 2)
            let server = digests[digests.count - 2], timeout = digests[digests.count - 1]
            #expect(server.request_url == "https://api.example.com/v1/children/[ID]/daily-feed?date=[REDACTED]")
            #expect(server.request_method == "GET" && server.status_code == 503 && server.error_type == "server_error")
            #expect(server.request_duration_ms == 1234 && server.retry_count == 3)
            #expect(timeout.status_code == nil && timeout.error_type == "timeout")
        }

        @Test("only allowlisted hosts are logged")
        func allowlist() throws {
            try SharedReporter.start()
            let saved = CrashReporter.networkLogging
            defer { CrashReporter.networkLogging = saved }
            CrashReporter.networkLogging.hostAllowlist = ["api.example.com"]
            #expect(CrashReporter.logNetworkRequest(URLRequest(url: URL(string: "https://tracker.example.net/x")!), response: nil) == nil)
            #expect(CrashReporter.logNetworkRequest(URLRequest(url: URL(string: "https://api.example.com/x")!), response: nil) != nil)
        }

        @Test("error classification", arguments: [
            (URLError(.timedOut) as (any Error)?, nil as Int?, "timeout"),
            (URLError(.notConnectedToInternet), nil, "network_unreachable"),
            (URLError(.secureConnectionFailed), nil, "ssl_error"),
            (URLError(.cannotFindHost), nil, "dns_failure"),
            (NSError(domain: NSPOSIXErrorDomain, code: Int(ECONNREFUSED)), nil, "network_unreachable"),
            (nil, 502, "server_error"),
            (nil, 404, "client_error"),
            (URLError(.badURL), nil, "unknown"),
        ])
        func classification(_ error: (any Error)?, _ status: Int?, _ expected: String) {
            #expect(CrashReporter.classify(error: error, status: status) == expected)
        }
    }
}
