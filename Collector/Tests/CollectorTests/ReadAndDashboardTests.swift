// Grouping seen from outside (two identical crashes → one issue), the read API's JSON, and the
// dashboard pages behind their password.
import Collector
import CrashReportModel
import Foundation
import Testing

/// The sample crash as another launch would send it: other addresses (ASLR), another line, user.
func sameCrashElsewhere(user: String, version: String = "2.1.0") throws -> DiagnosticsPayload {
    var payload = try Fixtures.samplePayload()
    payload.user_id = user
    payload.app_metadata.app_version = version
    payload.crash_reports = [payload.crash_reports[0]]
    var thread = payload.crash_reports[0].thread_info[0]
    thread.frames = thread.frames.map { frame in
        var frame = frame
        frame.address = "0x7ff0" + frame.address.dropFirst(6)
        frame.line = frame.line.map { $0 + 3 }
        return frame
    }
    payload.crash_reports[0].thread_info = [thread]
    payload.crash_reports[0].timestamp = "2026-02-17T09:00:00.000Z"
    payload.crash_reports[0].report_id = UUID().uuidString.lowercased()
    return payload
}

@Suite struct ReadAPITests {
    @Test func twoIdenticalCrashesAreOneIssue() async throws {
        try await TestCollector.with { collector in
            #expect(try await collector.upload(try sameCrashElsewhere(user: "user-1").encoded()).status == 201)
            #expect(try await collector.upload(try sameCrashElsewhere(user: "user-2", version: "2.2.0").encoded()).status == 201)
            #expect(try await collector.upload(try sameCrashElsewhere(user: "user-2", version: "2.2.0").encoded()).status == 201)

            let answer = try await collector.read("/api/issues?kind=crash")
            #expect(answer.status == 200)
            let issues = try #require(answer.json["issues"] as? [[String: Any]])
            #expect(issues.count == 1)
            let issue = issues[0]
            #expect(issue["event_count"] as? Int == 3)
            #expect(issue["user_count"] as? Int == 2)
            #expect(issue["versions"] as? [String] == ["2.1.0", "2.2.0"])
            #expect(issue["title"] as? String == "crash() — SIGSEGV")
            #expect(issue["subtitle"] as? String == "SIGSEGV: invalid memory access at 0x0")
            #expect(issue["first_seen"] as? String == "2026-02-17T09:00:00.000Z")
            #expect(issue["bundle_id"] as? String == "com.example.crashdemo")

            // Another function is another issue.
            var other = try sameCrashElsewhere(user: "user-3")
            other.crash_reports[0].thread_info[0].frames[0].function = "main.otherCrash()"
            #expect(try await collector.upload(try other.encoded()).status == 201)
            let after = try #require(try await collector.read("/api/issues?kind=crash").json["issues"] as? [[String: Any]])
            #expect(after.count == 2)
        }
    }

    @Test func anEventOfAnIssueOpensWhole() async throws {
        try await TestCollector.with { collector in
            #expect(try await collector.upload(try sameCrashElsewhere(user: "user-1").encoded()).status == 201)
            #expect(try await collector.upload(try sameCrashElsewhere(user: "user-2", version: "2.2.0").encoded()).status == 201)
            let issue = try #require(try await collector.read("/api/issues?kind=crash").json["issues"] as? [[String: Any]]).first
            let id = try #require(issue?["id"] as? Int)
            let detail = try await collector.read("/api/issues/\(id)").json
            let events = try #require(detail["events"] as? [[String: Any]])
            #expect(events.count == 2)
            #expect(events.allSatisfy { ($0["host"] as? String)?.isEmpty == false }, "\(events)")
            let older = try #require(events.last?["id"] as? Int)
            let opened = try await collector.read("/api/issues/\(id)?event=\(older)").json
            #expect((opened["event"] as? [String: Any])?["id"] as? Int == older)
            #expect((opened["event"] as? [String: Any])?["user_id"] as? String == "user-1")
            #expect(detail["event"] == nil, "no event asked, none given")
            let latest = try await collector.read("/issues/\(id)")
            #expect(latest.text.contains("<h2>Latest event</h2>"))
            #expect(latest.text.contains("href=\"/issues/\(id)?event=\(older)\""))
            let page = try await collector.read("/issues/\(id)?event=\(older)")
            #expect(page.status == 200)
            #expect(page.text.contains("<h2>Event \(older)</h2>"))
            #expect(page.text.contains("user-1"))
            // Not one of this issue's events: the latest is shown.
            #expect(try await collector.read("/issues/\(id)?event=999999").text.contains("<h2>Latest event</h2>"))
        }
    }

