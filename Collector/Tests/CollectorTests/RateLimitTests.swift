// Per-token rate limits: the token bucket's arithmetic on a clock the test moves, then a running
// collector answering 429 with Retry-After on every upload endpoint while another token goes on.
@testable import Collector
import Foundation
import Synchronization
import Testing

@Suite struct RateLimitTests {
    /// A clock the test sets.
    final class ManualClock: Sendable {
        let now = Mutex(Duration.zero)
        func advance(_ seconds: Double) { now.withLock { $0 += .milliseconds(Int64(seconds * 1000)) } }
    }

    @Test func bucketRefillsAtTheRateUpToTheBurst() throws {
        let clock = ManualClock()
        let limiter = try #require(RateLimiter(rate: 2, burst: 3) { clock.now.withLock { $0 } })
        #expect((0..<3).map { _ in limiter.take("a") } == [.allowed, .allowed, .allowed])
        #expect(limiter.take("a") == .limited(retryAfter: 1))
        #expect(limiter.take("b") == .allowed)   // another token has its own bucket
        clock.advance(0.5)                          // one request's worth at 2 per second
        #expect(limiter.take("a") == .allowed)
        #expect(limiter.take("a") == .limited(retryAfter: 1))
        clock.advance(60)                           // a long quiet spell refills to the burst, no more
        #expect((0..<4).map { _ in limiter.take("a") } == [.allowed, .allowed, .allowed, .limited(retryAfter: 1)])

        let slow = try #require(RateLimiter(rate: 0.1, burst: 1) { clock.now.withLock { $0 } })
        #expect(slow.take("a") == .allowed)
        #expect(slow.take("a") == .limited(retryAfter: 10))
        clock.advance(4)
        #expect(slow.take("a") == .limited(retryAfter: 6))
        #expect(RateLimiter(rate: 0, burst: 100) == nil)   // 0: no limit
    }

    @Test func overTheLimitIs429WithRetryAfterAndOtherTokensGoOn() async throws {
        try await TestCollector.with(configure: { $0.rateLimit = 0.01; $0.rateBurst = 3 }) { collector in
            let bearer = ["Authorization": "Bearer \(TestCollector.token)", "Content-Type": "application/json"]
            let log = Data(#"{"type":"api_log","appId":"com.example.app","method":"GET","url":"https://example.com/","statusCode":200}"#.utf8)
            // Three requests of one token, on three endpoints: one bucket.
            #expect(try await collector.upload(try Fixtures.samplePayloadData()).status == 201)
            #expect(try await collector.beacons(["sessions": [beacon("s-1")]]).status == 202)
            #expect(try await collector.request("POST", "/api/logs", headers: bearer, body: log).status == 201)

            for answer in [try await collector.upload(try Fixtures.samplePayloadData()),
                           try await collector.beacons(["sessions": [beacon("s-2")]]),
                           try await collector.request("POST", "/api/logs", headers: bearer, body: log)] {
                #expect(answer.status == 429)
                // One request at 0.01 per second: 100 s, less what refilled while the test ran.
                let seconds = try #require(answer.header("Retry-After").flatMap { Int($0) })
                #expect((80...100).contains(seconds))
                #expect(answer.json["error"] as? String == "rate_limited")
                #expect(answer.json["retry_after"] as? Int == seconds)
                #expect(answer.header("Content-Type") == "application/json")
            }
            // Nothing of the refused requests was stored.
            #expect(try await collector.store.crashFree(days: 1, now: TestClock.now()).first?.sessions == 1)
            #expect(try await collector.store.apiLogs(limit: 10, appID: nil).count == 1)

            // The other token is not limited by the first one's flood; a bad token is still a 401.
            #expect(try await collector.beacons(["sessions": [beacon("s-3")]], token: "second-token").status == 202)
            #expect(try await collector.beacons(["sessions": [beacon("s-4")]], token: "wrong").status == 401)
            // Reading is not limited.
            #expect(try await collector.read("/api/issues").status == 200)
        }
    }

    @Test func defaultsLeaveNormalUseAlone() async throws {
        try await TestCollector.with { collector in
            #expect(collector.configuration.rateLimit == 50 && collector.configuration.rateBurst == 500)
            for index in 0..<40 {
                let answer = try await collector.beacons(["sessions": [beacon("s-\(index)")]])
                #expect(answer.status == 202)
            }
        }
    }
}
