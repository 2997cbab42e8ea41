// The Hummingbird example server, driven over loopback as a user would: requests, one that
// crashes the server, a relaunch that delivers, SIGTERM for a graceful shutdown under a
// ServiceGroup. What reaches the tests' collector (Tests/Support/fake_collector.py, a real HTTP
// server on 127.0.0.1) is checked: the crash names the route being served and lists the requests
// before it, the 500 became a non-fatal report with its route and request id, and the graceful
// shutdown sent its session end.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc
import Testing

let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
let repositoryRoot = packageRoot.deletingLastPathComponent()

/// An example server's executable, in the build folder of the test runner.
func exampleURL(_ name: String) -> URL {
    var folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    if folder.lastPathComponent.hasSuffix(".xctest") { folder.deleteLastPathComponent() }
    return folder.appendingPathComponent(name)
}

struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

func temporaryFolder(_ name: String) -> URL {
    let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("\(name)-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Waits (bounded) for a file to hold a port number.
func waitForPort(_ file: URL, while process: Process) throws -> Int {
    let deadline = ContinuousClock.now + .seconds(60)
    while ContinuousClock.now < deadline {
        if let text = try? String(contentsOf: file, encoding: .utf8), let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), port > 0 {
            return port
        }
        guard process.isRunning else { throw Failure("\(process.executableURL?.lastPathComponent ?? "?") exited before it listened") }
        usleep(20_000)
    }
    throw Failure("no port in \(file.path) after 60 s")
}

/// One HTTP GET; the status, or nil when the connection broke (the server crashed).
func get(_ url: String, headers: [String: String] = [:]) -> Int? {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var status: Int?
    var request = URLRequest(url: URL(string: url)!)
    request.timeoutInterval = 30
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    URLSession.shared.dataTask(with: request) { _, response, _ in
        status = (response as? HTTPURLResponse)?.statusCode
        done.signal()
    }.resume()
    done.wait()
    return status
}

/// One HTTP GET's body as text, or nil when it failed or did not answer 200.
func getText(_ url: String) -> String? {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var text: String?
    var request = URLRequest(url: URL(string: url)!)
    request.timeoutInterval = 30
    URLSession.shared.dataTask(with: request) { data, response, _ in
        if (response as? HTTPURLResponse)?.statusCode == 200, let data { text = String(decoding: data, as: UTF8.self) }
        done.signal()
    }.resume()
    done.wait()
    return text
}

/// The tests' collector on a free port of 127.0.0.1.
final class Collector {
    let process = Process()
    let port: Int
    let token = "integration-token"

    init(folder: URL) throws {
        let portFile = folder.appendingPathComponent("collector.port")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [repositoryRoot.appendingPathComponent("Tests/Support/fake_collector.py").path,
                             "--port-file", portFile.path,
                             "--schema", repositoryRoot.appendingPathComponent("Schemas/diagnostics-payload.schema.json").path,
                             "--token", token]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        port = try waitForPort(portFile, while: process)
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
    }

    /// GET /control/state, as JSON.
    func state() throws -> [String: Any] {
        let data = try Data(contentsOf: URL(string: "http://127.0.0.1:\(port)/control/state")!)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// The stored seed 000 payloads' crash reports, each with its payload's logs.
    func reports() throws -> [(report: [String: Any], logs: [[String: Any]])] {
        let stored = try state()["stored"] as? [[String: Any]] ?? []
        return stored.flatMap { entry -> [(report: [String: Any], logs: [[String: Any]])] in
            let payload = entry["payload"] as? [String: Any] ?? [:]
            let logs = payload["logs"] as? [[String: Any]] ?? []
            return (payload["crash_reports"] as? [[String: Any]] ?? []).map { ($0, logs) }
        }
    }
}

/// The example server with its reports directory, sending to `collector`.
func startServer(_ reports: URL, _ collector: Collector, folder: URL, example: String = "HummingbirdExample",
                 environment extra: [String: String] = [:]) throws -> (Process, Int) {
    let portFile = folder.appendingPathComponent("server-\(UUID().uuidString).port")
    let process = Process()
    process.executableURL = exampleURL(example)
    process.arguments = [reports.path, portFile.path]
    var environment = ProcessInfo.processInfo.environment
    environment["CRASH_REPORTING_ENDPOINT"] = "http://127.0.0.1:\(collector.port)"
    environment["CRASH_REPORTING_TOKEN"] = collector.token
    environment["SWIFT_BACKTRACE"] = "enable=no"
    environment.merge(extra) { _, new in new }
    process.environment = environment
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    return (process, try waitForPort(portFile, while: process))
}

/// The http breadcrumbs' durations (tenths of a millisecond, from the clock read as each request
/// began): every one written "N.N", and the request to /block-event-loop?ms=300 at least 300 ms
/// and at most `roundTrip`, what the client measured around it (the server's begin and end lie
/// within it, whatever the load).
func checkHTTPDurations(_ logs: [[String: Any]], blockedRoundTrip roundTrip: Duration) {
    let http = logs.filter { ($0["tag"] as? String) == "http" }.compactMap { $0["metadata"] as? [String: Any] }
    let blocked = http.filter { $0["route"] as? String == "/block-event-loop" }.compactMap { $0["duration_ms"] as? String }
    let ceiling = Double(roundTrip.components.seconds) * 1000 + Double(roundTrip.components.attoseconds) / 1e15
    #expect(blocked.count == 1 && blocked.allSatisfy { Double($0).map { $0 >= 300 && $0 <= ceiling } == true },
            "the 300 ms request's duration_ms: \(blocked), the client's round trip \(ceiling) ms")
    let durations = http.compactMap { $0["duration_ms"] as? String }
    #expect(!durations.isEmpty && durations.allSatisfy { $0.wholeMatch(of: /[0-9]+\.[0-9]/) != nil }, "durations \(durations)")
}

/// An example server with a 400 ms hang threshold, `/block-event-loop?ms=1500`: the collector gets
/// a hang report, resolved, with the blocked loop's thread first and blockEventLoop in its frames.
func checkEventLoopHang(example: String) throws {
    let folder = temporaryFolder("\(example)-hang")
    defer { try? FileManager.default.removeItem(at: folder) }
    let reports = folder.appendingPathComponent("reports")
    let collector = try Collector(folder: folder)
    let (server, port) = try startServer(reports, collector, folder: folder, example: example, environment: ["EXAMPLE_HANGS_MS": "400"])
    #expect(get("http://127.0.0.1:\(port)/block-event-loop?ms=1500") == 200)
    // The monitor finishes the report once the loop beats again; the server's own pipeline
    // then sends it. Waited for, bounded; SIGTERM's flush sends whatever is still pending.
    // Only an event loop's hang counts: on a loaded machine the pool's or the main queue's
    // heartbeat may also miss a 400 ms threshold.
    func isLoopHang(_ report: [String: Any]) -> Bool {
        report["kind"] as? String == "hang" && (report["exception_message"] as? String ?? "").hasPrefix("event loop ")
    }
    let deadline = ContinuousClock.now + .seconds(30)
    while ContinuousClock.now < deadline, !((try? collector.reports()) ?? []).contains(where: { isLoopHang($0.report) }) {
        usleep(50_000)
    }
    kill(server.processIdentifier, SIGTERM)
    server.waitUntilExit()
    #expect(try collector.state()["invalid_count"] as? Int == 0)
    let received = try collector.reports()
    let hang = try #require(received.first { isLoopHang($0.report) },
                            "no event loop hang among \(received.map { $0.report["exception_message"] ?? "" })")
    let message = hang.report["exception_message"] as? String ?? ""
    #expect(message.contains("it resumed after"), "\(message)")
    let first = try #require((hang.report["thread_info"] as? [[String: Any]])?.first)
    let functions = (first["frames"] as? [[String: Any]] ?? []).compactMap { $0["function"] as? String }
    #expect(functions.contains { $0.contains("blockEventLoop") }, "the hung loop's frames: \(functions)")
}

