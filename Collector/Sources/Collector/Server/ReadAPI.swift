// The read API's JSON (GET /api/issues, /api/issues/{id}, /api/logs, /api/crash-free,
// /api/top-crashes, /api/alerts) and the shapes the dashboard renders from. Wire names are snake_case like the payload they come from.
import CrashReportModel
import Foundation

struct IssueJSON: Codable, Equatable {
    var id: Int64
    var bundle_id: String
    var signature: String
    var kind: String
    var title: String
    var subtitle: String
    var exception_type: String
    var event_count: Int
    var user_count: Int
    var first_seen: String
    var last_seen: String
    var versions: [String]
    /// Events per UTC day over the last 14 days, oldest first (where the answer carries it).
    var trend: [TrendDay]?

    init(_ issue: IssueSummary, trend: [TrendDay]? = nil) {
        id = issue.id
        bundle_id = issue.bundleID
        signature = issue.signature
        kind = issue.kind
        title = issue.title
        subtitle = issue.subtitle
        exception_type = issue.exceptionType
        event_count = issue.eventCount
        user_count = issue.userCount
        first_seen = Timestamp.format(issue.firstSeen)
        last_seen = Timestamp.format(issue.lastSeen)
        versions = issue.versions
        self.trend = trend
    }
}

/// One frame as shown: the payload's frame and whether grouping counted it as the app's.
struct FrameJSON: Codable, Equatable {
    var index: Int
    var address: String
    var module: String?
    var module_offset: String?
    var build_id: String?
    var function: String?
    var file: String?
    var line: Int?
    var column: Int?
    var inlined: Bool
    var in_app: Bool
    /// Where the code comes from (CrashGrouping.Origin): app, system or reporter.
    var origin: String
    /// The short name a person reads ("Pagination.pageItems(_:)"); `function` keeps the full one.
    var display_function: String?
    var async: Bool
}

/// One event of an issue with everything a developer needs to triage it (seed 001's "context").
struct EventJSON: Codable {
    var id: Int64
    var diagnostics_id: String
    var report_id: String
    var kind: String
    var timestamp: String
    var received_at: String
    var exception_type: String
    var exception_message: String
    var reason: String
    var symbolicated: Bool
    var is_partial: Bool
    var signal: DiagnosticsPayload.SignalInfo?
    var error: DiagnosticsPayload.ErrorInfo?
    var termination: DiagnosticsPayload.TerminationInfo?
    /// Requests a server was serving at the crash.
    var requests_in_flight: [DiagnosticsPayload.InFlightRequest]
    var crashed_thread: String?
    var frames: [FrameJSON]
    var stack_trace: [String]
    var threads: [DiagnosticsPayload.ThreadInfo]
    var images: [DiagnosticsPayload.Image]
    var logs: [DiagnosticsPayload.LogEntry]
    var network_errors: [NetworkErrorDigest]
    var custom_keys: [String: JSONValue]
    var custom_data: [String: JSONValue]
    var user_id: String?
    var test_run_id: String
    var app_metadata: AppMetadata
    var device_metadata: HostMetadata
    var reporter: DiagnosticsPayload.Reporter?

    init(_ stored: StoredReport) throws {
        let decoder = JSONDecoder()
        let report = try decoder.decode(DiagnosticsPayload.CrashReportEntry.self, from: Data(stored.reportJSON.utf8))
        let payload = try decoder.decode(DiagnosticsPayload.self, from: Data(stored.payloadJSON.utf8))
        id = stored.id
        diagnostics_id = stored.diagnosticsID
        report_id = report.report_id
        kind = report.kind
        timestamp = report.timestamp
        received_at = Timestamp.format(stored.receivedAt)
        exception_type = report.exception_type
        exception_message = report.exception_message
        reason = report.exception_message.isEmpty ? report.exception_type : "\(report.exception_type): \(report.exception_message)"
        symbolicated = report.symbolicated
        is_partial = report.is_partial
        signal = report.signal
        error = report.error
        termination = report.termination
        requests_in_flight = report.requests_in_flight ?? []
        let thread = report.thread_info.first(where: \.crashed) ?? report.thread_info.first
        crashed_thread = thread.map { "\($0.name.isEmpty ? "thread" : $0.name) (\($0.id))" }
        frames = Grouping.crashedFrames(of: report).map { frame in
            let origin = Grouping.origin(of: frame, images: report.images)
            return FrameJSON(index: frame.index, address: frame.address, module: frame.module, module_offset: frame.module_offset,
                             build_id: frame.build_id, function: frame.function, file: frame.file, line: frame.line,
                             column: frame.column, inlined: frame.inlined, in_app: origin == .app, origin: origin.rawValue,
                             display_function: frame.function.map(Grouping.displayName),
                             async: frame.async == true || (frame.function.map(SwiftNames.isAsync) ?? false))
        }
        stack_trace = report.stack_trace
        threads = report.thread_info
        images = report.images
        logs = payload.logs
        network_errors = payload.network_errors
        custom_keys = payload.custom_keys
        custom_data = payload.custom_data
        user_id = payload.user_id
        test_run_id = payload.test_run_id
        app_metadata = payload.app_metadata
        device_metadata = payload.device_metadata
        reporter = payload.reporter
    }
}

