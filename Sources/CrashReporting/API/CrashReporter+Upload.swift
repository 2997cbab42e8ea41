// The public side of delivery: upload settings, endpoint resolution (seed 003 §6 order, with
// seed 002's connect URL), consent as Crashlytics has it, and the triggers of seed 000
// (session end, error bursts, crash on next launch, manual, periodic).
import CrashReportModel
import Foundation
import Glibc
import Synchronization

extension CrashReporter {
    /// How and where reports are delivered. Part of `Configuration`.
    public struct Upload: Sendable {
        /// False: records are kept (bounded) and nothing is sent, whatever the consent setting.
        public var isEnabled = true
        /// The collector, e.g. `https://crashes.example.com`. Resolution order: this, then
        /// `CRASH_REPORTING_ENDPOINT`, then a connect URL given to `handleURL(_:)`, then
        /// `http://localhost:9090` with a warning. https, or http to a loopback host (or to any
        /// host with `allowsInsecureHTTP`); `start` throws otherwise.
        public var endpoint: URL?
        /// Plain http to a host that is not loopback (the token and reports then cross the network
        /// in clear). Off: such an endpoint makes `start` throw, and such a
        /// `CRASH_REPORTING_ENDPOINT` is ignored with a warning.
        public var allowsInsecureHTTP = false
        /// The hosts a connect URL (`handleURL(_:)`) may point uploads at, exactly (host names
        /// compared case-insensitively). nil: loopback and private-range IPv4 addresses
        /// (127/8, 10/8, 172.16/12, 192.168/16, 169.254/16) and `localhost`, as on a QA LAN.
        /// Empty: connect URLs are refused.
        public var connectURLHosts: [String]?
        /// Remember the endpoint of a connect URL for later launches (in the reports directory).
        /// Off: it holds for this process only, as seed 002 leaves persistence to the app.
        public var persistsConnectURL = false
        /// Bearer token (seed 000); else `CRASH_REPORTING_TOKEN`.
        public var token: String?
        /// Replaces the HTTP collector by these destinations (a record is done when all have it).
        public var transports: [any DiagnosticsTransport]?
        /// What the collector's requests (diagnostics, api_logs, beacons) go out with; nil:
        /// URLSession. Destinations in `transports` carry their own (`client`).
        public var httpClient: (any HTTPClient)?
        /// Per request, including the connection.
        public var requestTimeout: Duration = .seconds(15)
        /// Tries per record per launch for failures worth retrying (5xx, time-outs, refused).
        public var maxAttemptsPerLaunch = 4
        /// Backoff between tries: doubles from this, capped by `maxBackoff`, with ±50 % jitter.
        public var initialBackoff: Duration = .milliseconds(500)
        public var maxBackoff: Duration = .seconds(30)
        /// Store bounds: beyond these, the oldest pending record is deleted and counted.
        public var maxPendingReports = 200
        public var maxPendingBytes = 64 * 1024 * 1024
        /// A crash within this time of `start` makes the next `start` upload before returning…
        public var crashOnLaunchWindow: Duration = .seconds(5)
        /// …waiting at most this long.
        public var crashOnLaunchWait: Duration = .seconds(2)
        /// Seed 000's periodic checkpoint; nil turns it off.
        public var periodicInterval: Duration? = .seconds(600)
        /// Seed 000's error threshold: this many non-fatal errors within `errorBurstWindow` send at once.
        public var errorBurstCount = 5
        public var errorBurstWindow: Duration = .seconds(60)
        /// Applied to every text of a payload before it leaves the host; nil: `Redactor.seed000`.
        /// (Defaults are built on the pipeline's thread: compiling their expressions takes
        /// milliseconds an app's launch should not pay.)
        public var redactor: Redactor?
        /// Checks the final payload; a payload it flags is quarantined, not sent. nil: the default
        /// `RedactionVerifier()`, unless `verifiesRedaction` is false.
        public var verifier: RedactionVerifier?
        public var verifiesRedaction = true
        /// Extra places to look for debug files when symbolicating before upload.
        public var debugDirectories: [String] = []
        /// Session beacons (`POST /api/v1/sessions`, for crash-free sessions) ride along with a
        /// pass that sends something else; on their own they wait until this many are spooled or
        /// the oldest is `beaconMaxDelay` old (or at `sendUnsentReports`). A launch with nothing to
        /// send then loads no HTTP
        /// client (URLSession and libcurl: ~5 MiB private, ~12 MiB of shared pages, measured).
        public var beaconBatch = 20
        public var beaconMaxDelay: Duration = .seconds(3600)
        /// Off: no session beacons at all (crash-free sessions then count only sessions that
        /// uploaded something).
        public var sendsSessionBeacons = true
        /// How long the launch's first pass (the last sessions' recovery, uploads, sending beacons)
        /// waits, so that it does not compete with the app's own start-up for the CPU (the
        /// launch's own beacon is written before the wait: a small file). Not when the last
        /// launch crashed (its record goes first, at once), nor after `sendUnsentReports`.
        public var firstPassDelay: Duration = .milliseconds(250)

