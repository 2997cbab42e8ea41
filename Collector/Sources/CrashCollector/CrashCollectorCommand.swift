// crash-collector: one command starts the collector on an embedded SQLite file. Flags first, then
// COLLECTOR_* environment variables, then defaults; it prints the URL it listens on.
import ArgumentParser
import Collector
import CrashReportModel
import Foundation
import Hummingbird
import Logging

@main
struct CrashCollectorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crash-collector",
        abstract: "Receives, groups and shows crash reports from swift-crash-reporting (seed 000's upload endpoint).",
        discussion: """
            Environment fallbacks: COLLECTOR_HOST, COLLECTOR_PORT, COLLECTOR_DATABASE, COLLECTOR_TOKENS (comma-separated),
            COLLECTOR_TOKEN_FILE, COLLECTOR_DASHBOARD_PASSWORD, COLLECTOR_DASHBOARD_PASSWORD_FILE, COLLECTOR_UPLOADS_IN_FLIGHT,
            COLLECTOR_UPLOADS_PER_TOKEN, COLLECTOR_IDLE_TIMEOUT, COLLECTOR_MAX_CONNECTIONS, COLLECTOR_RETENTION_DAYS, COLLECTOR_ADVERTISED_HOST, COLLECTOR_ANONYMOUS_LOGS=1,
            COLLECTOR_RATE_LIMIT, COLLECTOR_RATE_BURST, COLLECTOR_ALERT_FACTOR, COLLECTOR_ALERT_MINIMUM, COLLECTOR_ALERT_WEBHOOK,
            COLLECTOR_SYMBOLS (folders separated by ':'), DEBUGINFOD_URLS (elfutils' variable: space-separated URLs).
            """,
        subcommands: [Resymbolicate.self, Regroup.self])

    @Option(help: "Address to listen on; 0.0.0.0 for phones and other machines on the LAN (default 127.0.0.1).")
    var host: String?

    @Option(help: "Port to listen on; 0 picks a free one (default 9090).")
    var port: Int?

    @Option(help: "SQLite file path (default ./crash-collector.sqlite), or a postgres:// URL.")
    var database: String?

    @Option(name: .customLong("token"), help: ArgumentHelp(
        "An ingest token apps send as 'Authorization: Bearer …' (repeatable): SECRET for any app, or BUNDLE_ID[,BUNDLE_ID…]:SECRET for those apps only. Visible in ps: prefer --token-file.",
        valueName: "token"))
    var tokens: [String] = []

    @Option(name: [.customLong("token-file"), .customLong("tokens-file")], help: ArgumentHelp(
        "A file of ingest tokens, one per line in --token's form ('#' comments); repeatable.", valueName: "file"))
    var tokenFiles: [String] = []

    @Option(help: "Password for the dashboard and read API (HTTP basic auth, any user name), 12 characters or more; generated and printed when absent. Visible in ps: prefer --dashboard-password-file.")
    var dashboardPassword: String?

    @Option(help: ArgumentHelp("A file whose first line is the dashboard password.", valueName: "file"))
    var dashboardPasswordFile: String?

    @Option(help: "Uploads admitted at once (bodies being read, work queued or running); past it 503 with Retry-After (default 32).")
    var uploadsInFlight: Int?

    @Option(help: "Uploads one token may have in flight; past it 429 with Retry-After (default 16).")
    var uploadsPerToken: Int?

    @Option(help: "Uploads refused for their content (400, 403, 413) one token may send from one address in a minute; past them that token from that address gets 429 before its body is read, for 1 s doubling to 60 s while refusals go on (default 10; 0: no such block).")
    var freeUploadRefusals: Int?

    @Option(help: "Hold a 429 for a blocked sender (refused uploads, wrong dashboard passwords) back this many seconds before it is sent, at most 256 at once, so that a sender that never waits comes back that much later (default 1; 0: answer at once).")
    var throttledAnswerHold: Int?

    @Option(help: "Close a connection that sends nothing for this many seconds: idle, or stalled in a request's head or body (default 30; 0: never).")
    var idleTimeout: Int?

    @Option(help: "Connections open at once; at it, the one waiting longest for a request is closed for a new one, and when all are in a request new ones wait to be accepted (default 512; 0: no limit).")
    var maxConnections: Int?

    @Option(help: "Delete reports and logs older than this many days; 0 keeps everything (default 30).")
    var retentionDays: Int?

    @Option(help: "Host name or address the Connect App modal puts in deep links (default: detected LAN address).")
    var advertisedHost: String?

    @Flag(help: "Accept POST /api/logs without a token (seed 003's DevSee logger sends none).")
    var anonymousLogs = false

    @Option(help: "Requests per second each ingest token may make on the upload endpoints, sustained; 0 for no limit (default 50). Per collector process.")
    var rateLimit: Double?

    @Option(help: "Requests each token may make at once after a quiet spell (default 500).")
    var rateBurst: Int?

    @Option(help: "Velocity alert: an issue's last hour has at least this many times its hourly average over the 7 days before (default 3).")
    var alertFactor: Double?

    @Option(help: "Velocity alert: and at least this many events in the last hour (default 10).")
    var alertMinimum: Int?

    @Option(help: "POST each velocity alert as JSON to this http(s) URL, once per issue per hour.")
    var alertWebhook: String?

    @Option(name: .customLong("symbols"), help: ArgumentHelp(
        "A symbol store folder for reports sent raw: flat debug files (NAME, NAME.debug) and/or a .build-id/xx/rest.debug tree (repeatable).",
        valueName: "dir"))
    var symbolDirectories: [String] = []

    @Option(help: ArgumentHelp("A debuginfod server for reports sent raw (sets DEBUGINFOD_URLS; default: that variable).", valueName: "url"))
    var debuginfod: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    mutating func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let host = host ?? environment["COLLECTOR_HOST"] ?? "127.0.0.1"
        let port = try port ?? environment["COLLECTOR_PORT"].map(parseInt("COLLECTOR_PORT")) ?? 9090
        let database = database ?? environment["COLLECTOR_DATABASE"] ?? "crash-collector.sqlite"
        let ingestTokens = try Self.ingestTokens(flags: tokens, files: tokenFiles, environment: environment)
        guard !ingestTokens.isEmpty else {
            throw ValidationError("at least one ingest token is required: --token-file FILE, --token TOKEN or COLLECTOR_TOKENS=a,b")
        }
        let (secrets, tokenBundleIDs) = IngestToken.configuration(ingestTokens)
        var password = dashboardPassword ?? environment["COLLECTOR_DASHBOARD_PASSWORD"]
        if let file = dashboardPasswordFile ?? environment["COLLECTOR_DASHBOARD_PASSWORD_FILE"] {
            guard password == nil else { throw ValidationError("--dashboard-password and --dashboard-password-file: one of them") }
            do { password = try Secrets.firstLine(ofFile: file) } catch { throw ValidationError("--dashboard-password-file: \(error)") }
        }
        var generated = false
        if password?.isEmpty ?? true {
            password = (0..<16).map { _ in String("abcdefghijkmnpqrstuvwxyz23456789".randomElement()!) }.joined()
            generated = true
        } else if let weakness = Secrets.weakness(ofPassword: password!) {
            throw ValidationError("the dashboard password is too easy to guess: \(weakness); leave it out to have one generated")
        }
        let inFlight = try uploadsInFlight ?? environment["COLLECTOR_UPLOADS_IN_FLIGHT"].map(parseInt("COLLECTOR_UPLOADS_IN_FLIGHT"))
            ?? CollectorConfiguration.defaultUploadsInFlight
        let perToken = try uploadsPerToken ?? environment["COLLECTOR_UPLOADS_PER_TOKEN"].map(parseInt("COLLECTOR_UPLOADS_PER_TOKEN"))
            ?? CollectorConfiguration.defaultUploadsInFlightPerToken
        guard inFlight >= 1, perToken >= 1 else { throw ValidationError("uploads in flight, overall and per token, are 1 or more") }
        let refusals = try freeUploadRefusals
            ?? environment["COLLECTOR_FREE_UPLOAD_REFUSALS"].map(parseInt("COLLECTOR_FREE_UPLOAD_REFUSALS"))
            ?? CollectorConfiguration.defaultFreeUploadRefusals
        guard refusals >= 0 else { throw ValidationError("the free upload refusals are 0 (no block) or more") }
        let hold = try throttledAnswerHold
            ?? environment["COLLECTOR_THROTTLED_ANSWER_HOLD"].map(parseInt("COLLECTOR_THROTTLED_ANSWER_HOLD")) ?? 1
        guard (0...60).contains(hold) else { throw ValidationError("the throttled answers' hold is 0 to 60 seconds") }
        let idle = try idleTimeout ?? environment["COLLECTOR_IDLE_TIMEOUT"].map(parseInt("COLLECTOR_IDLE_TIMEOUT"))
            ?? Int(CollectorConfiguration.defaultIdleTimeout.components.seconds)
        let connections = try maxConnections ?? environment["COLLECTOR_MAX_CONNECTIONS"].map(parseInt("COLLECTOR_MAX_CONNECTIONS"))
            ?? CollectorConfiguration.defaultMaxConnections
        guard idle >= 0, connections >= 0 else { throw ValidationError("the idle time-out and the connection limit are 0 or more") }
        let retention = try retentionDays ?? environment["COLLECTOR_RETENTION_DAYS"].map(parseInt("COLLECTOR_RETENTION_DAYS")) ?? 30
        let anonymous = anonymousLogs || environment["COLLECTOR_ANONYMOUS_LOGS"] == "1"
        let rate = try rateLimit ?? environment["COLLECTOR_RATE_LIMIT"].map(parseDouble("COLLECTOR_RATE_LIMIT"))
            ?? CollectorConfiguration.defaultRateLimit
        let burst = try rateBurst ?? environment["COLLECTOR_RATE_BURST"].map(parseInt("COLLECTOR_RATE_BURST"))
            ?? CollectorConfiguration.defaultRateBurst
        guard rate >= 0, rate.isFinite else { throw ValidationError("the rate limit is a number of requests per second, 0 or more") }
        guard burst >= 1 else { throw ValidationError("the rate burst is 1 or more") }
        let factor = try alertFactor ?? environment["COLLECTOR_ALERT_FACTOR"].map(parseDouble("COLLECTOR_ALERT_FACTOR"))
            ?? AlertRule.defaultFactor
        let minimum = try alertMinimum ?? environment["COLLECTOR_ALERT_MINIMUM"].map(parseInt("COLLECTOR_ALERT_MINIMUM"))
            ?? AlertRule.defaultMinimum
        guard factor >= 0, factor.isFinite else { throw ValidationError("the alert factor is a number, 0 or more") }
        guard minimum >= 1 else { throw ValidationError("the alert minimum is 1 or more events") }
        var webhook: URL?
        if let text = alertWebhook ?? environment["COLLECTOR_ALERT_WEBHOOK"], !text.isEmpty {
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
                throw ValidationError("the alert webhook is an http:// or https:// URL, got \"\(text)\"")
            }
            webhook = url
        }

        let symbolication = try Self.symbolication(directories: symbolDirectories, debuginfod: debuginfod, environment: environment)

        var logger = Logger(label: "crash-collector")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info

        let store = try await Self.openStore(database, logger: logger)
        // Not run here: on a large database (or one shared by several collectors) it is an
        // operator's decision when to re-sign every report.
        if let notice = try await Regrouping.staleRuleNotice(store) { logger.warning("\(notice)") }
        // What a restart left in the symbolication queue (and raw reports of the last day whose
        // symbols came since) is finished in the background.
        symbolication?.finishRecentRaw(store, logger: logger)
        var configuration = CollectorConfiguration(
            ingestTokens: secrets, tokenBundleIDs: tokenBundleIDs, dashboardPassword: password!, retentionDays: retention,
            acceptAnonymousLogs: anonymous, uploadsInFlight: inFlight, uploadsInFlightPerToken: perToken,
            advertisedHost: advertisedHost ?? environment["COLLECTOR_ADVERTISED_HOST"], rateLimit: rate, rateBurst: burst,
            alertRule: AlertRule(factor: factor, minimum: minimum), alertWebhook: webhook,
            symbolication: symbolication)
        configuration.idleTimeout = idle > 0 ? .seconds(idle) : nil
        configuration.maxConnections = connections
        configuration.freeUploadRefusals = refusals > 0 ? refusals : nil
        configuration.throttledAnswerHold = .seconds(hold)
        let shownPassword = generated ? password! : "as configured"
        let shownDatabase = Self.withoutPassword(database)
        let app = CollectorServer.application(
            store: store, configuration: configuration, host: host, port: port, logger: logger
        ) { address in
            let shown = address.host.contains(":") ? "[\(address.host)]" : address.host
            let base = "http://\(shown):\(address.port)"
            var lines = ["crash-collector listening on \(base)"]
            if !address.lanURLs.isEmpty { lines.append("  on the LAN: \(address.lanURLs.joined(separator: ", "))") }
            lines += [
                "  uploads:   POST \(base)/api/v1/qa/diagnostics, POST \(base)/api/v1/sessions, POST \(base)/api/logs",
                "  dashboard: \(base)/  (any user name, password \(shownPassword))",
                "  database:  \(shownDatabase)",
            ]
            if let symbolication {
                let sources = symbolication.symbolDirectories
                    + (symbolication.usesDebuginfod ? ["debuginfod \(ProcessInfo.processInfo.environment["DEBUGINFOD_URLS"] ?? "")"] : [])
                lines.append("  symbols:   \(sources.joined(separator: ", ")) (reports sent raw are symbolicated after their upload is answered)")
            }
            // Written unbuffered: a script waiting for this line gets it at once, even through a pipe.
            FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        }
        try await app.runService()
        await store.close()
    }

    /// The ingest tokens of --token and --token-file, else of COLLECTOR_TOKEN_FILE, else of
    /// COLLECTOR_TOKENS (comma-separated; bound ones as BUNDLE_ID:SECRET, one app each).
    static func ingestTokens(flags: [String], files: [String], environment: [String: String]) throws -> [IngestToken] {
        var tokens: [IngestToken] = []
        do {
            tokens = try flags.map(IngestToken.init(parsing:))
            for file in files.isEmpty ? (environment["COLLECTOR_TOKEN_FILE"].map { [$0] } ?? []) : files {
                tokens += try IngestToken.parseFile(try Secrets.contents(ofFile: file))
            }
            if tokens.isEmpty, let list = environment["COLLECTOR_TOKENS"] {
                tokens = try list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                    .map(IngestToken.init(parsing:))
            }
        } catch let error as SecretsError {
            throw ValidationError("ingest tokens: \(error.message)")
        }
        return tokens
    }

    /// Symbolication on arrival when a symbol folder or a debuginfod server is given; nil otherwise.
    static func symbolication(directories: [String], debuginfod: String?,
                              environment: [String: String]) throws -> ArrivalSymbolication? {
        var folders = directories
        if folders.isEmpty, let list = environment["COLLECTOR_SYMBOLS"] {
            folders = list.split(separator: ":").map(String.init).filter { !$0.isEmpty }
        }
        for folder in folders {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw ValidationError("--symbols \(folder): not a folder")
            }
        }
        if let debuginfod {
            guard let url = URL(string: debuginfod), ["http", "https", "file"].contains(url.scheme ?? "") else {
                throw ValidationError("--debuginfod \(debuginfod): not an http, https or file URL")
            }
            // elfutils' client reads its servers from the environment only; set before its first use.
            setenv("DEBUGINFOD_URLS", debuginfod, 1)
        }
        let useDebuginfod = !(debuginfod ?? environment["DEBUGINFOD_URLS"] ?? "").isEmpty
        if useDebuginfod && environment["DEBUGINFOD_TIMEOUT"] == nil {
            // The client's default is 90 s without progress; lookups are serial, so a stalled server would hold every raw report.
            setenv("DEBUGINFOD_TIMEOUT", "10", 1)
        }
        if useDebuginfod && environment["DEBUGINFOD_RETRY_LIMIT"] == nil {
            // elfutils retries a failed query twice by default: a stalled server then held one raw
            // upload 3 × 2 queries (debug info, executable) × the timeout, 60 s (tools/collector-abuse).
            // A build-id not found is looked up again after 60 s anyway.
            setenv("DEBUGINFOD_RETRY_LIMIT", "0", 1)
        }
        guard !folders.isEmpty || useDebuginfod else { return nil }
        return ArrivalSymbolication(symbolDirectories: folders, useDebuginfod: useDebuginfod)
    }

    static func openStore(_ database: String, logger: Logger) async throws -> any Store {
        if database.hasPrefix("postgres://") || database.hasPrefix("postgresql://") {
            return try await PostgresStore(url: database, logger: logger)
        }
        return try SQLiteStore(path: database)
    }

    /// A postgres:// URL as it may be printed: the password masked.
    static func withoutPassword(_ database: String) -> String {
        guard var url = URLComponents(string: database), url.password != nil else { return database }
        url.password = "***"
        return url.string ?? database
    }

    private func parseDouble(_ name: String) -> (String) throws -> Double {
        { text in
            guard let value = Double(text) else { throw ValidationError("\(name) must be a number, got \"\(text)\"") }
            return value
        }
    }

    private func parseInt(_ name: String) -> (String) throws -> Int {
        { text in
            guard let value = Int(text) else { throw ValidationError("\(name) must be an integer, got \"\(text)\"") }
            return value
        }
    }
}

