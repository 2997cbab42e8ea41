// POST /api/v1/sessions: beacons make clean sessions count in the crash-free rates, never un-crash
// a session, and are refused with validation details when malformed. On SQLite and PostgreSQL.
@testable import Collector
import Foundation
import Testing

extension TestCollector {
    /// POST /api/v1/sessions with the given body (an object, encoded here) and the ingest token.
    func beacons(_ body: Any, token: String? = TestCollector.token, gzip: Bool = false) async throws -> HTTPAnswer {
        let data = try JSONSerialization.data(withJSONObject: body)
        var headers = ["Content-Type": "application/json"]
        if let token { headers["Authorization"] = "Bearer \(token)" }
        if gzip { headers["Content-Encoding"] = "gzip" }
        return try await request("POST", "/api/v1/sessions", headers: headers, body: gzip ? try Gzipped.compress(data) : data)
    }
}

/// One beacon entry as the runtime sends it.
func beacon(_ id: String, startedAt: Date = TestClock.now(), user: String? = nil, device: String? = "ab12cd34",
            version: String = "2.1.0", bundle: String = "com.example.crashdemo") -> [String: Any] {
    var entry: [String: Any] = ["session_id": id, "started_at": Timestamp.format(startedAt), "bundle_id": bundle,
                                "app_version": version, "build_number": "45"]
    entry["user_id"] = user ?? NSNull()
    if let device { entry["device_identifier"] = device }
    return entry
}

@Suite struct SessionBeaconTests {
    static func rows(_ collector: TestCollector) async throws -> [[String: Any]] {
        try #require(try await collector.read("/api/crash-free?days=7").json["rows"] as? [[String: Any]])
    }

    /// A crash upload for session `id` (its test_run_id), crashing now.
    static func crashUpload(_ collector: TestCollector, session id: String, user: String, at date: Date = TestClock.now()) async throws {
        var crashed = try sameCrashElsewhere(user: user)
        crashed.test_run_id = id
        crashed.crash_reports[0].timestamp = Timestamp.format(date)
        #expect(try await collector.upload(try crashed.encoded()).status == 201)
    }

    @Test func cleanSessionsCountAndACrashMarksItsSession() async throws {
        try await TestCollector.with { collector in
            let answer = try await collector.beacons(["sessions": [
                beacon("s-1", user: "user-1"), beacon("s-2", user: "user-2"), beacon("s-3", user: nil, device: "dev-3"),
                beacon("s-4", user: nil, device: "dev-3"),
            ]], gzip: true)
            #expect(answer.status == 202)
            #expect(answer.json["accepted"] as? Int == 4)
            var rows = try await Self.rows(collector)
            #expect(rows.count == 1)
            #expect(rows.first?["sessions"] as? Int == 4)
            #expect(rows.first?["crashed_sessions"] as? Int == 0)
            #expect(rows.first?["users"] as? Int == 3)   // user-1, user-2, device:dev-3 (two sessions)
            #expect(rows.first?["crash_free_sessions"] as? Double == 1)

            // The crash of s-1 arrives after its beacon: the same session, now crashed.
            try await Self.crashUpload(collector, session: "s-1", user: "user-1")
            rows = try await Self.rows(collector)
            #expect(rows.count == 1)
            #expect(rows.first?["sessions"] as? Int == 4)
            #expect(rows.first?["crashed_sessions"] as? Int == 1)
            #expect(rows.first?["crashed_users"] as? Int == 1)
            #expect(rows.first?["crash_free_sessions"] as? Double == 0.75)
            #expect(rows.first?["crash_free_users"] as? Double == 2.0 / 3.0)
        }
    }

    @Test func aBeaconNeverUncrashesASession() async throws {
        try await TestCollector.with { collector in
            try await Self.crashUpload(collector, session: "s-crashed", user: "user-1")
            // The beacon arrives late (an outbox flushed on the next launch), twice.
            for _ in 0..<2 {
                #expect(try await collector.beacons(["sessions": [beacon("s-crashed", user: "user-1")]]).status == 202)
            }
            let rows = try await Self.rows(collector)
            #expect(rows.count == 1)
            #expect(rows.first?["sessions"] as? Int == 1)
            #expect(rows.first?["crashed_sessions"] as? Int == 1)
            #expect(rows.first?["crash_free_sessions"] as? Double == 0)
        }
    }

