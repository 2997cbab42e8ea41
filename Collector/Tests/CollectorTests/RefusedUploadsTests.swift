// Senders whose uploads keep being refused: past the free refusals, that token from that address is
// answered 429 before its body is read, other tokens go on, and held answers are bounded.
@testable import Collector
import Foundation
import Testing

@Suite struct RefusedUploadsTests {
    @Test func pastItsFreeRefusalsASenderIs429AndOtherTokensGoOn() async throws {
        // A long block, so that the test does not depend on how fast it runs; no answer held back.
        try await TestCollector.with(configure: {
            $0.freeUploadRefusals = 2
            $0.uploadRefusalBackoff = .seconds(600)
            $0.throttledAnswerHold = .zero
        }) { collector in
            let notJSON = Data("{\"app_id\": ".utf8)
            for _ in 0..<3 { #expect(try await collector.upload(notJSON).status == 400) }
            // The third refusal started the block: even a good upload is refused now, unread.
            let good = try Fixtures.samplePayloadData()
            let refused = try await collector.upload(good)
            #expect(refused.status == 429)
            #expect(refused.json["error"] as? String == "too_many_refused_uploads")
            let seconds = try #require(refused.header("Retry-After").flatMap { Int($0) })
            #expect((500...600).contains(seconds))
            #expect(try await collector.store.issues(IssueQuery()).isEmpty)
            // Another token from the same address is not this sender.
            #expect(try await collector.upload(good, token: "second-token").status == 201)
            #expect(try await !collector.store.issues(IssueQuery()).isEmpty)
        }
    }

    @Test func refusalsAreOnlyTheBodysFaults() {
        let refusals = RefusedUploads(freeRefusals: 1, backoff: .seconds(600))
        let key = RefusedUploads.key(authorization: "Bearer t", address: "10.0.0.1")
        for status in [201, 200, 202, 401, 409, 429, 500, 503] { #expect(refusals.answered(key, status: status) == nil) }
        #expect(refusals.blocked(key) == nil)
        #expect(refusals.answered(key, status: 413) == nil)   // the free one
        #expect(refusals.answered(key, status: 400) == .seconds(600))
        #expect(refusals.blocked(key) == 600)
        #expect(refusals.blocked(RefusedUploads.key(authorization: "Bearer t", address: "10.0.0.2")) == nil)
    }

    @Test func heldAnswersAreBounded() async throws {
        let held = HeldAnswers(hold: .seconds(600), maxHeld: 1)
        let first = Task { await held.holdBack(seconds: 600) }
        while held.heldNow < 1 { await Task.yield() }
        // The one place is taken: the next answer is not held (this would wait 600 s otherwise).
        await held.holdBack(seconds: 600)
        #expect(held.heldNow == 1)
        first.cancel()   // a held answer ends with its request
        await first.value
        #expect(held.heldNow == 0)
    }
}
