// Tenants kept apart: an Idempotency-Key is the token's own (another token cannot pre-empt it, and
// a reused key with another body is a 409), and a token bound to apps writes only for them
// (diagnostics, session beacons, API logs answered 403 for another app, nothing stored).
@testable import Collector
import CrashReportModel
import Foundation
import Testing

@Suite struct TenancyTests {
    @Test func anotherTokenCannotPreemptAReportID() async throws {
        try await TestCollector.with { collector in
            // Token B sends its junk first under the key A's runtime will use.
            var junk = try Fixtures.samplePayload()
            junk.test_run_id = "junk-session"
            let preempt = try await collector.upload(try junk.encoded(), key: "record-A1", token: "second-token")
            #expect(preempt.status == 201)
            let crash = try Fixtures.samplePayloadData()
            let answer = try await collector.upload(crash, key: "record-A1")
            #expect(answer.status == 201)
            #expect(answer.json["diagnostics_id"] as? String != preempt.json["diagnostics_id"] as? String)
            #expect(answer.json["test_run_id"] as? String == "550e8400-e29b-41d4-a716-446655440000")
            // Both stored: two events of the same crash.
            #expect(try await collector.store.issues(IssueQuery()).first { $0.kind == "crash" }?.eventCount == 2)
        }
    }

    @Test func aReusedKeyWithAnotherBodyIs409() async throws {
        try await TestCollector.with { collector in
            let body = try Fixtures.samplePayloadData()
            let first = try await collector.upload(body, key: "record-1")
            #expect(first.status == 201)
            // The same JSON, gzip'd or not, is a repeat: the first answer.
            let repeated = try await collector.upload(body, key: "record-1", gzip: false)
            #expect(repeated.status == 201)
            #expect(repeated.body == first.body)
            var other = try Fixtures.samplePayload()
            other.test_run_id = "another-session"
            let conflict = try await collector.upload(try other.encoded(), key: "record-1")
            #expect(conflict.status == 409)
            #expect(conflict.json["error"] as? String == "idempotency_conflict")
            #expect(try await collector.store.issues(IssueQuery()).first { $0.kind == "crash" }?.eventCount == 1)
            // An over-long key is refused before anything is looked up.
            let long = try await collector.upload(body, key: String(repeating: "k", count: 257))
            #expect(long.status == 400)
        }
    }

    @Test func aTokenBoundToAnAppWritesOnlyForIt() async throws {
        let payload = try Fixtures.samplePayload()
        let appA = payload.app_metadata.bundle_id
        try await TestCollector.with(configure: { $0.tokenBundleIDs = ["second-token": ["com.example.b"]] }) { collector in
            // Token B (bound to com.example.b) writing for app A: diagnostics, beacons, API logs.
            let upload = try await collector.upload(try payload.encoded(), token: "second-token")
            #expect(upload.status == 403)
            #expect(upload.json["error"] as? String == "forbidden")
            #expect(upload.json["message"] as? String == "This token may not write for \(appA)")
            let fakeSessions = (0..<1000).map { beacon("fake-\($0)", bundle: appA) }
            #expect(try await collector.beacons(["sessions": fakeSessions], token: "second-token").status == 403)
            let mixed = [beacon("b-1", bundle: "com.example.b"), beacon("fake", bundle: appA)]
            #expect(try await collector.beacons(["sessions": mixed], token: "second-token").status == 403)
            let bearerB = ["Authorization": "Bearer second-token", "Content-Type": "application/json"]
            let logA = Data(#"{"type":"api_log","appId":"\#(appA)","method":"GET","url":"https://example.com/","statusCode":200}"#.utf8)
            #expect(try await collector.request("POST", "/api/logs", headers: bearerB, body: logA).status == 403)
            let noApp = Data(#"{"type":"api_log","method":"GET","url":"https://example.com/","statusCode":200}"#.utf8)
            #expect(try await collector.request("POST", "/api/logs", headers: bearerB, body: noApp).status == 403)
            // Nothing of A's was written by B.
            #expect(try await collector.store.issues(IssueQuery()).isEmpty)
            #expect(try await collector.store.crashFree(days: 7, now: TestClock.now()).isEmpty)
            #expect(try await collector.store.apiLogs(limit: 10, appID: nil).isEmpty)

            // Its own app it may write for.
            var appB = payload
            appB.app_metadata.bundle_id = "com.example.b"
            #expect(try await collector.upload(try appB.encoded(), token: "second-token").status == 201)
            #expect(try await collector.beacons(["sessions": [beacon("b-1", bundle: "com.example.b")]], token: "second-token").status == 202)
            let logB = Data(#"{"type":"api_log","appId":"com.example.b","method":"GET","url":"https://example.com/","statusCode":200}"#.utf8)
            #expect(try await collector.request("POST", "/api/logs", headers: bearerB, body: logB).status == 201)
            // An unbound token (plain --token SECRET) still writes for any app.
            #expect(try await collector.upload(try payload.encoded()).status == 201)
            let issues = try await collector.store.issues(IssueQuery())
            #expect(Set(issues.map(\.bundleID)) == [appA, "com.example.b"])
        }
    }

    @Test func tokensParseFromFlagsAndFiles() throws {
        #expect(try IngestToken(parsing: "plain-secret") == IngestToken(secret: "plain-secret"))
        #expect(try IngestToken(parsing: "com.a:s3cret") == IngestToken(secret: "s3cret", bundleIDs: ["com.a"]))
        #expect(try IngestToken(parsing: "com.a, com.b:s3cret") == IngestToken(secret: "s3cret", bundleIDs: ["com.a", "com.b"]))
        #expect(try IngestToken(parsing: "*:s3cret") == IngestToken(secret: "s3cret"))
        #expect(throws: SecretsError.self) { try IngestToken(parsing: "com.a:") }
        #expect(throws: SecretsError.self) { try IngestToken(parsing: ":secret") }
        let file = """
            # tenants
            com.a:token-a

            com.b,com.c:token-b
            token-any
            """
        let tokens = try IngestToken.parseFile(file)
        #expect(tokens.count == 3)
        let configured = IngestToken.configuration(tokens + [IngestToken(secret: "token-a", bundleIDs: ["com.d"])])
        #expect(configured.secrets == ["token-a", "token-b", "token-any"])
        #expect(configured.bundleIDs == ["token-a": ["com.a", "com.d"], "token-b": ["com.b", "com.c"]])
        #expect(throws: SecretsError.self) { try IngestToken.parseFile("ok\ncom.a:") }
    }
}