    @Test func sessionsCountOnTheDayTheyStarted() async throws {
        try await TestCollector.with { collector in
            let now = TestClock.now()
            let today = utcDay(now)
            let yesterday = utcDay(now.addingTimeInterval(-86_400))
            // Started yesterday, crashed today: counted yesterday whichever arrives first.
            #expect(try await collector.beacons(["sessions": [beacon("late-night", startedAt: now.addingTimeInterval(-86_400),
                                                                      user: "user-1")]]).status == 202)
            try await Self.crashUpload(collector, session: "late-night", user: "user-1", at: now)
            try await Self.crashUpload(collector, session: "crash-first", user: "user-2", at: now)
            #expect(try await collector.beacons(["sessions": [beacon("crash-first", startedAt: now.addingTimeInterval(-86_400),
                                                                      user: "user-2")]]).status == 202)
            // A clean session today, and one whose clock is in the future (counted on arrival).
            #expect(try await collector.beacons(["sessions": [
                beacon("clean", startedAt: now, user: "user-3"), beacon("future", startedAt: now.addingTimeInterval(86_400 * 30)),
            ]]).status == 202)

            let rows = try await collector.store.crashFree(days: 7, now: now)
            let byDay = Dictionary(uniqueKeysWithValues: rows.map { ($0.day, $0) })
            #expect(rows.count == 2)
            #expect(byDay[yesterday]?.sessions == 2)
            #expect(byDay[yesterday]?.crashedSessions == 2)
            #expect(byDay[today]?.sessions == 2)
            #expect(byDay[today]?.crashedSessions == 0)
        }
    }

    @Test func beaconsNeedTheIngestToken() async throws {
        try await TestCollector.with { collector in
            let body = ["sessions": [beacon("s-1")]]
            #expect(try await collector.beacons(body, token: nil).status == 401)
            let wrong = try await collector.beacons(body, token: "not-a-token")
            #expect(wrong.status == 401)
            #expect(wrong.json["error"] as? String == "unauthorized")
            #expect(try await collector.beacons(body, token: "second-token").status == 202)
            #expect(try await collector.store.crashFree(days: 1, now: TestClock.now()).first?.sessions == 1)
        }
    }

    @Test func invalidBodiesAreRefusedWithDetails() async throws {
        try await TestCollector.with { collector in
            func refused(_ body: Data, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
                let answer = try await collector.request(
                    "POST", "/api/v1/sessions",
                    headers: ["Authorization": "Bearer \(TestCollector.token)", "Content-Type": "application/json"], body: body)
                #expect(answer.status == 400, sourceLocation: sourceLocation)
                #expect(answer.json["error"] as? String == "validation_failed", sourceLocation: sourceLocation)
                #expect(answer.json["message"] is String, sourceLocation: sourceLocation)
                let details = answer.json["details"] as? [String] ?? []
                #expect(details.contains { $0.contains(expected) }, "\(details) lacks \(expected)", sourceLocation: sourceLocation)
            }
            func json(_ value: Any) throws -> Data { try JSONSerialization.data(withJSONObject: value) }

            try await refused(Data("not json".utf8), "invalid JSON")
            try await refused(try json(["sessions": []]), "0 entries")
            try await refused(try json([beacon("s")]), "sessions: required")
            try await refused(try json(["sessions": (0...1000).map { beacon("s-\($0)") }]), "1001 entries")
            var noStart = beacon("s-1")
            noStart["started_at"] = nil
            var badStart = beacon("s-2")
            badStart["started_at"] = "yesterday"
            var numericUser = beacon("s-3")
            numericUser["user_id"] = 42
            var emptyID = beacon("")
            emptyID["build_number"] = nil
            let body = try json(["sessions": [beacon("ok"), noStart, badStart, numericUser, emptyID, "s-5"]])
            for expected in ["sessions/1/started_at: required", "sessions/2/started_at: not an ISO 8601", "sessions/3/user_id: must be a string",
                             "sessions/4/session_id: must not be empty", "sessions/4/build_number: required", "sessions/5: must be an object"] {
                try await refused(body, expected)
            }
            // Nothing of a refused body is stored.
            #expect(try await collector.store.crashFree(days: 7, now: TestClock.now()).isEmpty)
        }
    }
}

extension SessionBeaconTests {
    @Test func aBatchMayNameASessionTwiceAndAThousandAreOneRequest() async throws {
        try await TestCollector.with { collector in
            let now = TestClock.now()
            let yesterday = now.addingTimeInterval(-86_400)
            // The same session twice in one batch (a spool and its retry): the last entry wins.
            let answer = try await collector.beacons(["sessions": [beacon("twice", startedAt: now, user: "u-1"),
                                                                   beacon("other", startedAt: now, user: "u-2"),
                                                                   beacon("twice", startedAt: yesterday, user: "u-1")]])
            #expect(answer.status == 202)
            #expect(answer.json["accepted"] as? Int == 3)
            let rows = try await collector.store.crashFree(days: 7, now: now)
            #expect(rows.map(\.sessions).reduce(0, +) == 2)
            #expect(rows.first { $0.day == utcDay(yesterday) }?.sessions == 1)

            let thousand = (0..<1000).map { beacon("s-\($0)", startedAt: now, user: nil, device: "d-\($0 % 10)") }
            #expect(try await collector.beacons(["sessions": thousand], gzip: true).status == 202)
            let today = try #require(try await collector.store.crashFree(days: 1, now: now).first)
            #expect(today.sessions == 1001)
            #expect(today.users == 11)   // u-2 and ten devices
        }
    }
}