    @Test func issuesAndEventsComeAPageAtATime() async throws {
        try await TestCollector.with { collector in
            // Five events of one issue, at five times; another issue, older.
            for minute in 0..<5 {
                var payload = try sameCrashElsewhere(user: "user-\(minute)")
                payload.crash_reports[0].timestamp = "2026-02-17T09:0\(minute):00.000Z"
                #expect(try await collector.upload(try payload.encoded()).status == 201)
            }
            var other = try sameCrashElsewhere(user: "user-9")
            other.crash_reports[0].thread_info[0].frames[0].function = "main.otherCrash()"
            other.crash_reports[0].timestamp = "2026-02-16T09:00:00.000Z"
            #expect(try await collector.upload(try other.encoded()).status == 201)

            let first = try await collector.read("/api/issues?kind=crash&limit=1")
            let firstIssues = try #require(first.json["issues"] as? [[String: Any]])
            #expect(firstIssues.count == 1 && firstIssues[0]["event_count"] as? Int == 5)
            #expect(first.json["next_offset"] as? Int == 1)
            let second = try await collector.read("/api/issues?kind=crash&limit=1&offset=1")
            #expect((second.json["issues"] as? [[String: Any]])?.first?["title"] as? String == "otherCrash() — SIGSEGV")
            #expect(second.json["next_offset"] == nil)

            let id = try #require(firstIssues[0]["id"] as? Int)
            var users: [String] = []
            var path = "/api/issues/\(id)?events=2"
            var pages = 0
            while pages < 10 {
                let detail = try await collector.read(path).json
                let events = try #require(detail["events"] as? [[String: Any]])
                users += events.compactMap { $0["user_id"] as? String }
                #expect((detail["latest_event"] as? [String: Any])?["user_id"] as? String == "user-4", "the latest on every page")
                pages += 1
                guard let next = detail["next_events_before"] as? Int else { break }
                path = "/api/issues/\(id)?events=2&events_before=\(next)"
            }
            #expect(pages == 3)
            #expect(users == ["user-4", "user-3", "user-2", "user-1", "user-0"])

            // The oldest event opens whole though it is not on the first page.
            let all = try #require(try await collector.read("/api/issues/\(id)?events=5").json["events"] as? [[String: Any]])
            let oldest = try #require(all.last?["id"] as? Int)
            let opened = try await collector.read("/api/issues/\(id)?events=2&event=\(oldest)").json
            #expect((opened["event"] as? [String: Any])?["user_id"] as? String == "user-0")
            // Another issue's event does not open here.
            let otherID = try #require((second.json["issues"] as? [[String: Any]])?.first?["id"] as? Int)
            let otherEvent = try #require((try await collector.read("/api/issues/\(otherID)").json["events"] as? [[String: Any]])?.first?["id"] as? Int)
            #expect(try await collector.read("/api/issues/\(id)?event=\(otherEvent)").json["event"] == nil)

            // The dashboard pages through the same way (50 events a page there).
            let page = try await collector.read("/issues/\(id)")
            #expect(page.status == 200 && !page.text.contains("older events"))
        }
    }

