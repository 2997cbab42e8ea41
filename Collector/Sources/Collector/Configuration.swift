// What a running collector is told: who may upload, who may read, how long reports are kept,
// and seed 000's limits. Filled by crash-collector's flags and environment, or by tests.
import Foundation

public struct CollectorConfiguration: Sendable {
    /// Bearer tokens accepted by the upload endpoints.
    public var ingestTokens: Set<String>
    /// The dashboard's and read API's password (HTTP basic auth, any user name).
    public var dashboardPassword: String
    /// Reports, sessions and API logs older than this are deleted (seed 000: 30 days).
    public var retentionDays: Int
    /// Seed 003's DevSee logger sends no token: accept POST /api/logs without one when true.
    public var acceptAnonymousLogs: Bool
    /// Seed 000: 5 MB, counted on the body as sent (compressed when gzip'd).
    public var maxBodyBytes: Int
    /// A gzip'd body may inflate to this much at most (a 5 MB bomb is gigabytes).
    public var maxInflatedBytes: Int
    /// What the Connect App modal offers as the server's address when the collector listens on
    /// every interface; nil to detect the first LAN address.
    public var advertisedHost: String?
    /// Symbolication on arrival of reports sent raw (`--symbols`, `--debuginfod`); nil: stored as sent.
    public var symbolication: ArrivalSymbolication?

    public static let seedBodyLimit = 5 * 1024 * 1024

    public init(ingestTokens: Set<String>, dashboardPassword: String, retentionDays: Int = 30,
                acceptAnonymousLogs: Bool = false, maxBodyBytes: Int = CollectorConfiguration.seedBodyLimit,
                maxInflatedBytes: Int = 64 * 1024 * 1024, advertisedHost: String? = nil,
                symbolication: ArrivalSymbolication? = nil) {
        self.ingestTokens = ingestTokens
        self.dashboardPassword = dashboardPassword
        self.retentionDays = retentionDays
        self.acceptAnonymousLogs = acceptAnonymousLogs
        self.maxBodyBytes = maxBodyBytes
        self.maxInflatedBytes = maxInflatedBytes
        self.advertisedHost = advertisedHost
        self.symbolication = symbolication
    }
}

/// ISO 8601 in and out: the payload's timestamps (any offset, with or without fractions) and the
/// collector's own (UTC, milliseconds, "Z", as seed 000's examples).
enum Timestamp {
    static func parse(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle())
    }

    static func format(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