        public init() {}

        /// Nothing is sent; records stay in the reports directory.
        public static var disabled: Upload {
            var upload = Upload()
            upload.isEnabled = false
            return upload
        }
    }

    /// seed 002's endpoint.
    public struct Endpoint: Sendable, Equatable, CustomStringConvertible {
        public var scheme: String
        public var host: String
        public var port: Int
        public var url: URL { URL(string: "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)")! }
        public var description: String { url.absoluteString }
    }

    /// seed 002's handleUrl result.
    public enum ConnectionResult: Sendable, Equatable {
        case connected(endpoint: Endpoint)
        /// Not a connect URL for this app.
        case ignored
        case failed(reason: String)
    }

    /// Where uploads go now, and why.
    public struct ResolvedEndpoint: Sendable, Equatable {
        public enum Source: String, Sendable { case configuration, environment, connectURL = "connect URL", fallback }
        public var url: URL
        public var source: Source
    }

    /// What delivery has done in this process.
    public struct UploadStatus: Sendable, Equatable {
        public var delivered = 0
        public var quarantined = 0
        /// Records deleted because the store was full (all launches).
        public var dropped = 0
        /// The last failure, e.g. "HTTP 503: …" or "timed out".
        public var lastFailure: String?
        /// Set on 401/403: the token or endpoint needs fixing; uploads wait for it.
        public var configurationError: String?
        /// Set when a destination could not be reached in this launch (refused, DNS, time-out):
        /// which one, why, and how many reports wait for it. Said once on stderr too.
        public var unreachable: String?
        /// Passes completed.
        public var passes = 0
        /// What the last look before sending (`LeakScanner`) found that redaction had left, and
        /// masked, by kind ("card", "jwt", …), since the process started. Non-empty means a
        /// rule is missing: the redaction rules are worth a look.
        public var leaksMasked: [String: Int] = [:]
    }

    /// Applies a connect URL (seed 002): `dev-see-<appID>://connect?server_ip=…&server_port=…`.
    /// URLs of another scheme or action are ignored; the scheme must match exactly (a case
    /// variant fails); a bad host or port, or a host `upload.connectURLHosts` does not allow
    /// (default: loopback and private-range addresses), fails with the reason. The endpoint holds
    /// for this process, and for later launches only with `upload.persistsConnectURL`. An
    /// endpoint given in the configuration or the environment still wins (seed 003 §6 order).
    ///
    /// Anyone who can get a URL opened by the app can point its uploads, with their token, at
    /// a host of their choosing: that is why the hosts are restricted.
    @discardableResult
    public static func handleURL(_ url: URL) -> ConnectionResult {
        guard let appID = reportingContext()?.appID else { return .failed(reason: "CrashReporter.start has not been called") }
        let result = ConnectURL.parse(url, appID: appID, allowedHosts: uploader()?.settings.connectURLHosts)
        if case .connected(let endpoint) = result, let uploader = uploader() {
            uploader.setConnectedEndpoint(endpoint.url)
            if let resolved = resolvedEndpoint, resolved.source != .connectURL {
                warn("connect URL \(endpoint) noted, but uploads keep going to \(resolved.url.absoluteString) (set by \(resolved.source.rawValue))")
            }
            uploader.wake()
        }
        return result
    }