struct EventRefJSON: Codable {
    var id: Int64
    var diagnostics_id: String
    var timestamp: String
    var received_at: String
    var app_version: String
    var user_id: String?
    /// The reporting host, as the payload names it (its hostname hash, or its device identifier).
    var host: String?
}

struct IssueDetailJSON: Codable {
    var issue: IssueJSON
    var latest_event: EventJSON?
    var events: [EventRefJSON]
    /// Present when older events follow: `?events_before=<this>` lists the next page.
    var next_events_before: Int64?
    /// The event asked for with `?event=<id>` (any event of the issue, however old), whole.
    var event: EventJSON?
}

struct LogJSON: Codable {
    var id: Int64
    var received_at: String
    var app_id: String?
    var method: String?
    var url: String?
    var status_code: Int?
    var duration: Int?
    var timestamp: Int64?
    var event: JSONValue

    init(_ log: StoredAPILog) {
        id = log.id
        received_at = Timestamp.format(log.receivedAt)
        app_id = log.appID
        method = log.method
        url = log.url
        status_code = log.statusCode
        duration = log.duration
        timestamp = log.timestamp
        event = JSONValue(json: log.eventJSON) ?? .null
    }
}

struct CrashFreeJSON: Codable {
    var bundle_id: String
    var app_version: String
    var day: String
    var sessions: Int
    var crashed_sessions: Int
    var crash_free_sessions: Double
    var users: Int
    var crashed_users: Int
    var crash_free_users: Double

    init(_ row: CrashFreeRow) {
        bundle_id = row.bundleID
        app_version = row.appVersion
        day = row.day
        sessions = row.sessions
        crashed_sessions = row.crashedSessions
        crash_free_sessions = row.sessions == 0 ? 1 : Double(row.sessions - row.crashedSessions) / Double(row.sessions)
        users = row.users
        crashed_users = row.crashedUsers
        crash_free_users = row.users == 0 ? 1 : Double(row.users - row.crashedUsers) / Double(row.users)
    }
}

struct RankedIssueJSON: Codable {
    /// Events received in the window.
    var events: Int
    var issue: IssueJSON
}

struct TopCrashesJSON: Codable {
    var generated_at: String
    var last_24h: [RankedIssueJSON]
    var last_7d: [RankedIssueJSON]
}

struct AlertJSON: Codable {
    var issue: IssueJSON
    var last_hour: Int
    var baseline_per_hour: Double
}

struct AlertsJSON: Codable {
    struct Rule: Codable {
        var factor: Double
        var minimum: Int
        var window_hours: Int
        var baseline_days: Int
    }
    var generated_at: String
    var rule: Rule
    var alerts: [AlertJSON]

    init(rule: AlertRule, alerts: [VelocityAlert], trends: [Int64: [TrendDay]], now: Date) {
        generated_at = Timestamp.format(now)
        self.rule = Rule(factor: rule.factor, minimum: rule.minimum, window_hours: Int(AlertRule.window / 3600),
                         baseline_days: Int(AlertRule.baselineWindow / 86_400))
        self.alerts = alerts.map {
            AlertJSON(issue: IssueJSON($0.issue, trend: trends[$0.issue.id] ?? IssueMetrics.emptyTrend(now: now)),
                      last_hour: $0.lastHour, baseline_per_hour: ($0.baselinePerHour * 1000).rounded() / 1000)
        }
    }
}

struct ReadAPI: Sendable {
    let store: any Store
    var rule = AlertRule()

    var metrics: IssueMetrics { IssueMetrics(store: store, rule: rule) }

    struct IssuesPage: Encodable {
        var issues: [IssueJSON]
        /// Present when more issues follow: `?offset=<this>` (same limit) lists the next page.
        var next_offset: Int?
    }

    func issues(_ query: IssueQuery, now: Date = Date()) async throws -> APIAnswer {
        // One more than asked tells whether a next page exists.
        var probe = query
        probe.limit = query.limit + 1
        let issues = try await store.issues(probe)
        let trends = try await metrics.trends(now: now)
        let empty = IssueMetrics.emptyTrend(now: now)
        return .json(200, IssuesPage(issues: issues.prefix(query.limit).map { IssueJSON($0, trend: trends[$0.id] ?? empty) },
                                     next_offset: issues.count > query.limit ? query.offset + query.limit : nil))
    }

