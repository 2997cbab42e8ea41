// POST /api/v1/qa/diagnostics against a running collector: every answer of seed 000's contract,
// with the bodies Tests/Support/fake_collector.py gives (the runtime's tests were written to it).
import Collector
import CrashReportModel
import Foundation
import Testing

@Suite struct IngestTests {
    @Test func missingOrWrongTokenIs401() async throws {
        try await TestCollector.with { collector in
            let body = try Fixtures.samplePayloadData()
            for token in [nil, "wrong-token", ""] as [String?] {
                let answer = try await collector.upload(body, token: token)
                #expect(answer.status == 401)
                #expect(answer.json["error"] as? String == "unauthorized")
                #expect(answer.json["message"] as? String == "Missing or invalid bearer token")
            }
            // Any of the configured tokens is accepted.
            #expect(try await collector.upload(body, token: "second-token").status == 201)
        }
    }

    @Test func sampleUploadGzipIsAccepted() async throws {
        try await TestCollector.with { collector in
            let answer = try await collector.upload(try Fixtures.samplePayloadData(), gzip: true)
            #expect(answer.status == 201)
            #expect(answer.header("Content-Type") == "application/json")
            let json = answer.json
            #expect((json["diagnostics_id"] as? String)?.hasPrefix("diag_") == true)
            #expect(json["test_run_id"] as? String == "550e8400-e29b-41d4-a716-446655440000")
            #expect(json["status"] as? String == "accepted")
            let received = try #require(json["received_at"] as? String)
            #expect(received.hasSuffix("Z"))
            #expect((try? Date(received, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))) != nil)
        }
    }

    @Test func plainJSONIsAccepted() async throws {
        try await TestCollector.with { collector in
            let answer = try await collector.upload(try Fixtures.samplePayloadData(), gzip: false)
            #expect(answer.status == 201)
        }
    }

    @Test func seedExampleFromAnIOSSenderIsAccepted() async throws {
        // No crash_reports, no Linux extensions (cpu_model, custom_keys…): all optional for the seed.
        try await TestCollector.with { collector in
            let answer = try await collector.upload(Fixtures.seedExample)
            #expect(answer.status == 201, "\(answer.text)")
            #expect(answer.json["test_run_id"] as? String == "550e8400-e29b-41d4-a716-446655440000")
        }
    }

    @Test func missingRequiredFieldsAre400WithDetails() async throws {
        try await TestCollector.with { collector in
            var object = try #require(try JSONSerialization.jsonObject(with: Fixtures.samplePayloadData()) as? [String: Any])
            object["test_run_id"] = nil
            var app = try #require(object["app_metadata"] as? [String: Any])
            app["bundle_id"] = nil
            object["app_metadata"] = app
            let answer = try await collector.upload(try JSONSerialization.data(withJSONObject: object))
            #expect(answer.status == 400)
            #expect(answer.json["error"] as? String == "validation_failed")
            #expect(answer.json["message"] as? String == "Missing required field: test_run_id")
            let details = try #require(answer.json["details"] as? [String])
            #expect(details.contains("test_run_id is required"))
            #expect(details.contains("app_metadata.bundle_id is required"))
        }
    }