    @Test func issueDetailCarriesTheLatestEvent() async throws {
        try await TestCollector.with { collector in
            #expect(try await collector.upload(try Fixtures.samplePayloadData()).status == 201)
            let list = try #require(try await collector.read("/api/issues").json["issues"] as? [[String: Any]])
            #expect(Set(list.compactMap { $0["kind"] as? String }) == ["crash", "non_fatal", "abnormal_termination"])
            let crash = try #require(list.first { $0["kind"] as? String == "crash" })
            let id = try #require(crash["id"] as? Int)

            let answer = try await collector.read("/api/issues/\(id)")
            #expect(answer.status == 200)
            let event = try #require(answer.json["latest_event"] as? [String: Any])
            #expect(event["reason"] as? String == "SIGSEGV: invalid memory access at 0x0")
            #expect((event["signal"] as? [String: Any])?["name"] as? String == "SIGSEGV")
            let frames = try #require(event["frames"] as? [[String: Any]])
            #expect(frames.count == 4)
            #expect(frames[0]["function"] as? String == "main.crash()")
            #expect(frames[0]["line"] as? Int == 12)
            #expect(frames[0]["in_app"] as? Bool == true)
            #expect(frames[0]["display_function"] as? String == "crash()")
            #expect(frames[0]["origin"] as? String == "app")
            #expect(frames[2]["origin"] as? String == "system")
            #expect(frames[2]["module"] as? String == "libc.so.6")
            #expect(frames[2]["in_app"] as? Bool == false)
            #expect((event["logs"] as? [Any])?.count == 2)
            #expect((event["network_errors"] as? [[String: Any]])?.first?["status_code"] as? Int == 500)
            #expect((event["custom_keys"] as? [String: Any])?["plan"] as? String == "free")
            #expect((event["custom_data"] as? [String: Any])?["selected_child_count"] as? Int == 2)
            #expect((event["app_metadata"] as? [String: Any])?["app_version"] as? String == "2.1.0")
            #expect((event["device_metadata"] as? [String: Any])?["virtualization"] as? String == "kvm")
            #expect(event["user_id"] as? String == "user-1234")
            #expect((answer.json["events"] as? [Any])?.count == 1)

            #expect(try await collector.read("/api/issues/999999").status == 404)
            #expect(try await collector.read("/api/issues/abc").status == 404)
        }
    }

    @Test func readAPINeedsTheDashboardPassword() async throws {
        try await TestCollector.with { collector in
            let anonymous = try await collector.read("/api/issues", authorized: false)
            #expect(anonymous.status == 401)
            #expect(anonymous.header("WWW-Authenticate")?.hasPrefix("Basic") == true)
            // The ingest token is not a dashboard credential.
            let withToken = try await collector.get("/api/issues", headers: ["Authorization": "Bearer \(TestCollector.token)"])
            #expect(withToken.status == 401)
            let wrong = Data("admin:wrong".utf8).base64EncodedString()
            #expect(try await collector.get("/api/issues", headers: ["Authorization": "Basic \(wrong)"]).status == 401)
        }
    }

    @Test func openAPIDocumentIsServedAndNamesEveryRoute() async throws {
        try await TestCollector.with { collector in
            let answer = try await collector.get("/openapi.json")
            #expect(answer.status == 200)
            let paths = try #require(answer.json["paths"] as? [String: Any])
            #expect(Set(paths.keys) == ["/api/v1/qa/diagnostics", "/api/v1/sessions", "/api/logs", "/api/issues", "/api/issues/{id}",
                                        "/api/crash-free", "/api/top-crashes", "/api/alerts", "/api/connect-link", "/connect/qr.svg", "/metrics",
                                        "/schemas/diagnostics-payload.schema.json", "/health", "/openapi.json"])
        }
    }

    @Test func crashFreeRatesPerVersionAndDay() async throws {
        try await TestCollector.with { collector in
            // A crashed session and a clean one (a diagnostics snapshot at session end), both today:
            // a session counts on the day it ran.
            let now = TestClock.now().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
            var crashed = try sameCrashElsewhere(user: "user-1")
            crashed.crash_reports[0].timestamp = now
            #expect(try await collector.upload(try crashed.encoded()).status == 201)
            var clean = try Fixtures.samplePayload()
            clean.timestamp_collected = now
            clean.test_run_id = "11111111-2222-4333-8444-555555555555"
            clean.user_id = "user-2"
            clean.crash_reports = []
            #expect(try await collector.upload(try clean.encoded()).status == 201)

            let answer = try await collector.read("/api/crash-free?days=7")
            #expect(answer.status == 200)
            let rows = try #require(answer.json["rows"] as? [[String: Any]])
            #expect(rows.count == 1)
            #expect(rows[0]["sessions"] as? Int == 2)
            #expect(rows[0]["crashed_sessions"] as? Int == 1)
            #expect(rows[0]["crash_free_users"] as? Double == 0.5)
            #expect((answer.json["targets"] as? [String: Any])?["crash_free_sessions"] as? Double == 0.999)

            // February's sample session is counted in February, not on the day it arrived.
            var february = try Fixtures.samplePayload()
            february.test_run_id = "22222222-2222-4333-8444-555555555555"
            #expect(try await collector.upload(try february.encoded()).status == 201)
            let later = try #require(try await collector.read("/api/crash-free?days=7").json["rows"] as? [[String: Any]])
            #expect(later.count == 1)
            #expect(later[0]["sessions"] as? Int == 2)
        }
    }
}

