// Top crashes, 14-day trends and the velocity alert with events stored at chosen times (the store
// and the metrics take `now`), then the same through the read API and the dashboard, and the
// alert webhook against a real HTTP listener on loopback. On SQLite and PostgreSQL.
@testable import Collector
import CrashReportModel
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Synchronization
import Testing

/// `count` events of the crash in `function` (one issue per function), received at `date`.
func storeEvents(_ store: any Store, function: String, count: Int, at date: Date) async throws {
    var payload = try sameCrashElsewhere(user: "user-\(function)")
    payload.crash_reports[0].thread_info[0].frames[0].function = function
    payload.crash_reports[0].timestamp = Timestamp.format(date)
    var record = try Ingest.record(payload, diagnosticsID: "diag_\(UUID().uuidString)", idempotencyKey: nil, answer: "{}",
                                   receivedAt: date)
    record.reports = Array(repeating: record.reports[0], count: count)
    #expect(try await store.ingest(record) == .stored)
}

func issueID(_ store: any Store, _ function: String) async throws -> Int64 {
    // Titles are the short name and the reason: "spike() — SIGSEGV" for "main.spike()".
    try #require(try await store.issues(IssueQuery(limit: 100)).first { $0.title == title(function) }).id
}

func title(_ function: String) -> String {
    (CrashGrouping.groupingName(function) ?? function) + " — SIGSEGV"
}

@Suite struct MetricsTests {
    static let now = Timestamp.parse("2030-01-15T12:00:00.000Z")!

    static func withStore(_ body: (any Store) async throws -> Void) async throws {
        let database = try await TestDatabase.make()
        let store = try await database.open()
        let outcome = await Result { try await body(store) }
        await store.close()
        await database.remove()
        try outcome.get()
    }

    /// A: a spike now over a quiet week; B: busy two days ago; C: a few now; D and E: steady at 2 an
    /// hour all week, D at 3× that in the last hour, E just under.
    static func scenario(_ store: any Store) async throws {
        let minute = 60.0, hour = 3600.0, day = 86_400.0
        try await storeEvents(store, function: "main.a()", count: 12, at: now - 5 * minute)
        try await storeEvents(store, function: "main.a()", count: 7, at: now - 3 * day)
        try await storeEvents(store, function: "main.a()", count: 1, at: now - 10 * day)
        try await storeEvents(store, function: "main.a()", count: 1, at: now - 20 * day)
        try await storeEvents(store, function: "main.b()", count: 20, at: now - 2 * day)
        try await storeEvents(store, function: "main.b()", count: 2, at: now - 2 * hour)
        try await storeEvents(store, function: "main.c()", count: 3, at: now - 30 * minute)
        try await storeEvents(store, function: "main.d()", count: 336, at: now - 3 * day)
        try await storeEvents(store, function: "main.d()", count: 6, at: now - 10 * minute)
        try await storeEvents(store, function: "main.e()", count: 336, at: now - 3 * day)
        try await storeEvents(store, function: "main.e()", count: 5, at: now - 10 * minute)
        // Received after `now` (another collector's clock): in no window.
        try await storeEvents(store, function: "main.c()", count: 50, at: now + minute)
    }