    @Test func wrongTypesAndBadJSONAre400() async throws {
        try await TestCollector.with { collector in
            var object = try #require(try JSONSerialization.jsonObject(with: Fixtures.samplePayloadData()) as? [String: Any])
            var device = try #require(object["device_metadata"] as? [String: Any])
            device["is_simulator"] = "yes"
            object["device_metadata"] = device
            let typed = try await collector.upload(try JSONSerialization.data(withJSONObject: object))
            #expect(typed.status == 400)
            #expect((typed.json["details"] as? [String])?.contains("device_metadata.is_simulator must be a boolean") == true)

            // A nested field the model needs: the detail names its path.
            var reports = try #require(object["crash_reports"] as? [[String: Any]])
            device["is_simulator"] = false
            object["device_metadata"] = device
            reports[0]["exception_type"] = nil
            object["crash_reports"] = reports
            let nested = try await collector.upload(try JSONSerialization.data(withJSONObject: object))
            #expect(nested.status == 400)
            #expect((nested.json["details"] as? [String])?.first?.contains("crash_reports/0/exception_type") == true, "\(nested.text)")

            let broken = try await collector.upload(Data("{not json".utf8))
            #expect(broken.status == 400)
            #expect(broken.json["error"] as? String == "validation_failed")

            var corrupt = try Gzipped.compress(try Fixtures.samplePayloadData())
            corrupt.removeLast(20)
            let truncated = try await collector.request("POST", "/api/v1/qa/diagnostics", headers: [
                "Authorization": "Bearer \(TestCollector.token)", "Content-Encoding": "gzip",
            ], body: corrupt)
            #expect(truncated.status == 400)
            #expect((truncated.json["message"] as? String)?.contains("gzip") == true)
        }
    }

    /// Found by tools/collector-schemathesis: a cpu_count of 5696625466682551145479536640 trapped in
    /// Int(_:) and took the collector down. Numbers past Int's range are a 400 now, whole doubles
    /// still count.
    @Test func numbersPastIntRangeAre400AndTheCollectorStaysUp() async throws {
        try await TestCollector.with { collector in
            let sample = try Fixtures.samplePayloadData()
            let text = String(decoding: sample, as: UTF8.self)
            for (field, value) in [("cpu_count", "5696625466682551145479536640"), ("cpu_count", "1e300"),
                                   ("total_memory_mb", "1e20"), ("available_storage_mb", "-9.3e18"),
                                   ("total_memory_mb", "100000000000000000000")] {
                let body = try #require(text.range(of: "\"\(field)\": ")).upperBound
                let end = try #require(text[body...].firstIndex { $0 == "," || $0 == "\n" || $0 == "}" })
                let changed = text.replacingCharacters(in: body..<end, with: value)
                let answer = try await collector.upload(Data(changed.utf8))
                #expect(answer.status == 400, "\(field): \(value) answered \(answer.status) \(answer.text)")
                #expect(answer.json["error"] as? String == "validation_failed")
            }
            var object = try #require(try JSONSerialization.jsonObject(with: sample) as? [String: Any])
            var device = try #require(object["device_metadata"] as? [String: Any])
            device["total_memory_mb"] = 16384.0
            device["cpu_count"] = 8.0
            object["device_metadata"] = device
            #expect(try await collector.upload(try JSONSerialization.data(withJSONObject: object)).status == 201)
            #expect(try await collector.get("/health").status == 200)
        }
    }

