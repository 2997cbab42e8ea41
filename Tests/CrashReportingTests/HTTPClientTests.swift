// The destinations' HTTP client is a protocol: a client of the app's own gets every request, after
// the outgoing check; its answers map to outcomes as URLSession's do; delivery at crash time,
// which sends with URLSession from another process, refuses a client it cannot carry.
@_spi(Benchmarks) @testable import CrashReporting
import CrashReportModel
import Foundation
import Synchronization
import Testing

@Suite("HTTP client")
struct HTTPClientTests {
    final class RecordingClient: HTTPClient {
        let requests = Mutex<[HTTPRequest]>([])
        let answer: HTTPAnswer
        init(answer: HTTPAnswer) { self.answer = answer }
        func send(_ request: HTTPRequest, timeout: Duration, bodySent: (@Sendable () -> Void)?) -> HTTPAnswer {
            requests.withLock { $0.append(request) }
            bodySent?()
            return answer
        }
    }

    static func upload(message: String) throws -> DiagnosticsUpload {
        var payload = DiagnosticsPayload(
            test_run_id: "6f1f6c1e-3f7b-4c1a-9d1e-6a0e2b7c9d10", app_metadata: PipelineUnitTests.app, device_metadata: PipelineUnitTests.host,
            timestamp_collected: "2026-11-26T00:00:00.000Z", logs: [], network_errors: [], crash_reports: [], screenshots: [])
        payload.logs.append(.init(timestamp: "2026-11-26T00:00:00.000Z", level: "info", tag: "app", message: message))
        return DiagnosticsUpload(payload: payload, body: try Gzip.compress(payload.encoded()), idempotencyKey: "record-1")
    }

    @Test("the collector's transport sends through the client: the request as seed 000 has it, the body after the outgoing check, the body-sent callback passed on")
    func collectorThroughClient() throws {
        let client = RecordingClient(answer: .response(status: 201, headers: [:], body: Data(#"{"diagnostics_id":"d-1"}"#.utf8)))
        var transport = HTTPTransport(endpoint: URL(string: "https://crashes.example.com")!, token: "t0ken")
        transport.client = client
        let sent = Atomic<Int>(0)
        // A payload that skipped redaction (a transport called directly): the check still masks.
        let outcome = try HTTPExchange.Attempt.withBodySent({ sent.add(1, ordering: .relaxed) }) {
            transport.deliver(try Self.upload(message: "card 4111 1111 1111 1111 declined"))
        }
        #expect(outcome == .delivered(receipt: "d-1"))
        #expect(sent.load(ordering: .relaxed) == 1)
        let request = try #require(client.requests.withLock { $0.first })
        #expect(request.url.absoluteString == "https://crashes.example.com/api/v1/qa/diagnostics" && request.method == "POST")
        #expect(request.headers["Authorization"] == "Bearer t0ken" && request.headers["Idempotency-Key"] == "record-1")
        #expect(request.headers["Content-Encoding"] == "gzip")
        let body = String(decoding: try Gzip.decompress(request.body), as: UTF8.self)
        #expect(body.contains("card [REDACTED:card] declined") && !body.contains("4111 1111"))
    }

    @Test("a client's answers map to outcomes: 503 with Retry-After, no answer, a redirect")
    func answers() throws {
        let cases: [(HTTPAnswer, DeliveryOutcome)] = [
            (.response(status: 503, headers: ["retry-after": "7"], body: Data()), .retryLater(reason: "HTTP 503: ", after: .seconds(7))),
            (.failed("connection refused"), .unreachable(reason: "connection refused")),
        ]
        for (answer, expected) in cases {
            var transport = HTTPTransport(endpoint: URL(string: "https://crashes.example.com")!, token: nil)
            transport.client = RecordingClient(answer: answer)
            #expect(transport.deliver(try Self.upload(message: "hello")) == expected)
        }
        var redirected = HTTPTransport(endpoint: URL(string: "https://crashes.example.com")!, token: nil)
        redirected.client = RecordingClient(answer: .response(status: 307, headers: ["location": "https://elsewhere.example"], body: Data()))
        guard case .unauthorized(307, let message) = redirected.deliver(try Self.upload(message: "hello")) else {
            Issue.record("a 307 is not a configuration error")
            return
        }
        #expect(message.contains("https://elsewhere.example"))
    }

    @Test("Sentry and Logz.io send through their client too")
    func otherDestinations() throws {
        let sentryClient = RecordingClient(answer: .response(status: 200, headers: [:], body: Data(#"{"id":"x"}"#.utf8)))
        var sentry = try #require(SentryTransport(dsn: "https://abc123@sentry.example.com/42"))
        sentry.client = sentryClient
        _ = sentry.deliver(try Self.upload(message: "hello"))
        #expect(sentryClient.requests.withLock { $0.first?.url.absoluteString } == "https://sentry.example.com/api/42/envelope/")
        let logzClient = RecordingClient(answer: .response(status: 200, headers: [:], body: Data()))
        var logz = LogzioTransport(token: "logz")
        logz.client = logzClient
        #expect(logz.deliver(try Self.upload(message: "hello")) == .delivered(receipt: nil))
        #expect(logzClient.requests.withLock { $0.count } == 1)
    }

    @Test("delivery at crash time refuses a client of the app's own, in the upload or in a destination")
    func notCarriable() throws {
        let delivery = CrashReporter.DeliveryAtCrash(senderPath: "/usr/bin/true", wait: .seconds(3))
        func configuration(_ upload: CrashReporter.Upload) -> CrashReporter.Configuration {
            CrashReporter.Configuration(appID: "com.example.sender", reportsDirectory: "/tmp/unused", upload: upload)
        }
        var upload = CrashReporter.Upload()
        upload.httpClient = RecordingClient(answer: .failed("unused"))
        #expect(throws: SenderConfiguration.NotCarriable.self) {
            try SenderConfiguration.make(configuration(upload), reportsDirectory: "/tmp/r", delivery: delivery, collector: nil)
        }
        var transport = HTTPTransport(endpoint: URL(string: "https://crashes.example.com")!, token: nil)
        transport.client = RecordingClient(answer: .failed("unused"))
        var withTransport = CrashReporter.Upload()
        withTransport.transports = [transport]
        #expect(throws: SenderConfiguration.NotCarriable.self) {
            try SenderConfiguration.make(configuration(withTransport), reportsDirectory: "/tmp/r", delivery: delivery, collector: nil)
        }
        var plain = CrashReporter.Upload()
        plain.httpClient = URLSessionHTTPClient()
        _ = try SenderConfiguration.make(configuration(plain), reportsDirectory: "/tmp/r", delivery: delivery, collector: nil)
    }
}