    /// The endpoint uploads go to now (nil before `start` or with uploads disabled).
    public static var resolvedEndpoint: ResolvedEndpoint? { uploader()?.resolveEndpoint() }

    /// Whether the previous run of this program (same reports directory) crashed.
    public static var didCrashDuringPreviousExecution: Bool { launchInfo().didCrash }

    /// How many records wait to be sent (pending or interrupted mid-upload).
    public static func checkForUnsentReports() -> Int {
        guard let directory = reportsDirectoryValue() else { return 0 }
        return directory.records(in: directory.pendingFolder).count + directory.records(in: directory.uploadingFolder).count
    }

    /// Sends what is pending now, even while collection is disabled (Crashlytics' explicit
    /// consent for these reports). Returns at once; `waitForBackgroundWork` waits for it.
    public static func sendUnsentReports() {
        uploader()?.wake(force: true)
    }

    /// Deletes every record waiting to be sent, and the session beacons waiting.
    public static func deleteUnsentReports() {
        uploader()?.deletePending()
    }

    /// Seed 000's manual trigger: writes a diagnostics snapshot (breadcrumbs, network errors,
    /// keys, custom data of this session) and sends what is pending. Returns at once.
    public static func sendDiagnostics() throws {
        try writeSnapshot(trigger: "manual")
        uploader()?.wake()
    }

    /// Seed 000's session-end trigger, for a clean shutdown (call it from a
    /// swift-service-lifecycle service's shutdown path, or before `exit`): writes a diagnostics
    /// snapshot, sends everything pending within `timeout`, then ends the session. Returns true
    /// when everything was sent (or nothing was to be sent) in time.
    @discardableResult
    public static func shutdown(timeout: Duration = .seconds(5)) -> Bool {
        try? writeSnapshot(trigger: "session_end")
        var finished = true
        if let uploader = uploader() {
            let generation = uploader.wake()
            finished = uploader.waitForPass(after: generation, timeout: timeout) && checkForUnsentReports() == 0
        }
        endSession()
        return finished
    }

    /// What delivery has done in this process.
    public static var uploadStatus: UploadStatus {
        var status = uploader()?.status ?? UploadStatus()
        status.leaksMasked = OutgoingCheck.masked.snapshot
        return status
    }

    static func writeSnapshot(trigger: String) throws {
        guard let context = reportingContext() else { throw ReportingError.notStarted }
        _ = try writeContextRecord(context, lines: [RecordLine(.diagnostics).string("trigger", trigger).text], includeStack: false)
    }

    private static let errorTimes = Mutex<[ContinuousClock.Instant]>([])

    /// Seed 000's "5+ errors within 60 seconds" trigger.
    static func noteErrorForBurstTrigger() {
        guard let uploader = uploader() else { return }
        let settings = uploader.settings
        let now = ContinuousClock.now
        let burst = errorTimes.withLock { times -> Bool in
            times.append(now)
            times.removeAll { now - $0 > settings.errorBurstWindow }
            guard times.count >= settings.errorBurstCount else { return false }
            times.removeAll()
            return true
        }
        if burst { uploader.wake() }
    }

    static func warn(_ message: String) {
        FileHandle.standardError.write(Data("CrashReporter: \(message)\n".utf8))
    }
}