@Suite struct DashboardTests {
    @Test func requestsInFlightAreStoredServedAndShown() async throws {
        try await TestCollector.with { collector in
            var object = try #require(try JSONSerialization.jsonObject(with: Fixtures.samplePayloadData()) as? [String: Any])
            var reports = try #require(object["crash_reports"] as? [[String: Any]])
            let index = try #require(reports.firstIndex { ($0["kind"] as? String ?? "crash") == "crash" })
            reports[index]["requests_in_flight"] = [
                ["method": "GET", "route": "/slow", "request_id": "5b97d1c2a0e34f6e0000000000000001", "thread_id": 7, "age_ms": 1500, "crashed_thread": false],
                ["method": "GET", "route": "/users/{id}", "request_id": "5b97d1c2a0e34f6e0000000000000002", "thread_id": 9, "age_ms": 3, "crashed_thread": true],
            ]
            object["crash_reports"] = reports
            #expect(try await collector.upload(try JSONSerialization.data(withJSONObject: object)).status == 201)
            let issues = try await collector.store.issues(.init(kind: "crash"))
            let id = try #require(issues.first).id
            let event = try #require(try await collector.read("/api/issues/\(id)").json["latest_event"] as? [String: Any])
            let requests = try #require(event["requests_in_flight"] as? [[String: Any]])
            #expect(requests.compactMap { $0["route"] as? String } == ["/slow", "/users/{id}"])
            let page = try await collector.read("/issues/\(id)")
            #expect(page.text.contains("Requests in flight (2)"))
            // The one that started on the crashing thread is listed first.
            let users = try #require(page.text.range(of: h("/users/{id}")))
            let slow = try #require(page.text.range(of: "<code>/slow</code>"))
            #expect(users.lowerBound < slow.lowerBound)
            #expect(page.text.contains("the crashing thread"))

            object["crash_reports"] = [reports[index].merging(["requests_in_flight": [["method": "GET"]]]) { $1 }]
            #expect(try await collector.upload(try JSONSerialization.data(withJSONObject: object)).status == 400, "a request without a route")
        }
    }

    @Test func oomKillIsItsOwnIssueWithTheMemoryBeforeTheEnd() async throws {
        try await TestCollector.with { collector in
            var object = try #require(try JSONSerialization.jsonObject(with: Fixtures.samplePayloadData()) as? [String: Any])
            var reports = try #require(object["crash_reports"] as? [[String: Any]])
            let index = try #require(reports.firstIndex { $0["kind"] as? String == "abnormal_termination" })
            reports[index]["termination"] = [
                "kind": "oom_kill",
                "memory": ["cgroup": "/sys/fs/cgroup/system.slice/api.service", "limit_bytes": 67_108_864, "samples": [
                    ["timestamp": "2026-11-23T20:00:00.000Z", "rss_bytes": 31_457_280, "cgroup_bytes": 20_971_520],
                    ["timestamp": "2026-11-23T20:00:05.000Z", "rss_bytes": 73_400_320, "cgroup_bytes": 66_060_288],
                ]],
            ]
            object["crash_reports"] = [reports[index]]
            #expect(try await collector.upload(try JSONSerialization.data(withJSONObject: object)).status == 201)
            let issues = try await collector.store.issues(.init(kind: "abnormal_termination"))
            let issue = try #require(issues.first)
            #expect(issue.title.contains("oom_kill"), "\(issue.title)")
            let page = try await collector.read("/issues/\(issue.id)")
            #expect(page.text.contains("oom_kill (the kernel&#39;s OOM killer)") || page.text.contains("oom_kill (the kernel's OOM killer)"))
            #expect(page.text.contains("64.0 MiB"))
            #expect(page.text.contains("RSS 30.0 MiB → 70.0 MiB"))
            #expect(page.text.contains("cgroup 20.0 MiB → 63.0 MiB"))
        }
    }

