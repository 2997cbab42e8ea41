// Top crashes, trends and the velocity alert, computed from the stores' per-issue event counts.
// An event counts when the collector received it (reports.received_at), not when the host says it
// happened: host clocks can be wrong, and a spike is what arrives now. Docs/Decisions/0008.
import Foundation

/// When an issue's rate is a spike: at least `minimum` events in the last hour, and at least
/// `factor` times its hourly average over the 7 days before that hour (a new issue's average is 0,
/// so `minimum` alone decides).
public struct AlertRule: Sendable, Equatable {
    public var factor: Double
    public var minimum: Int

    public static let defaultFactor = 3.0
    public static let defaultMinimum = 10
    public static let window: TimeInterval = 3600
    public static let baselineWindow: TimeInterval = 7 * 86_400

    public init(factor: Double = AlertRule.defaultFactor, minimum: Int = AlertRule.defaultMinimum) {
        self.factor = factor
        self.minimum = minimum
    }

    func fires(lastHour: Int, baselinePerHour: Double) -> Bool {
        lastHour >= minimum && Double(lastHour) >= factor * baselinePerHour
    }
}

struct RankedIssue: Sendable {
    var issue: IssueSummary
    var events: Int
}

struct VelocityAlert: Sendable {
    var issue: IssueSummary
    var lastHour: Int
    /// Events per hour over the 7 days before the last hour.
    var baselinePerHour: Double
}

struct TrendDay: Codable, Equatable, Sendable {
    /// yyyy-MM-dd, UTC.
    var day: String
    var events: Int
}

struct IssueMetrics: Sendable {
    let store: any Store
    let rule: AlertRule

    static let trendDays = 14

    /// Issues ranked by events received in the `window` before `now` (most first, then the newer
    /// issue), `kind` or every kind.
    func top(window: TimeInterval, now: Date, limit: Int, kind: String? = nil) async throws -> [RankedIssue] {
        let counts = try await store.eventCounts(from: now.addingTimeInterval(-window), to: now)
        var result: [RankedIssue] = []
        for (id, events) in counts.sorted(by: { $0.value != $1.value ? $0.value > $1.value : $0.key > $1.key }) {
            guard result.count < limit else { break }
            guard let issue = try await store.issue(id: id), kind == nil || issue.kind == kind else { continue }
            result.append(RankedIssue(issue: issue, events: events))
        }
        return result
    }

    /// The UTC days of a trend ending with `now`'s: `trendDays` of them, oldest first.
    static func trendDays(endingAt now: Date) -> [String] {
        let today = (now.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400
        return (0..<trendDays).reversed().map { utcDay(Date(timeIntervalSince1970: today - Double($0) * 86_400)) }
    }

    /// Events per UTC day over the last `trendDays` days (today's until `now`), oldest first, zeros
    /// filled in; for one issue, or every issue with events in that span (the others are all zeros).
    func trends(now: Date, issueID: Int64? = nil) async throws -> [Int64: [TrendDay]] {
        let days = Self.trendDays(endingAt: now)
        let start = (now.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400 - Double(Self.trendDays - 1) * 86_400
        let counts = try await store.dailyEventCounts(from: Date(timeIntervalSince1970: start), to: now, issueID: issueID)
        var byIssue: [Int64: [String: Int]] = [:]
        for count in counts { byIssue[count.issueID, default: [:]][count.day] = count.events }
        return byIssue.mapValues { perDay in days.map { TrendDay(day: $0, events: perDay[$0] ?? 0) } }
    }

    static func emptyTrend(now: Date) -> [TrendDay] { trendDays(endingAt: now).map { TrendDay(day: $0, events: 0) } }

    /// Issues whose last hour is a spike by `rule`, the biggest first.
    func alerts(now: Date) async throws -> [VelocityAlert] {
        let hourStart = now.addingTimeInterval(-AlertRule.window)
        let lastHour = try await store.eventCounts(from: hourStart, to: now)
        let candidates = lastHour.filter { $0.value >= rule.minimum }
        guard !candidates.isEmpty else { return [] }
        let before = try await store.eventCounts(from: hourStart.addingTimeInterval(-AlertRule.baselineWindow), to: hourStart)
        var result: [VelocityAlert] = []
        for (id, count) in candidates {
            let baseline = Double(before[id] ?? 0) / (AlertRule.baselineWindow / AlertRule.window)
            guard rule.fires(lastHour: count, baselinePerHour: baseline), let issue = try await store.issue(id: id) else { continue }
            result.append(VelocityAlert(issue: issue, lastHour: count, baselinePerHour: baseline))
        }
        return result.sorted { $0.lastHour != $1.lastHour ? $0.lastHour > $1.lastHour : $0.issue.id > $1.issue.id }
    }
}
