// The clock collector tests read instead of Date(): the wall clock moved to 12:00 UTC of the day the
// test process started. A test that uploads "now" and then asks for today's crash-free rate, the
// last 24 hours or the last hour counts on one UTC day and one hour; run on the wall clock, a run
// that crossed midnight counted its uploads on two days (a CI run at 00:03 UTC saw that). Time still
// passes, so received times keep their order; a run would have to last twelve hours to cross a day.
import Foundation

enum TestClock {
    private static let offset: TimeInterval = {
        let wall = Date().timeIntervalSince1970
        let noon = (wall / 86_400).rounded(.down) * 86_400 + 43_200
        return noon - wall
    }()

    /// Now, on the tests' clock.
    @Sendable static func now() -> Date { Date(timeIntervalSinceNow: offset) }
}