    @Test func pagesRenderWithTheIssue() async throws {
        try await TestCollector.with { collector in
            #expect(try await collector.upload(try Fixtures.samplePayloadData()).status == 201)
            let event = #"{"type":"api_log","appId":"com.example.crashdemo","method":"POST","url":"https://api.example.com/v1/photos","statusCode":503,"duration":88,"timestamp":1760000000123,"requestHeaders":{},"responseHeaders":{}}"#
            #expect(try await collector.request("POST", "/api/logs", headers: ["Authorization": "Bearer \(TestCollector.token)"],
                                                body: Data(event.utf8)).status == 201)

            let home = try await collector.read("/")
            #expect(home.status == 200)
            #expect(home.header("Content-Type")?.hasPrefix("text/html") == true)
            #expect(home.text.contains("crash() — SIGSEGV"))
            #expect(home.text.contains("SIGSEGV: invalid memory access at 0x0"))
            #expect(home.text.contains("Connect App"))
            #expect(home.text.contains("Crash-free"))

            let issues = try await collector.store.issues(.init(kind: "crash"))
            let page = try await collector.read("/issues/\(try #require(issues.first).id)")
            #expect(page.status == 200)
            for expected in ["crash() — SIGSEGV", "/src/Examples/CrashDemo/main.swift:12", "libc.so.6", "Failed to fetch feed: HTTP 500",
                             "https://api.example.com/v1/feed/[ID]?date=[REDACTED]", "plan", "QEMU Standard PC", "CrashDemo",
                             "user-1234", "Breadcrumbs"] {
                #expect(page.text.contains(h(expected)), "issue page lacks \(expected)")
            }

            let logs = try await collector.read("/logs")
            #expect(logs.status == 200)
            #expect(logs.text.contains("https://api.example.com/v1/photos"))
            #expect(logs.text.contains("503"))

            #expect(try await collector.read("/issues/424242").status == 404)
            let anonymous = try await collector.read("/", authorized: false)
            #expect(anonymous.status == 401)
            #expect(anonymous.header("WWW-Authenticate")?.contains("Basic") == true)
        }
    }

    @Test func connectAppModalAndLink() async throws {
        try await TestCollector.with { collector in
            let home = try await collector.read("/")
            for expected in ["id=\"connect\"", "id=\"app-id\"", "id=\"deep-link\"", "id=\"copy\"", "dev-see-", "0.0.0.0",
                             "same LAN", "value=\"\(collector.base.port!)\""] {
                #expect(home.text.contains(expected), "modal lacks \(expected)")
            }
            let link = try await collector.read("/api/connect-link?app_id=com.example.app")
            #expect(link.status == 200)
            #expect(link.json["deep_link"] as? String
                    == "dev-see-com.example.app://connect?server_ip=127.0.0.1&server_port=\(collector.base.port!)")
            #expect(link.json["warning"] as? String != nil)   // loopback only: a phone cannot reach it
            let invalid = try await collector.read("/api/connect-link?app_id=com..bad%20id")
            #expect(invalid.status == 400)
            #expect(invalid.json["valid"] as? Bool == false)
        }
    }
}

/// The dashboard escapes what it shows; tests look for the escaped text.
private func h(_ text: String) -> String {
    text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        .replacingOccurrences(of: "'", with: "&#39;")
}