    /// Found by tools/collector-schemathesis on PostgreSQL: a payload string with U+0000 (valid JSON,
    /// "\u0000") was a 500 there (text cannot hold it), for ever retried by the runtime. Stored
    /// now on both stores, as U+FFFD in text columns; filters with it find what was stored.
    @Test func nulCharactersInStringsAreStored() async throws {
        try await TestCollector.with { collector in
            var payload = try sameCrashElsewhere(user: "user\u{0}1")
            payload.app_metadata.bundle_id = "com.example\u{0}nul"
            payload.app_metadata.app_version = "2.1\u{0}"
            payload.test_run_id = "run\u{0}1"
            payload.crash_reports[0].exception_type = "SIG\u{0}SEGV"
            payload.crash_reports[0].report_id = "report\u{0}1"
            payload.crash_reports[0].thread_info[0].frames[0].function = "main.cr\u{0}ash()"
            payload.logs[0].message = "a\u{0}b"
            let answer = try await collector.upload(try payload.encoded())
            #expect(answer.status == 201, "\(answer.text)")
            #expect(answer.json["test_run_id"] as? String == "run\u{0}1")

            let issues = try #require(try await collector.read("/api/issues?bundle_id=com.example%00nul").json["issues"] as? [[String: Any]])
            #expect(issues.count == 1)
            #expect(issues.first?["title"] as? String == "cr\u{FFFD}ash() — SIG\u{FFFD}SEGV")
            #expect(issues.first?["bundle_id"] as? String == "com.example\u{FFFD}nul")
            let id = try #require(issues.first?["id"] as? Int)
            let detail = try await collector.read("/api/issues/\(id)")
            #expect(detail.status == 200)
            let event = try #require(detail.json["latest_event"] as? [String: Any])
            #expect((event["frames"] as? [[String: Any]])?.first?["function"] as? String == "main.cr\u{0}ash()")   // the JSON as sent
            #expect(try await collector.read("/issues/\(id)").status == 200)
            #expect(try await collector.read("/").status == 200)

            let log = #"{"type":"api_log","appId":"com.example\u0000nul","method":"GET","url":"https://x/\u0000","statusCode":200}"#
            #expect(try await collector.request("POST", "/api/logs", headers: ["Authorization": "Bearer \(TestCollector.token)"],
                                                body: Data(log.utf8)).status == 201)
            let logs = try #require(try await collector.read("/api/logs?app_id=com.example%00nul").json["logs"] as? [[String: Any]])
            #expect(logs.count == 1)
            #expect(try await collector.read("/logs").status == 200)
        }
    }

    @Test func over5MiBAsSentIs413() async throws {
        try await TestCollector.with { collector in
            // Sent uncompressed: the limit is on the body as sent, one byte over.
            let big = Data(repeating: UInt8(ascii: " "), count: 5 * 1024 * 1024 + 1)
            let answer = try await collector.upload(big, gzip: false)
            #expect(answer.status == 413)
            #expect(answer.json["error"] as? String == "payload_too_large")
            #expect(answer.json["message"] as? String == "Payload exceeds 5MB limit")
            #expect(answer.json["max_size_bytes"] as? Int == 5_242_880)
            // The connection is still usable afterwards (the rest of the body was drained).
            #expect(try await collector.upload(try Fixtures.samplePayloadData()).status == 201)
        }
    }

    @Test func expectContinueIsAnsweredAtOnce() async throws {
        // libcurl (the runtime's URLSession) asks first for bodies over 1 MB and waits 1 s otherwise.
        try await TestCollector.with { collector in
            let (answer, interim) = try await RawHTTP.request(
                port: collector.base.port!, method: "POST", path: "/api/v1/qa/diagnostics",
                headers: ["Authorization": "Bearer \(TestCollector.token)", "Content-Type": "application/json"],
                body: try Fixtures.samplePayloadData(), expectContinue: true)
            #expect(interim == 100)
            #expect(answer.status == 201)
        }
    }

    @Test func largeJSONThatCompressesUnder5MiBIsAccepted() async throws {
        try await TestCollector.with { collector in
            var payload = try Fixtures.samplePayload()
            payload.logs = (0..<500).map { index in
                .init(timestamp: "2026-02-16T14:29:45.123Z", level: "info", tag: "Bulk",
                      message: String(repeating: "log line \(index) ", count: 60))
            }
            let json = try payload.encoded()
            let gzipped = try Gzipped.compress(json)
            #expect(gzipped.count < 5 * 1024 * 1024)
            let answer = try await collector.upload(json)
            #expect(answer.status == 201, "\(answer.text)")
        }
    }

    @Test func inflationPastTheCapIs413() async throws {
        try await TestCollector.with(configure: { $0.maxInflatedBytes = 64 * 1024 }) { collector in
            var payload = try Fixtures.samplePayload()
            payload.custom_data["padding"] = .string(String(repeating: "a", count: 100_000))
            let answer = try await collector.upload(try payload.encoded())
            #expect(answer.status == 413)
        }
    }

    @Test func repeatedIdempotencyKeyStoresOnceAndAnswersTheSame() async throws {
        try await TestCollector.with { collector in
            let body = try Fixtures.samplePayloadData()
            let first = try await collector.upload(body, key: "record-1")
            let second = try await collector.upload(body, key: "record-1")
            #expect(first.status == 201)
            #expect(second.status == 201)
            #expect(first.body == second.body)
            let issues = try await collector.store.issues(IssueQuery())
            #expect(issues.first { $0.kind == "crash" }?.eventCount == 1)

            // Another key is another upload.
            let third = try await collector.upload(body, key: "record-2")
            #expect(third.json["diagnostics_id"] as? String != first.json["diagnostics_id"] as? String)
            #expect(try await collector.store.issues(IssueQuery()).first { $0.kind == "crash" }?.eventCount == 2)
        }
    }

    @Test func concurrentRepeatsOfOneKeyStoreOnce() async throws {
        try await TestCollector.with { collector in
            let body = try Fixtures.samplePayloadData()
            let answers = try await withThrowingTaskGroup(of: HTTPAnswer.self) { group in
                for _ in 0..<6 { group.addTask { try await collector.upload(body, key: "racing-key") } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0.status == 201 })
            #expect(Set(answers.map(\.body)).count == 1)
            #expect(try await collector.store.issues(IssueQuery()).first { $0.kind == "crash" }?.eventCount == 1)
        }
    }

    /// One upload holding the same crash twice and another crash: two issues (the same one
    /// upserted once, counted twice), every report stored with its issue, one session; the
    /// upload repeated stores nothing more. (PostgreSQL writes an upload in one statement.)
    @Test func anUploadWithOneCrashTwiceStoresEachReportUnderItsIssue() async throws {
        try await TestCollector.with { collector in
            var payload = try Fixtures.samplePayload()
            var crash = try #require(payload.crash_reports.first { $0.kind == "crash" })
            crash.timestamp = TestClock.now().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
            var again = crash
            again.report_id = crash.report_id + "-again"
            var other = crash
            other.report_id = crash.report_id + "-other"
            other.exception_type = "SIGBUS"
            payload.crash_reports = [crash, again, other]
            let body = try payload.encoded()
            #expect(try await collector.upload(body, key: "twice").status == 201)
            #expect(try await collector.upload(body, key: "twice").status == 201)

            let issues = try await collector.store.issues(IssueQuery())
            #expect(issues.map(\.eventCount).sorted() == [1, 2], "\(issues)")
            let detail = try await collector.read("/api/issues/\(try #require(issues.first { $0.eventCount == 2 }).id)").json
            #expect((detail["events"] as? [[String: Any]])?.count == 2)
            let latest = try #require(detail["latest_event"] as? [String: Any])
            #expect([crash.report_id, again.report_id].contains(latest["report_id"] as? String ?? ""))
            let rates = try #require(try await collector.read("/api/crash-free?days=2").json["rows"] as? [[String: Any]])
            #expect(rates.map { $0["sessions"] as? Int } == [1], "\(rates)")
        }
    }
}

