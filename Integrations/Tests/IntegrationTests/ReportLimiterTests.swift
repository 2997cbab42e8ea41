// The middleware's limit on non-fatal reports, on a clock the test moves.
@testable import CrashReportingHummingbird
import Testing

@Test("at most N reports a minute; the next one allowed says how many were dropped")
func reportLimiter() {
    let limiter = ReportLimiter(perMinute: 3)
    let start = ContinuousClock.now
    #expect((0..<3).map { _ in limiter.take(now: start) } == [0, 0, 0])
    #expect(limiter.take(now: start + .seconds(10)) == nil)
    #expect(limiter.take(now: start + .seconds(59)) == nil)
    #expect(limiter.take(now: start + .seconds(60)) == 2, "a new minute: allowed, with the 2 dropped")
    #expect(limiter.take(now: start + .seconds(61)) == 0)
}
