// Senders whose uploads keep being refused. An upload refused for what its body holds (400: not
// JSON, not a payload; 403: an app its token may not write; 413: past a limit) cost the collector
// its reading, inflating and scanning, and a client that ignores the answer sends it again at once:
// eight such senders in a loop took 70 % of the ingest rate from everyone else (tools/bench-collector
// --abuse, decision 0034). So refusals are counted per token and client address: past a few free
// ones a minute, that pair gets 429 with Retry-After before its body is read (1 s, doubling to 60 s
// while the refusals go on). The 429 is held back for up to a second first: a sender that never
// waits otherwise comes straight back, and every round trip costs both sides CPU; a held answer
// costs a connection and nothing else (a bounded number of them at once).
import Synchronization

final class RefusedUploads: Sendable {
    let throttle: FailureThrottle

    init(freeRefusals: Int, backoff: Duration, clock: (@Sendable () -> Duration)? = nil) {
        throttle = FailureThrottle(freeFailures: freeRefusals + 1, base: backoff, maximum: max(backoff, .seconds(60)),
                                   forgetAfter: .seconds(60), clock: clock)
    }

    /// The key of a sender: its credential and address (a token is usually one app on many hosts;
    /// one host sending junk blocks only itself).
    static func key(authorization: String?, address: String) -> String {
        "\(address) \(authorization ?? "-")"
    }

    /// Whether the sender is blocked now, and for how many seconds.
    func blocked(_ key: String) -> Int? {
        guard case .blocked(let seconds) = throttle.check(key) else { return nil }
        return seconds
    }

    /// Counts an answer: a refusal for the body's content, or anything else (which changes nothing:
    /// one good upload between bad ones does not wipe them out).
    /// The block a refusal starts, if it does.
    @discardableResult
    func answered(_ key: String, status: Int) -> Duration? {
        guard [400, 403, 413].contains(status) else { return nil }
        return throttle.failed(key)
    }

}

/// 429s for blocked senders (refused uploads, wrong dashboard passwords), held back before they are
/// sent, a bounded number at once.
final class HeldAnswers: Sendable {
    /// How long an answer is held back (at most the block's own length).
    let hold: Duration
    /// Answers held back at once; past it, answered at once.
    let maxHeld: Int
    private let held = Atomic<Int>(0)

    init(hold: Duration, maxHeld: Int = 256) {
        self.hold = hold
        self.maxHeld = maxHeld
    }

    /// Waits `min(hold, seconds)` when fewer than `maxHeld` answers are held; at once otherwise.
    func holdBack(seconds: Int) async {
        guard hold > .zero else { return }
        let now = held.add(1, ordering: .relaxed).newValue
        defer { held.subtract(1, ordering: .relaxed) }
        guard now <= maxHeld else { return }
        try? await Task.sleep(for: min(hold, .seconds(seconds)))
    }

    var heldNow: Int { held.load(ordering: .relaxed) }
}

extension APIAnswer {
    static func refusedTooOften(retryAfter: Int) -> APIAnswer {
        var answer = APIAnswer.json(429, RateLimitedBody(
            error: "too_many_refused_uploads",
            message: "Too many uploads from this address with this token were refused (400, 403 or 413) in the last minute; "
                + "retry after \(retryAfter) s",
            retry_after: retryAfter))
        answer.retryAfter = retryAfter
        return answer
    }
}