@Suite("Hummingbird and swift-service-lifecycle integration")
struct HummingbirdTests {
    @Test("a handler that blocks an event loop 1.5 s: a hang report with that loop's thread first, blockEventLoop in its stack, resolved")
    func eventLoopHang() throws {
        try checkEventLoopHang(example: "HummingbirdExample")
    }

    @Test("a stack overflow in a route (a recursion on a cooperative thread): 'Stack overflow', the route in flight, where the recursion was entered and the route's async callers")
    func stackOverflowInRoute() throws {
        // Swift's backtracer prints nothing for this crash (the thread has no alternate stack of
        // its own): exit 139, empty standard error, in debug and release (2026-11-30).
        let folder = temporaryFolder("hummingbird-overflow")
        defer { try? FileManager.default.removeItem(at: folder) }
        let reports = folder.appendingPathComponent("reports")
        let collector = try Collector(folder: folder)
        let (server, port) = try startServer(reports, collector, folder: folder)
        #expect(get("http://127.0.0.1:\(port)/comments/0/thread") == nil, "the server crashed mid-request")
        server.waitUntilExit()
        #expect(server.terminationReason == .uncaughtSignal && server.terminationStatus == SIGSEGV)
        let (relaunch, _) = try startServer(reports, collector, folder: folder)
        kill(relaunch.processIdentifier, SIGTERM)
        relaunch.waitUntilExit()
        #expect(try collector.state()["invalid_count"] as? Int == 0)
        let crash = try #require(try collector.reports().first { ($0.report["kind"] as? String) == "crash" })
        #expect((crash.report["exception_message"] as? String)?.hasPrefix("Stack overflow: SIGSEGV") == true, "\(crash.report["exception_message"] ?? "")")
        let routes = (crash.report["requests_in_flight"] as? [[String: Any]] ?? []).compactMap { $0["route"] as? String }
        #expect(routes == ["/comments/{id}/thread"], "\(routes)")
        let frames = try #require((crash.report["thread_info"] as? [[String: Any]])?.first?["frames"] as? [[String: Any]])
        let functions = frames.map { $0["function"] as? String ?? "" }
        // Innermost: the recursion; then, past the frames left out, the route's closure that called
        // it (the recursion's entry) and the route's awaiting callers.
        // (Above it, the runtime's frames of the call that touched the guard page: a few, their count
        // depends on where the stack ran out.)
        #expect(functions.prefix(20).filter { $0.contains("countReplies") }.count >= 8, "\(functions.prefix(20))")
        let depth = frames.compactMap { $0["index"] as? Int }.max() ?? 0
        #expect(depth > 1000, "the true depth is kept in the indices: \(depth)")
        let entry = try #require(functions.lastIndex { $0.contains("countReplies") }, "\(functions)")
        #expect(functions[(entry + 1)...].contains { $0.contains("closure") && !$0.contains("countReplies") }, "the caller of the recursion: \(functions[(entry + 1)...])")
        #expect(functions.contains { $0.contains("await resume") && $0.contains("Hummingbird") }, "the route's async callers: \(functions.suffix(15))")
    }