    func issue(id: Int64, event: Int64? = nil, eventsBefore: Int64? = nil, events limit: Int = 50,
               now: Date = Date()) async throws -> APIAnswer? {
        guard let detail = try await issueDetail(id: id, events: limit, before: eventsBefore, event: event, now: now) else {
            return nil
        }
        return .json(200, detail)
    }

    /// The issue, a page of its events (newest first, `limit` of them, after `before` when given),
    /// the latest event whole, and the one asked for whole.
    func issueDetail(id: Int64, events limit: Int = 50, before: Int64? = nil, event selected: Int64? = nil,
                     now: Date = Date()) async throws -> IssueDetailJSON? {
        guard let issue = try await store.issue(id: id) else { return nil }
        let page = try await store.events(issueID: id, limit: limit + 1, before: before)
        let events = Array(page.prefix(limit))
        let latest = before == nil ? events.first : try await store.events(issueID: id, limit: 1, before: nil).first
        let trend = try await metrics.trends(now: now, issueID: id)[id] ?? IssueMetrics.emptyTrend(now: now)
        var chosen: StoredReport?
        if let selected {
            chosen = events.first { $0.id == selected }
            if chosen == nil { chosen = try await store.event(issueID: id, id: selected) }
        }
        // An event whose stored copies this model cannot read (a row written by another version)
        // is left out of the whole-event fields, not the cause of a 500 for the issue's page.
        return IssueDetailJSON(
            issue: IssueJSON(issue, trend: trend), latest_event: latest.flatMap { try? EventJSON($0) },
            events: events.map {
                EventRefJSON(id: $0.id, diagnostics_id: $0.diagnosticsID, timestamp: Timestamp.format($0.occurredAt),
                             received_at: Timestamp.format($0.receivedAt), app_version: $0.appVersion, user_id: $0.userID,
                             host: Self.host(of: $0))
            },
            next_events_before: page.count > limit ? events.last?.id : nil,
            event: chosen.flatMap { try? EventJSON($0) })
    }

    /// The reporting host of a stored report: its device metadata's hostname hash or identifier.
    static func host(of stored: StoredReport) -> String? {
        guard case .object(let payload)? = JSONValue(json: stored.payloadJSON),
              case .object(let device)? = payload["device_metadata"] else { return nil }
        for key in ["hostname_hash", "device_identifier"] {
            if case .string(let value)? = device[key], !value.isEmpty { return value }
        }
        return nil
    }

    struct LogsPage: Encodable {
        var logs: [LogJSON]
        /// Present when older logs follow: `?before=<this>` lists the next page.
        var next_before: Int64?
    }

    func logs(limit: Int, appID: String?, before: Int64? = nil) async throws -> APIAnswer {
        let logs = try await store.apiLogs(limit: limit + 1, appID: appID, before: before)
        let page = Array(logs.prefix(limit))
        return .json(200, LogsPage(logs: page.map(LogJSON.init), next_before: logs.count > limit ? page.last?.id : nil))
    }

    func crashFree(days: Int, now: Date = Date()) async throws -> APIAnswer {
        .json(200, CrashFreeResponse(
            targets: .init(crash_free_users: 0.995, crash_free_sessions: 0.999),
            rows: try await store.crashFree(days: days, now: now).map(CrashFreeJSON.init)))
    }

    func topCrashes(limit: Int, kind: String?, now: Date = Date()) async throws -> TopCrashesJSON {
        let trends = try await metrics.trends(now: now)
        let empty = IssueMetrics.emptyTrend(now: now)
        func ranked(_ window: TimeInterval) async throws -> [RankedIssueJSON] {
            try await metrics.top(window: window, now: now, limit: limit, kind: kind).map {
                RankedIssueJSON(events: $0.events, issue: IssueJSON($0.issue, trend: trends[$0.issue.id] ?? empty))
            }
        }
        return TopCrashesJSON(generated_at: Timestamp.format(now), last_24h: try await ranked(86_400),
                              last_7d: try await ranked(7 * 86_400))
    }

    func alerts(now: Date = Date()) async throws -> AlertsJSON {
        let alerts = try await metrics.alerts(now: now)
        let trends = alerts.isEmpty ? [:] : try await metrics.trends(now: now)
        return AlertsJSON(rule: rule, alerts: alerts, trends: trends, now: now)
    }

    struct CrashFreeResponse: Codable {
        /// Seed 001's targets: >99.5% crash-free users, >99.9% crash-free sessions.
        struct Targets: Codable {
            var crash_free_users: Double
            var crash_free_sessions: Double
        }
        var targets: Targets
        var rows: [CrashFreeJSON]
    }
}
