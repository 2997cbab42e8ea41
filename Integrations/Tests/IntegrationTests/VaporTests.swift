// The Vapor example server, its middleware global (`app.middleware`), driven over loopback like the
// Hummingbird one (helpers in HummingbirdTests.swift): a route that crashes while two other
// requests are in flight, a relaunch that delivers, SIGTERM for a graceful shutdown, and a URL no
// route matches (an "http" breadcrumb for "(no route)", no report). The report lists the three
// requests with their routes (Vapor's notation, "/users/:id") and request ids, and names the
// crashing one: the route of the last screen view, the youngest request, and the only one without
// an "http" breadcrumb.
import Foundation
import Glibc
import Testing

@Suite("Vapor integration")
struct VaporTests {
    @Test("a handler that blocks an event loop 1.5 s: a hang report with that loop's thread first, blockEventLoop in its stack, resolved")
    func eventLoopHang() throws {
        try checkEventLoopHang(example: "VaporExample")
    }

    @Test("a crash lists the three requests in flight and names the crashing one; a 500 is a non-fatal report with its trace")
    func crashWithRequestsInFlight() throws {
        let folder = temporaryFolder("vapor-integration")
        defer { try? FileManager.default.removeItem(at: folder) }
        let reports = folder.appendingPathComponent("reports")
        let collector = try Collector(folder: folder)

        let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
        let (server, port) = try startServer(reports, collector, folder: folder, example: "VaporExample")
        let base = "http://127.0.0.1:\(port)"
        #expect(get("\(base)/hello") == 200)
        #expect(get("\(base)/orders/7", headers: ["traceparent": "00-\(traceID)-00f067aa0ba902b7-01"]) == 500)
        #expect(get("\(base)/missing") == 404)
        #expect(get("\(base)/no/such/route") == 404)   // no route: the global middleware sees it too
        #expect(get("\(base)/users/3") == 200)
        let blockedStart = ContinuousClock.now
        #expect(get("\(base)/block-event-loop?ms=300") == 200)   // its http breadcrumb's duration: 300 ms up to the round trip
        let blockedRoundTrip = ContinuousClock.now - blockedStart
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

        let (relaunch, _) = try startServer(reports, collector, folder: folder, example: "VaporExample")
        kill(relaunch.processIdentifier, SIGTERM)
        relaunch.waitUntilExit()
        #expect(relaunch.terminationReason == .exit && relaunch.terminationStatus == 0, "a graceful shutdown exits 0")

        #expect(try collector.state()["invalid_count"] as? Int == 0, "every upload matched Schemas/diagnostics-payload.schema.json")
        let reportsReceived = try collector.reports()
        let crash = try #require(reportsReceived.first { ($0.report["kind"] as? String) == "crash" }, "\(reportsReceived.map(\.report))")
        #expect(crash.report["exception_type"] as? String == "SIGILL")
        let messages = crash.logs.compactMap { $0["message"] as? String }
        let screens = crash.logs.filter { ($0["tag"] as? String) == "screen" }.compactMap { $0["message"] as? String }
        #expect(screens.last == "/users/:id", "screens \(screens)")
        for line in ["GET /hello 200", "GET /orders/:id 500", "GET /missing 404", "GET (no route) 404", "GET /users/:id 200"] {
            #expect(messages.contains(line), "\(line) not among \(messages)")
        }
        checkHTTPDurations(crash.logs, blockedRoundTrip: blockedRoundTrip)
        let http = crash.logs.filter { ($0["tag"] as? String) == "http" && !["/inflight", "/block-event-loop"].contains(($0["metadata"] as? [String: Any])?["route"] as? String ?? "") }
        let requestIDs = http.compactMap { ($0["metadata"] as? [String: Any])?["request_id"] as? String }
        #expect(requestIDs.count == 5 && requestIDs.allSatisfy { UUID(uuidString: $0) != nil },
                "request ids kept as Vapor wrote them (UUIDs): \(requestIDs)")
        #expect(Set(requestIDs).count == 5)

        // The three requests in flight, and which one crashed.
        let requests = try #require(crash.report["requests_in_flight"] as? [[String: Any]], "\(crash.report.keys.sorted())")
        let routes = requests.compactMap { $0["route"] as? String }.sorted()
        #expect(routes == ["/slow", "/slow", "/users/:id"], "\(requests)")
        #expect(requests.allSatisfy { UUID(uuidString: $0["request_id"] as? String ?? "") != nil && $0["method"] as? String == "GET" })
        #expect(Set(requests.compactMap { $0["request_id"] as? String }).count == 3)
        #expect(requests.compactMap { $0["trace_id"] as? String } == [traceID], "the traced /slow request carries its trace id")
        let crashing = try #require(requests.first { $0["route"] as? String == screens.last })
        #expect(!requestIDs.contains(crashing["request_id"] as? String ?? ""), "the crashing request never finished")
        let ages = requests.compactMap { $0["age_ms"] as? Int }
        #expect(ages.count == 3 && crashing["age_ms"] as? Int == ages.min(), "the crashing request is the youngest: \(requests)")

        let nonFatal = try #require(reportsReceived.first { ($0.report["kind"] as? String) == "non_fatal" }, "\(reportsReceived.map(\.report))")
        let error = try #require(nonFatal.report["error"] as? [String: Any])
        #expect((error["domain"] as? String)?.hasSuffix("OrderStoreUnavailable") == true)
        let info = try #require(error["user_info"] as? [String: Any])
        #expect(info["route"] as? String == "/orders/:id")
        #expect(info["status"] as? Int == 500)
        #expect(info["trace_id"] as? String == traceID)
        #expect(info["span_id"] as? String == "00f067aa0ba902b7", "the span of the traceparent header")
        #expect((info["request_id"] as? String).map { requestIDs.contains($0) } == true)
        #expect(!reportsReceived.contains { ($0.report["error"] as? [String: Any])?["code"] as? Int == 404 }, "a 404 is no report")
        #expect(reportsReceived.contains { ($0.report["exception_message"] as? String)?.contains("session_end") == true })
    }
}