@Suite struct APILogTests {
    static let event = #"{"type":"api_log","appId":"com.example.myapp","method":"GET","url":"https://api.example.com/users/42","statusCode":200,"duration":124,"timestamp":1760000000123,"requestHeaders":{"Accept":"application/json"},"requestBody":null,"responseHeaders":{"content-type":"application/json"},"responseBody":"{\"name\":\"Roy\"}","error":null}"#

    func post(_ collector: TestCollector, _ body: Data, gzip: Bool = false, token: String? = TestCollector.token) async throws -> HTTPAnswer {
        var headers = ["Content-Type": "application/json"]
        if let token { headers["Authorization"] = "Bearer \(token)" }
        if gzip { headers["Content-Encoding"] = "gzip" }
        return try await collector.request("POST", "/api/logs", headers: headers, body: gzip ? try Gzipped.compress(body) : body)
    }

    @Test func oneEventOrAnArrayGzipOrNot() async throws {
        try await TestCollector.with { collector in
            let single = try await post(collector, Data(Self.event.utf8))
            #expect(single.status == 201)
            #expect(single.json["accepted"] as? Int == 1)
            let second = Self.event.replacingOccurrences(of: "users/42", with: "users/43").replacingOccurrences(of: "200", with: "500")
            let array = try await post(collector, Data("[\(Self.event),\(second)]".utf8), gzip: true)
            #expect(array.status == 201)
            #expect(array.json["accepted"] as? Int == 2)

            let logs = try await collector.read("/api/logs?limit=2")
            #expect(logs.status == 200)
            let rows = try #require(logs.json["logs"] as? [[String: Any]])
            #expect(rows.count == 2)
            #expect(rows[0]["url"] as? String == "https://api.example.com/users/43")   // newest first
            #expect(rows[0]["status_code"] as? Int == 500)
            #expect(rows[1]["app_id"] as? String == "com.example.myapp")
            #expect((rows[1]["event"] as? [String: Any])?["responseBody"] as? String == #"{"name":"Roy"}"#)
        }
    }