/// `crash-collector resymbolicate`: symbols uploaded after their crashes. Symbolicates the reports
/// stored raw, rewrites those that changed and regroups them, then exits. Safe beside a running
/// collector on the same database (each report is replaced in its own transaction).
struct Resymbolicate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Symbolicate the reports stored raw with the symbols given now, and regroup them.")

    /// --database, --symbols and --debuginfod are the collector's own (given before or after the
    /// subcommand's name); the other flags are not used.
    @ParentCommand var collector: CrashCollectorCommand

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let database = collector.database ?? environment["COLLECTOR_DATABASE"] ?? "crash-collector.sqlite"
        guard let symbolication = try CrashCollectorCommand.symbolication(
            directories: collector.symbolDirectories, debuginfod: collector.debuginfod, environment: environment) else {
            FileHandle.standardError.write(Data("crash-collector resymbolicate: nothing to symbolicate with: --symbols DIR or --debuginfod URL (or DEBUGINFOD_URLS)\n".utf8))
            throw ExitCode.validationFailure
        }
        var logger = Logger(label: "crash-collector")
        logger.logLevel = .warning
        let store = try await CrashCollectorCommand.openStore(database, logger: logger)
        let result: ArrivalSymbolication.Resymbolication
        do {
            result = try await symbolication.resymbolicate(store)
        } catch {
            await store.close()
            throw error
        }
        await store.close()
        print("resymbolicate: \(result.examined) raw reports, \(result.improved) with frames resolved, "
              + "\(result.completed) complete, \(result.regrouped) moved to another issue")
        if !result.missing.isEmpty {
            print("  no debug file for: \(result.missing.sorted().joined(separator: ", "))")
        }
    }
}

/// `crash-collector regroup`: re-signs every stored report with the current grouping rule
/// (CrashGrouping.ruleVersion) and moves it to the issue of its new signature, then exits. Safe
/// beside a running collector on the same database.
struct Regroup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Re-sign every stored report with the current grouping rule and move it to its issue.")

    /// --database is the collector's own (given before or after the subcommand's name).
    @ParentCommand var collector: CrashCollectorCommand

    func run() async throws {
        let database = collector.database ?? ProcessInfo.processInfo.environment["COLLECTOR_DATABASE"] ?? "crash-collector.sqlite"
        var logger = Logger(label: "crash-collector")
        logger.logLevel = .warning
        let store = try await CrashCollectorCommand.openStore(database, logger: logger)
        let result: Regrouping.Result
        do {
            result = try await Regrouping.regroup(store)
        } catch {
            await store.close()
            throw error
        }
        await store.close()
        print("regroup: \(result.examined) reports signed by grouping rule \(CrashGrouping.ruleVersion), "
              + "\(result.moved) moved to another issue, \(result.unreadable) unreadable")
    }
}
