// Runs a real collector in-process on a free loopback port, with a fresh database (TestDatabase), and talks to
// it over HTTP with URLSession (the client the runtime uploads with). One collector per test, so
// Swift Testing can run them in parallel.
import Collector
import CrashReportModel
import Foundation
import Logging
import ServiceLifecycle
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct HTTPAnswer {
    var status: Int
    var headers: [String: String]
    var body: Data

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object (an empty one when it is not).
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }

    func header(_ name: String) -> String? {
        headers.first { $0.key.lowercased() == name.lowercased() }?.value
    }
}

struct TestCollector {
    static let token = "test-token"
    static let password = "dash-pass"

    let base: URL
    let store: any Store
    let configuration: CollectorConfiguration
    private let session: URLSession

    /// Starts a collector, runs `body` against it, stops it and removes its database.
    static func with(configure: (inout CollectorConfiguration) -> Void = { _ in },
                     _ body: (TestCollector) async throws -> Void) async throws {
        let database = try await TestDatabase.make()
        let store: any Store
        do {
            store = try await database.open()
        } catch {
            await database.remove()
            throw error
        }
        var configuration = CollectorConfiguration(ingestTokens: [token, "second-token"], dashboardPassword: password)
        configuration.clock = TestClock.now
        configure(&configuration)
        var logger = Logger(label: "collector-test")
        logger.logLevel = .error

        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = CollectorServer.application(
            store: store, configuration: configuration, host: "127.0.0.1", port: 0, logger: logger
        ) { address in
            continuation.yield(address.port)
            continuation.finish()
        }
        // A service group, so the test can stop the server the way SIGTERM does (graceful
        // shutdown: open connections finish) rather than by cancellation.
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let server = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            await group.triggerGracefulShutdown()
            await store.close()
            await database.remove()
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "the collector did not start"])
        }
        let configurationForSession = URLSessionConfiguration.ephemeral
        configurationForSession.timeoutIntervalForRequest = 30
        let session = URLSession(configuration: configurationForSession)
        let collector = TestCollector(base: URL(string: "http://127.0.0.1:\(port)")!, store: store, configuration: configuration,
                                      session: session)
        let outcome = await Result(catching: { try await body(collector) })
        session.invalidateAndCancel()
        await group.triggerGracefulShutdown()
        _ = await server.result
        await store.close()
        await database.remove()
        try outcome.get()
    }

    func request(_ method: String, _ path: String, headers: [String: String] = [:], body: Data? = nil) async throws -> HTTPAnswer {
        var request = URLRequest(url: URL(string: path, relativeTo: base)!)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        let (data, response) = try await session.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields { fields["\(name)"] = "\(value)" }
        return HTTPAnswer(status: http.statusCode, headers: fields, body: data)
    }

    /// POST /api/v1/qa/diagnostics as the runtime sends it: gzip'd, Bearer token, idempotency key.
    func upload(_ body: Data, key: String? = UUID().uuidString, token: String? = TestCollector.token, gzip: Bool = true)
        async throws -> HTTPAnswer {
        var headers = ["Content-Type": "application/json", "X-App-Version": "2.1.0"]
        if let token { headers["Authorization"] = "Bearer \(token)" }
        if let key { headers["Idempotency-Key"] = key }
        if gzip { headers["Content-Encoding"] = "gzip" }
        return try await request("POST", "/api/v1/qa/diagnostics", headers: headers, body: gzip ? try Gzipped.compress(body) : body)
    }

    /// A GET with the dashboard's basic auth (over RawHTTP: the answer may be a 401 challenge).
    func read(_ path: String, authorized: Bool = true) async throws -> HTTPAnswer {
        let credentials = Data("admin:\(TestCollector.password)".utf8).base64EncodedString()
        return try await get(path, headers: authorized ? ["Authorization": "Basic \(credentials)"] : [:])
    }

    /// A GET over RawHTTP.
    func get(_ path: String, headers: [String: String] = [:]) async throws -> HTTPAnswer {
        try await RawHTTP.request(port: base.port!, method: "GET", path: path, headers: headers)
    }
}

enum Fixtures {
    /// The root repository's sample upload (Tests/Support/sample-payload.json), read in place so the
    /// collector is tested against the same file as the runtime.
    static let samplePayloadURL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tests/Support/sample-payload.json")

    static func samplePayloadData() throws -> Data { try Data(contentsOf: samplePayloadURL) }

    static func samplePayload() throws -> DiagnosticsPayload {
        try JSONDecoder().decode(DiagnosticsPayload.self, from: samplePayloadData())
    }

    static func encoded(_ payload: DiagnosticsPayload) throws -> Data { try payload.encoded() }

    /// Seed 000's example payload verbatim: an iOS sender, none of the Linux extensions.
    static let seedExample = Data(#"""
        {
          "test_run_id": "550e8400-e29b-41d4-a716-446655440000",
          "app_metadata": {"app_name": "ParentApp", "app_version": "2.1.0", "build_number": "1234",
                           "bundle_id": "com.laya.parentapp", "environment": "staging"},
          "device_metadata": {"device_model": "iPhone 14", "device_identifier": "e5f6g7h8", "ios_version": "17.1",
                              "locale": "en_US", "timezone": "America/Los_Angeles", "is_simulator": false,
                              "available_storage_mb": 32000, "total_memory_mb": 4096, "battery_level": 0.72,
                              "battery_state": "charging"},
          "timestamp_collected": "2026-02-16T14:30:00.000Z",
          "logs": [{"timestamp": "2026-02-16T14:29:45.123Z", "level": "error", "tag": "DailyFeedAPI",
                    "message": "Failed to fetch daily feed: HTTP 500",
                    "metadata": {"endpoint": "/api/v1/children/[ID]/daily-feed", "retry_count": 3}}],
          "network_errors": [{"timestamp": "2026-02-16T14:29:45.100Z",
                              "request_url": "https://api.laya.app/v1/children/[ID]/daily-feed?date=[REDACTED]",
                              "request_method": "GET", "status_code": 500, "error_type": "server_error",
                              "error_message": "Internal Server Error", "request_duration_ms": 1234, "retry_count": 3}],
          "custom_data": {"feature_flags": {"new_feed_design": true}, "selected_child_count": 2}
        }
        """#.utf8)
}

extension Result where Failure == any Error {
    /// Result's initialiser for async bodies.
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
