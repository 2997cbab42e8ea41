// Per-token rate limits on the upload endpoints (diagnostics, /api/logs, /api/v1/sessions): a token
// bucket per bearer token, so one app's flood (a crash loop on many hosts, a runaway script) cannot
// starve another token's senders. Buckets live in this process: collectors sharing a PostgreSQL
// database each allow the full rate. Only accepted tokens get a bucket (the check runs after the
// token's), so the table's size is bounded by the configured tokens, plus one for anonymous logs.
import Foundation
import Synchronization

final class RateLimiter: Sendable {
    enum Decision: Equatable {
        case allowed
        /// Whole seconds until the bucket holds a request again (at least 1), for Retry-After.
        case limited(retryAfter: Int)
    }

    /// Requests per second, sustained.
    let rate: Double
    /// Requests a bucket holds: what a token may send at once after a quiet spell.
    let burst: Double
    private let clock: @Sendable () -> Duration
    private let buckets = Mutex<[String: Bucket]>([:])

    private struct Bucket {
        var tokens: Double
        var updated: Duration
    }

    /// nil when `rate` is 0 (no limit). `clock` is monotonic time; tests pass their own.
    init?(rate: Double, burst: Int, clock: (@Sendable () -> Duration)? = nil) {
        guard rate > 0 else { return nil }
        self.rate = rate
        self.burst = Double(max(1, burst))
        if let clock {
            self.clock = clock
        } else {
            let start = ContinuousClock.now
            self.clock = { start.duration(to: .now) }
        }
    }

    /// Takes one request from `key`'s bucket, refilled at `rate` since it was last seen.
    func take(_ key: String) -> Decision {
        let now = clock()
        return buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
            let elapsed = Double((now - bucket.updated).components.seconds)
                + Double((now - bucket.updated).components.attoseconds) / 1e18
            bucket.tokens = min(burst, bucket.tokens + max(0, elapsed) * rate)
            bucket.updated = now
            defer { buckets[key] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return .allowed
            }
            return .limited(retryAfter: max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))))
        }
    }
}

struct RateLimitedBody: Codable {
    var error: String
    var message: String
    var retry_after: Int
}

extension APIAnswer {
    static func rateLimited(retryAfter: Int) -> APIAnswer {
        var answer = APIAnswer.json(429, RateLimitedBody(
            error: "rate_limited", message: "Too many requests for this token; retry after \(retryAfter) s",
            retry_after: retryAfter))
        answer.retryAfter = retryAfter
        return answer
    }
}