    @Test func utcDayMatchesTheGregorianCalendar() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        // Every day from 1899 to 2101 (leap years, 1900 and 2000, dates before 1970), at 00:00
        // and one second before midnight.
        for day in stride(from: -25_567, through: 47_847, by: 1) {
            for second in [0.0, 86_399.0] {
                let date = Date(timeIntervalSince1970: Double(day) * 86_400 + second)
                let parts = calendar.dateComponents([.year, .month, .day], from: date)
                let expected = String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
                guard utcDay(date) == expected else {
                    Issue.record("utcDay(\(date)) = \(utcDay(date)), not \(expected)")
                    return
                }
            }
        }
    }

    @Test func topCrashesRankByEventsInTheWindow() async throws {
        try await Self.withStore { store in
            try await Self.scenario(store)
            let metrics = IssueMetrics(store: store, rule: AlertRule())
            let day = try await metrics.top(window: 86_400, now: Self.now, limit: 10)
            #expect(day.map(\.issue.title) == [title("main.a()"), title("main.d()"), title("main.e()"), title("main.c()"), title("main.b()")])
            #expect(day.map(\.events) == [12, 6, 5, 3, 2])
            let week = try await metrics.top(window: 7 * 86_400, now: Self.now, limit: 3)
            #expect(week.map(\.issue.title) == [title("main.d()"), title("main.e()"), title("main.b()")])
            #expect(week.map(\.events) == [342, 341, 22])
            #expect(try await metrics.top(window: 86_400, now: Self.now, limit: 10, kind: "crash").count == 5)
            #expect(try await metrics.top(window: 86_400, now: Self.now, limit: 10, kind: "non_fatal").isEmpty)
            // Nothing a week later.
            #expect(try await metrics.top(window: 86_400, now: Self.now + 8 * 86_400, limit: 10).isEmpty)
        }
    }

    @Test func trendsAreFourteenUTCDaysOldestFirst() async throws {
        try await Self.withStore { store in
            try await Self.scenario(store)
            let metrics = IssueMetrics(store: store, rule: AlertRule())
            let a = try await issueID(store, "main.a()")
            let trends = try await metrics.trends(now: Self.now)
            let trend = try #require(trends[a])
            #expect(trend.count == 14)
            #expect(trend.first?.day == "2030-01-02")
            #expect(trend.last?.day == "2030-01-15")
            let byDay = Dictionary(uniqueKeysWithValues: trend.map { ($0.day, $0.events) })
            #expect(byDay["2030-01-15"] == 12)
            #expect(byDay["2030-01-12"] == 7)
            #expect(byDay["2030-01-05"] == 1)
            #expect(trend.map(\.events).reduce(0, +) == 20)   // the event 20 days ago is outside
            // One issue's alone.
            #expect(try await metrics.trends(now: Self.now, issueID: a) == [a: trend])
            let c = try await issueID(store, "main.c()")
            #expect(try await metrics.trends(now: Self.now, issueID: c)[c]?.map(\.events).reduce(0, +) == 3)
            // Days are UTC days: one millisecond before midnight is the day before.
            try await storeEvents(store, function: "main.f()", count: 1, at: Timestamp.parse("2030-01-14T23:59:59.999Z")!)
            let f = try await issueID(store, "main.f()")
            #expect(try await metrics.trends(now: Self.now, issueID: f)[f]?.first { $0.events > 0 }?.day == "2030-01-14")
        }
    }

    @Test func velocityAlertIsFactorTimesTheBaselineAndTheMinimum() async throws {
        try await Self.withStore { store in
            try await Self.scenario(store)
            let alerts = try await IssueMetrics(store: store, rule: AlertRule(factor: 3, minimum: 4)).alerts(now: Self.now)
            // A: 12 against 7/168 an hour. D: 6 against 2 an hour, exactly 3×. E: 5 < 6. C: 3 < 4. B: none now.
            #expect(alerts.map(\.issue.title) == [title("main.a()"), title("main.d()")])
            #expect(alerts.map(\.lastHour) == [12, 6])
            #expect(alerts.first?.baselinePerHour == 7.0 / 168)
            #expect(alerts.last?.baselinePerHour == 2)
            // The default rule's minimum of 10 leaves only A; a factor of 4 leaves D out too.
            #expect(try await IssueMetrics(store: store, rule: AlertRule()).alerts(now: Self.now).map(\.issue.title) == [title("main.a()")])
            #expect(try await IssueMetrics(store: store, rule: AlertRule(factor: 4, minimum: 4)).alerts(now: Self.now)
                .map(\.issue.title) == [title("main.a()")])
            // Two hours later the spike is the baseline's: no alert.
            #expect(try await IssueMetrics(store: store, rule: AlertRule(factor: 3, minimum: 4)).alerts(now: Self.now + 7200).isEmpty)
        }
    }

    @Test func readAPIAndDashboardShowThem() async throws {
        try await TestCollector.with { collector in
            let now = TestClock.now()
            try await storeEvents(collector.store, function: "main.spike()", count: 12, at: now - 300)
            try await storeEvents(collector.store, function: "main.old()", count: 4, at: now - 3 * 86_400)
            let spike = try await issueID(collector.store, "main.spike()")
            // Sessions for the crash-free charts: two clean, one crashed.
            #expect(try await collector.beacons(["sessions": [beacon("s-1", user: "u-1"), beacon("s-2", user: "u-2")]]).status == 202)
            try await SessionBeaconTests.crashUpload(collector, session: "s-1", user: "u-1")

            let top = try await collector.read("/api/top-crashes?limit=5")
            #expect(top.status == 200)
            let day = try #require(top.json["last_24h"] as? [[String: Any]])
            let week = try #require(top.json["last_7d"] as? [[String: Any]])
            #expect(day.first?["events"] as? Int == 12)
            #expect((day.first?["issue"] as? [String: Any])?["title"] as? String == title("main.spike()"))
            #expect(day.count == 2)   // the spike, the crash of s-1
            #expect(week.map { $0["events"] as? Int } == [12, 4, 1])
            let trend = try #require((day.first?["issue"] as? [String: Any])?["trend"] as? [[String: Any]])
            #expect(trend.count == 14)
            #expect(trend.last?["day"] as? String == utcDay(now))
            #expect(trend.last?["events"] as? Int == 12)
            #expect(try await collector.read("/api/top-crashes?kind=non_fatal").json["last_7d"] as? [Any] != nil)

            let alerts = try await collector.read("/api/alerts")
            #expect(alerts.status == 200)
            let rule = try #require(alerts.json["rule"] as? [String: Any])
            #expect(rule["factor"] as? Double == 3 && rule["minimum"] as? Int == 10)
            let listed = try #require(alerts.json["alerts"] as? [[String: Any]])
            #expect(listed.count == 1)
            #expect((listed.first?["issue"] as? [String: Any])?["id"] as? Int == Int(spike))
            #expect(listed.first?["last_hour"] as? Int == 12)
            #expect(try await collector.read("/api/alerts", authorized: false).status == 401)
            #expect(try await collector.read("/api/top-crashes", authorized: false).status == 401)

            let issues = try #require(try await collector.read("/api/issues").json["issues"] as? [[String: Any]])
            let listedSpike = try #require(issues.first { $0["id"] as? Int == Int(spike) })
            #expect((listedSpike["trend"] as? [[String: Any]])?.last?["events"] as? Int == 12)
            let detail = try await collector.read("/api/issues/\(spike)")
            #expect(((detail.json["issue"] as? [String: Any])?["trend"] as? [[String: Any]])?.count == 14)

            let home = try await collector.read("/")
            #expect(home.status == 200)
            for expected in ["<svg class=\"chart\" id=\"crash-free-sessions\"", "<svg class=\"chart\" id=\"crash-free-users\"",
                             "<title id=\"crash-free-sessions-title\">Crash-free sessions per day", "<desc id=\"crash-free-users-desc\">",
                             "target &gt; 99.90%", "target &gt; 99.50%", "id=\"crash-free-table\"", "2.1.0 (com.example.crashdemo)",
                             "<section id=\"top-crashes\">", "By events, last 24 hours", "id=\"velocity-alerts\"",
                             "<a href=\"/issues/\(spike)\">\(h(title("main.spike()")))</a>", "badge spike", "<svg class=\"spark\"",
                             "data-day=\"\(utcDay(now))\" data-events=\"12\""] {
                #expect(home.text.contains(expected), "the issues page lacks \(expected)")
            }
            // Each day's point carries its numbers (the stored events' own session crashed too).
            let today = try #require(try await collector.store.crashFree(days: 1, now: now).first)
            #expect(today.sessions == 3 && today.crashedSessions == 2)
            #expect(home.text.contains("2.1.0 (com.example.crashdemo), \(today.day): 33.33% crash-free sessions (1 of 3)"))
            // No script beyond the Connect App modal's, and nothing fetched from elsewhere.
            #expect(home.text.components(separatedBy: "<script").count == 2)
            #expect(!home.text.contains("src=\"http"))

            let page = try await collector.read("/issues/\(spike)")
            #expect(page.text.contains("id=\"issue-trend\""))
            #expect(page.text.contains("data-events=\"12\""))
            #expect(page.text.contains("id=\"velocity-alerts\""))
            let quiet = try await collector.read("/issues/\(try await issueID(collector.store, "main.old()"))")
            #expect(!quiet.text.contains("velocity-alerts"))
        }
    }

    /// An HTTP server on loopback recording what is POSTed to it; the first answer is a 503.
    final class Listener: Sendable {
        let bodies = Mutex<[Data]>([])
        let requests = Mutex(0)

        func run(_ body: (URL) async throws -> Void) async throws {
            let router = Router()
            router.post("/hook") { [self] request, _ -> HTTPResponse.Status in
                let data = Data(buffer: try await request.body.collect(upTo: 1 << 20))
                let count = requests.withLock { $0 += 1; return $0 }
                if count == 1 { return .serviceUnavailable }
                bodies.withLock { $0.append(data) }
                return .ok
            }
            let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
            var logger = Logger(label: "webhook-listener")
            logger.logLevel = .error
            let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                                  onServerRunning: { channel in
                                      continuation.yield(channel.localAddress?.port ?? 0)
                                      continuation.finish()
                                  }, logger: logger)
            let server = Task { try await app.runService() }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            let outcome = await Result { try await body(URL(string: "http://127.0.0.1:\(port)/hook")!) }
            server.cancel()
            _ = await server.result
            try outcome.get()
        }

        func waitFor(requests expected: Int) async throws {
            for _ in 0..<100 where requests.withLock({ $0 }) < expected { try await Task.sleep(for: .milliseconds(100)) }
        }
    }

    @Test func webhookIsPostedOncePerIssueAndRetriedAfterAFailure() async throws {
        let listener = Listener()
        try await listener.run { url in
            try await TestCollector.with(configure: {
                $0.alertWebhook = url
                $0.alertCheckInterval = .milliseconds(100)
                $0.alertRule = AlertRule(factor: 3, minimum: 3)
            }) { collector in
                try await storeEvents(collector.store, function: "main.spike()", count: 3, at: TestClock.now() - 60)
                try await storeEvents(collector.store, function: "main.quiet()", count: 2, at: TestClock.now() - 60)
                try await listener.waitFor(requests: 2)
                try await Task.sleep(for: .seconds(1))   // ten more checks
                #expect(listener.requests.withLock { $0 } == 2)   // the 503, then one delivery
                let bodies = listener.bodies.withLock { $0 }
                #expect(bodies.count == 1)
                let body = try #require(try JSONSerialization.jsonObject(with: bodies[0]) as? [String: Any])
                let spike = try await issueID(collector.store, "main.spike()")
                #expect(body["type"] as? String == "velocity_alert")
                #expect(body["last_hour"] as? Int == 3)
                #expect(body["issue_path"] as? String == "/issues/\(spike)")
                #expect((body["issue"] as? [String: Any])?["title"] as? String == title("main.spike()"))
                #expect((body["rule"] as? [String: Any])?["minimum"] as? Int == 3)

                // Another issue's spike is its own alert.
                try await storeEvents(collector.store, function: "main.quiet()", count: 2, at: TestClock.now() - 30)
                try await listener.waitFor(requests: 3)
                #expect(listener.requests.withLock { $0 } == 3)
                let last = try #require(try JSONSerialization.jsonObject(with: listener.bodies.withLock { $0 }.last!) as? [String: Any])
                #expect((last["issue"] as? [String: Any])?["title"] as? String == title("main.quiet()"))
                #expect(last["last_hour"] as? Int == 4)
            }
        }
    }
}