    @Test("a crash names the route being served and the requests before it; a 500 is a non-fatal report; SIGTERM flushes")
    func crashNonFatalAndGracefulShutdown() throws {
        let folder = temporaryFolder("hummingbird-integration")
        defer { try? FileManager.default.removeItem(at: folder) }
        let reports = folder.appendingPathComponent("reports")
        let collector = try Collector(folder: folder)

        let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
        let (server, port) = try startServer(reports, collector, folder: folder)
        let base = "http://127.0.0.1:\(port)"
        #expect(get("\(base)/hello") == 200)
        #expect(get("\(base)/orders/7", headers: ["traceparent": "00-\(traceID)-00f067aa0ba902b7-01"]) == 500)
        #expect(get("\(base)/missing") == 404)
        #expect(get("\(base)/no/such/route") == 404)   // no route: the router's middleware sees it too
        #expect(get("\(base)/users/3") == 200)
        let contextID = getText("\(base)/request-id")   // Hummingbird's own text of its id (context.id)
        let blockedStart = ContinuousClock.now
        #expect(get("\(base)/block-event-loop?ms=300") == 200)   // its http breadcrumb's duration: 300 ms up to the round trip
        let blockedRoundTrip = ContinuousClock.now - blockedStart
        // This launch's session beacon is spooled as the reporter's thread starts, before the
        // launch's first pass (which waits for the app's start-up); waited for here, so that the
        // crash does not come first on a machine where that thread runs late (before the /slow
        // requests, which must still be in flight at the crash). Spooled, or already
        // sent along with the 500's report.
        let beacons = reports.appendingPathComponent("beacons").path
        let spooled = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < spooled,
              !((try? FileManager.default.contentsOfDirectory(atPath: beacons)) ?? []).contains(where: { $0.hasSuffix(".json") }),
              (try collector.state()["sessions"] as? [[String: Any]] ?? []).isEmpty {
            usleep(10_000)
        }
        // Two requests in flight when the crash comes: /slow answers after 30 s, and only once a
        // request has begun does the server answer /inflight with the count.
        let slow = Thread { _ = get("\(base)/slow", headers: ["traceparent": "00-\(traceID)-b7ad6b7169203331-01"]) }
        slow.start()
        let slower = Thread { _ = get("\(base)/slow") }
        slower.start()
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline, (try? String(contentsOf: URL(string: "\(base)/inflight")!, encoding: .utf8)) != "3" {
            usleep(10_000)   // 3: the two /slow requests and this /inflight one
        }
        #expect(get("\(base)/users/0") == nil, "the server crashed mid-request")
        server.waitUntilExit()
        #expect(server.terminationReason == .uncaughtSignal && server.terminationStatus == SIGILL)

        // The relaunch delivers what the crashed run left; SIGTERM then shuts the group down
        // gracefully: CrashReportingService sends what is pending and ends the session.
        let (relaunch, _) = try startServer(reports, collector, folder: folder)
        kill(relaunch.processIdentifier, SIGTERM)
        relaunch.waitUntilExit()
        #expect(relaunch.terminationReason == .exit && relaunch.terminationStatus == 0, "a graceful shutdown exits 0")

        #expect(try collector.state()["invalid_count"] as? Int == 0, "every upload matched Schemas/diagnostics-payload.schema.json")
        let reportsReceived = try collector.reports()
        let crash = try #require(reportsReceived.first { ($0.report["kind"] as? String) == "crash" }, "\(reportsReceived.map(\.report))")
        #expect(crash.report["exception_type"] as? String == "SIGILL")
        let messages = crash.logs.compactMap { $0["message"] as? String }
        // The route being served when it crashed: the last screen view.
        let screens = crash.logs.filter { ($0["tag"] as? String) == "screen" }.compactMap { $0["message"] as? String }
        #expect(screens.last == "/users/{id}", "screens \(screens)")
        for line in ["GET /hello 200", "GET /orders/{id} 500", "GET /missing 404", "GET (no route) 404", "GET /users/{id} 200"] {
            #expect(messages.contains(line), "\(line) not among \(messages)")
        }
        // The server's start-up line, its loopback address kept (before, the verify stage refused the report for it).
        #expect(messages.contains { $0.hasPrefix("listening on 127.0.0.1:") }, "\(messages.prefix(5))")
        checkHTTPDurations(crash.logs, blockedRoundTrip: blockedRoundTrip)
        // The middleware writes the id without RequestID.description (Docs/Decisions/0049, 0052): the
        // same text as context.id, which the route answered with.
        let idCrumb = crash.logs.first { ($0["tag"] as? String) == "http" && ($0["metadata"] as? [String: Any])?["route"] as? String == "/request-id" }
        #expect(contextID != nil && (idCrumb?["metadata"] as? [String: Any])?["request_id"] as? String == contextID,
                "the breadcrumb's id \(String(describing: idCrumb)) against context.id \(contextID ?? "-")")
        let http = crash.logs.filter { ($0["tag"] as? String) == "http" && !["/inflight", "/block-event-loop", "/request-id"].contains(($0["metadata"] as? [String: Any])?["route"] as? String ?? "") }
        let requestIDs = http.compactMap { ($0["metadata"] as? [String: Any])?["request_id"] as? String }
        #expect(requestIDs.count == 5 && requestIDs.allSatisfy { (1...32).contains($0.count) && $0.allSatisfy(\.isHexDigit) },
                "request ids kept as Hummingbird wrote them: \(requestIDs)")
        #expect(Set(requestIDs).count == 5)

        // The requests in flight: the crashing one (started on the crashing thread or not, a
        // Task may move), and the two /slow ones.
        let requests = try #require(crash.report["requests_in_flight"] as? [[String: Any]], "\(crash.report.keys.sorted())")
        let routes = requests.compactMap { $0["route"] as? String }.sorted()
        #expect(routes == ["/slow", "/slow", "/users/{id}"], "\(requests)")
        #expect(requests.allSatisfy { (($0["request_id"] as? String)?.allSatisfy(\.isHexDigit) ?? false) && $0["method"] as? String == "GET" })
        #expect(requests.compactMap { $0["trace_id"] as? String } == [traceID], "the traced /slow request carries its trace id")
        let crashing = try #require(requests.first { $0["route"] as? String == "/users/{id}" })
        #expect(!requestIDs.contains(crashing["request_id"] as? String ?? ""), "the crashing request never finished, so it left no http breadcrumb")

        let nonFatal = try #require(reportsReceived.first { ($0.report["kind"] as? String) == "non_fatal" }, "\(reportsReceived.map(\.report))")
        let error = try #require(nonFatal.report["error"] as? [String: Any])
        #expect((error["domain"] as? String)?.hasSuffix("OrderStoreUnavailable") == true)
        let info = try #require(error["user_info"] as? [String: Any])
        #expect(info["route"] as? String == "/orders/{id}")
        #expect(info["status"] as? Int == 500)
        #expect(info["method"] as? String == "GET")
        #expect(info["trace_id"] as? String == traceID, "the 500's trace id, from its traceparent header")
        let tracedCrumb = http.first { ($0["metadata"] as? [String: Any])?["route"] as? String == "/orders/{id}" }
        #expect((tracedCrumb?["metadata"] as? [String: Any])?["trace_id"] as? String == traceID)
        #expect((info["request_id"] as? String).map { requestIDs.contains($0) } == true, "the 500's request id is the one in its breadcrumb")
        #expect(!reportsReceived.contains { ($0.report["error"] as? [String: Any])?["code"] as? Int == 404 }, "a 404 is no report")

        // The graceful shutdown's session end, and both runs' session beacons.
        #expect(reportsReceived.contains { ($0.report["exception_message"] as? String)?.contains("session_end") == true })
        let sessions = try collector.state()["sessions"] as? [[String: Any]] ?? []
        #expect(Set(sessions.compactMap { $0["session_id"] as? String }).count == 2, "\(sessions)")
    }
}