    @Test func logsComeAPageAtATimeAndLongEventsAreCutOnThePage() async throws {
        try await TestCollector.with { collector in
            let events = (0..<5).map { Self.event.replacingOccurrences(of: "users/42", with: "users/\($0)") }
            #expect(try await post(collector, Data("[\(events.joined(separator: ","))]".utf8)).status == 201)
            var urls: [String] = []
            var path = "/api/logs?limit=2"
            var pages = 0
            while pages < 10 {
                let answer = try await collector.read(path)
                #expect(answer.status == 200)
                let rows = try #require(answer.json["logs"] as? [[String: Any]])
                urls += rows.compactMap { $0["url"] as? String }
                pages += 1
                guard let next = answer.json["next_before"] as? Int else { break }
                path = "/api/logs?limit=2&before=\(next)"
            }
            #expect(pages == 3)
            #expect(urls == (0..<5).reversed().map { "https://api.example.com/users/\($0)" })

            // An event far longer than the page shows: cut, with a link to all of it.
            let long = Self.event.replacingOccurrences(of: #""responseBody":"{\"name\":\"Roy\"}""#,
                                                       with: #""responseBody":""# + String(repeating: "x", count: 20_000) + #"""#)
            #expect(try await post(collector, Data(long.utf8)).status == 201)
            let newest = try #require((try await collector.read("/api/logs?limit=1").json["logs"] as? [[String: Any]])?.first)
            let id = try #require(newest["id"] as? Int)
            let page = try await collector.read("/logs")
            #expect(page.status == 200)
            #expect(!page.text.contains(String(repeating: "x", count: 5000)))
            #expect(page.text.contains("href=\"/api/logs?before=\(id + 1)&amp;limit=1\""))
            let whole = try #require((try await collector.read("/api/logs?before=\(id + 1)&limit=1").json["logs"] as? [[String: Any]])?.first)
            #expect(((whole["event"] as? [String: Any])?["responseBody"] as? String)?.count == 20_000)
        }
    }

    @Test func tokenRulesAndBadBodies() async throws {
        try await TestCollector.with { collector in
            #expect(try await post(collector, Data(Self.event.utf8), token: nil).status == 401)
            #expect(try await post(collector, Data(Self.event.utf8), token: "nope").status == 401)
            let bad = try await post(collector, Data("[1, 2]".utf8))
            #expect(bad.status == 400)
            #expect(bad.json["error"] as? String == "validation_failed")
            #expect(try await post(collector, Data("nope".utf8)).status == 400)
            #expect(try await collector.read("/api/logs", authorized: false).status == 401)
        }
    }

    @Test func anonymousLogsWhenConfigured() async throws {
        // Seed 003's logger sends no token: allowed when configured so; a wrong token still is not.
        try await TestCollector.with(configure: { $0.acceptAnonymousLogs = true }) { (collector: TestCollector) async throws in
            #expect(try await post(collector, Data(Self.event.utf8), token: nil).status == 201)
            #expect(try await post(collector, Data(Self.event.utf8), token: "nope").status == 401)
        }
    }
}