extension CrashReporter.Upload {
    /// Why `url` may not be an upload endpoint; nil when it may: https, or http to a loopback
    /// host, or http anywhere with `allowsInsecureHTTP`.
    static func endpointProblem(_ url: URL, allowsInsecureHTTP: Bool) -> String? {
        guard let host = url.host, !host.isEmpty else { return "\(url.absoluteString) has no host" }
        switch url.scheme?.lowercased() {   // an endpoint's scheme is case-insensitive (RFC 3986)
        case "https":
            return nil
        case "http":
            if allowsInsecureHTTP || ConnectURL.isLoopback(host) { return nil }
            return "\(url.absoluteString) is plain http to a host that is not loopback: the token and reports would cross "
                + "the network in clear; use https, or set upload.allowsInsecureHTTP = true"
        default:
            return "\(url.absoluteString): the scheme must be https (or http for loopback)"
        }
    }
}

/// Parsing of seed 002's deep link.
enum ConnectURL {
    static func parse(_ url: URL, appID: String, allowedHosts: [String]?) -> CrashReporter.ConnectionResult {
        let expected = "dev-see-" + appID
        guard let scheme = url.scheme, scheme.lowercased() == expected.lowercased() else { return .ignored }
        guard scheme == expected else { return .failed(reason: "the scheme must be exactly \"\(expected)\", got \"\(scheme)\"") }
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return .failed(reason: "unreadable URL") }
        let action = components.host ?? components.path.split(separator: "/").first.map(String.init)
        guard action?.lowercased() == "connect" else { return .ignored }
        let items = components.queryItems ?? []
        guard let host = items.first(where: { $0.name == "server_ip" })?.value?.trimmingCharacters(in: .whitespaces), !host.isEmpty else {
            return .failed(reason: "missing server_ip")
        }
        guard let portText = items.first(where: { $0.name == "server_port" })?.value, !portText.isEmpty else {
            return .failed(reason: "missing server_port")
        }
        guard let port = Int(portText), (1...65535).contains(port) else {
            return .failed(reason: "server_port must be an integer in 1...65535, got \"\(portText)\"")
        }
        guard isIPv4(host) || isHostname(host) else { return .failed(reason: "server_ip \"\(host)\" is neither an IPv4 address nor a host name") }
        guard isAllowed(host, allowedHosts) else {
            return .failed(reason: "server_ip \"\(host)\" is not allowed: a connect URL may name "
                           + (allowedHosts.map { $0.isEmpty ? "no host (upload.connectURLHosts is empty)" : "only \($0.joined(separator: ", "))" }
                              ?? "only loopback or private-range addresses (upload.connectURLHosts)"))
        }
        return .connected(endpoint: .init(scheme: "http", host: host, port: port))
    }

    /// Whether a connect URL may name `host`: listed in `allowedHosts`, or, when that is nil,
    /// loopback or a private-range IPv4 address.
    static func isAllowed(_ host: String, _ allowedHosts: [String]?) -> Bool {
        if let allowedHosts { return allowedHosts.contains { $0.lowercased() == host.lowercased() } }
        if isLoopback(host) { return true }
        guard isIPv4(host) else { return false }
        let octets = host.split(separator: ".").compactMap { Int($0) }
        switch (octets[0], octets[1]) {
        case (10, _), (192, 168), (169, 254): return true
        case (172, let second): return (16...31).contains(second)
        default: return false
        }
    }

    /// localhost, 127/8, ::1.
    static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        return isIPv4(host) && host.hasPrefix("127.")
    }

    static func isIPv4(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCII) && part.allSatisfy(\.isNumber) && Int(part)! <= 255
        }
    }

    /// RFC 1123 host names; all-numeric dotted names are not host names (a bad IPv4 address).
    static func isHostname(_ text: String) -> Bool {
        guard text.count <= 253, !text.allSatisfy({ $0.isNumber || $0 == "." }) else { return false }
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        return labels.allSatisfy { label in
            (1...63).contains(label.count) && label.first != "-" && label.last != "-"
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        }
    }
}
