// What a running collector is told: who may upload, who may read, how long reports are kept,
// and seed 000's limits. Filled by crash-collector's flags and environment, or by tests.
import Foundation

public struct CollectorConfiguration: Sendable {
    /// Bearer tokens accepted by the upload endpoints.
    public var ingestTokens: Set<String>
    /// The apps (bundle ids) a token may write for: its diagnostics, session beacons and API logs;
    /// another app's are answered 403. A token absent here may write for any app (a plain
    /// `--token SECRET`, as before tokens were bound).
    public var tokenBundleIDs: [String: Set<String>]
    /// The dashboard's and read API's password (HTTP basic auth, any user name).
    public var dashboardPassword: String
    /// Reports, sessions and API logs older than this are deleted (seed 000: 30 days).
    public var retentionDays: Int
    /// Seed 003's DevSee logger sends no token: accept POST /api/logs without one when true.
    public var acceptAnonymousLogs: Bool
    /// Seed 000: 5 MB, counted on the body as sent (compressed when gzip'd).
    public var maxBodyBytes: Int
    /// A gzip'd body may inflate to this much at most (a 5 MB bomb is gigabytes). Seed 000's limits
    /// make a real payload a few MB at most: 500 logs of 1000 characters, 100 KB of custom data,
    /// 5 reports of 50 frames per thread.
    public var maxInflatedBytes: Int
    /// Uploads (all three upload endpoints) admitted at once, their bodies being read or their work
    /// queued or running; past it, 503 with Retry-After.
    public var uploadsInFlight: Int
    /// Uploads one token may have in flight; past it, 429 with Retry-After.
    public var uploadsInFlightPerToken: Int
    /// Tests hand in a gate they hold slots of; nil: one made from the two numbers above.
    var uploadGate: UploadGate?
    /// A connection that sends nothing for this long is closed: idle between requests, or stalled in
    /// a request's head or body. nil: never.
    public var idleTimeout: Duration? = CollectorConfiguration.defaultIdleTimeout
    /// Connections open at once; past it new ones wait in the listen backlog. 0: no limit.
    public var maxConnections: Int = CollectorConfiguration.defaultMaxConnections
    public static let defaultIdleTimeout: Duration = .seconds(30)
    public static let defaultMaxConnections = 512
    /// How long an address is refused after its fifth wrong dashboard password in a row, doubling
    /// with each further one (at most 15 minutes).
    public var loginBackoff: Duration = .seconds(1)
    /// Uploads refused for their content (400, 403, 413) one token may send from one address in a
    /// minute before that pair gets 429 without its body being read: for 1 s, doubling while the
    /// refusals go on (at most 60 s). nil: never.
    public var freeUploadRefusals: Int? = CollectorConfiguration.defaultFreeUploadRefusals
    public static let defaultFreeUploadRefusals = 10
    public var uploadRefusalBackoff: Duration = .seconds(1)
    /// How long a 429 for a blocked sender (refused uploads, wrong dashboard passwords) is held back
    /// before it is sent, at most: a sender that never waits comes back that much later.
    public var throttledAnswerHold: Duration = .seconds(1)
    /// What the Connect App modal offers as the server's address when the collector listens on
    /// every interface; nil to detect the first LAN address.
    public var advertisedHost: String?
    /// Requests per second each ingest token may make on the upload endpoints (diagnostics, API
    /// logs, session beacons), sustained; 0 for no limit. Per collector process.
    public var rateLimit: Double
    /// Requests a token may make at once after a quiet spell (its bucket's size).
    public var rateBurst: Int
    /// When an issue's last hour is a spike (dashboard banner, GET /api/alerts, the webhook).
    public var alertRule: AlertRule
    /// Where a velocity alert is POSTed as JSON, once per issue per hour; nil for none.
    public var alertWebhook: URL?
    /// How often the webhook's sender looks for alerts.
    public var alertCheckInterval: Duration
    /// Symbolication on arrival of reports sent raw (`--symbols`, `--debuginfod`); nil: stored as sent.
    public var symbolication: ArrivalSymbolication?
    /// What GET /metrics serves; one per collector.
    public var metrics = CollectorMetrics()
    /// The wall clock the server reads for received times, UTC days, windows ("last 24 hours",
    /// "last hour") and alerts. Tests pin it away from midnight so that a run crossing a UTC day
    /// does not count its own uploads on two days.
    public var clock: @Sendable () -> Date = { Date() }

    public static let seedBodyLimit = 5 * 1024 * 1024
    public static let defaultMaxInflatedBytes = 8 * 1024 * 1024
    public static let defaultUploadsInFlight = 32
    public static let defaultUploadsInFlightPerToken = 16
    /// A token is usually one app on every host it runs on: generous, against floods, not use.
    public static let defaultRateLimit = 50.0
    public static let defaultRateBurst = 500

    public init(ingestTokens: Set<String>, tokenBundleIDs: [String: Set<String>] = [:], dashboardPassword: String,
                retentionDays: Int = 30,
                acceptAnonymousLogs: Bool = false, maxBodyBytes: Int = CollectorConfiguration.seedBodyLimit,
                maxInflatedBytes: Int = CollectorConfiguration.defaultMaxInflatedBytes,
                uploadsInFlight: Int = CollectorConfiguration.defaultUploadsInFlight,
                uploadsInFlightPerToken: Int = CollectorConfiguration.defaultUploadsInFlightPerToken, advertisedHost: String? = nil,
                rateLimit: Double = CollectorConfiguration.defaultRateLimit,
                rateBurst: Int = CollectorConfiguration.defaultRateBurst, alertRule: AlertRule = AlertRule(),
                alertWebhook: URL? = nil, alertCheckInterval: Duration = .seconds(60),
                symbolication: ArrivalSymbolication? = nil) {
        self.ingestTokens = ingestTokens
        self.tokenBundleIDs = tokenBundleIDs
        self.dashboardPassword = dashboardPassword
        self.retentionDays = retentionDays
        self.acceptAnonymousLogs = acceptAnonymousLogs
        self.maxBodyBytes = maxBodyBytes
        self.maxInflatedBytes = maxInflatedBytes
        self.uploadsInFlight = uploadsInFlight
        self.uploadsInFlightPerToken = uploadsInFlightPerToken
        self.advertisedHost = advertisedHost
        self.rateLimit = rateLimit
        self.rateBurst = rateBurst
        self.alertRule = alertRule
        self.alertWebhook = alertWebhook
        self.alertCheckInterval = alertCheckInterval
        self.symbolication = symbolication
    }
}

/// ISO 8601 in and out: the payload's timestamps (any offset, with or without fractions) and the
/// collector's own (UTC, milliseconds, "Z", as seed 000's examples).
enum Timestamp {
    // Made once: a style made per call showed in the profile of tools/bench-collector.
    private static let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let whole = Date.ISO8601FormatStyle()

    static func parse(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: fractional) { return date }
        return try? Date(text, strategy: whole)
    }

    static func format(_ date: Date) -> String {
        date.formatted(fractional)
    }
}
