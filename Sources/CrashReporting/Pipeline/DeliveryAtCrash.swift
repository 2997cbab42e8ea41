// Delivery at crash time (opt-in, for hosts that may be gone before a next launch: autoscaled
// instances, jobs, containers without a volume). `start` writes what the crash-sender needs to
// `<reports>/crash-sender.json` (0600); at a crash, once the record is durable, the handler runs
// the crash-sender with that file and the record's path and waits for it, bounded
// (CCrashCapture/CrashTime/ccr_sender.c). The sender does what the next launch would do for that
// one record (attach the session's context, symbolicate, build seed 000's payload, redact, check,
// limit, upload under the record id as idempotency key) with one try per destination; whatever it
// could not send stays in pending/ for the next launch. Docs/Decisions/0028.
//
// Only what can be written down travels: the collector (endpoint and token as resolved at
// `start`), Sentry DSNs, Logz.io listeners, seed 000's redaction rules plus template rules and
// known names, the verifier's known names. A configuration with anything else (a custom
// transport, a rule with a transform closure) makes `start` throw rather than send differently
// at a crash than at the next launch.
import CCrashCapture
import CrashReportModel
import Foundation
import Glibc

extension CrashReporter {
    /// Delivery at crash time: the crash-sender program (the `crash-sender` product of this
    /// package, installed beside the app) runs at a crash and uploads the record while the crashed
    /// process waits at most `wait`.
    public struct DeliveryAtCrash: Sendable, Equatable {
        /// Absolute path of the `crash-sender` executable.
        public var senderPath: String
        /// How long the crashed process waits for the sender before it ends by its signal. A
        /// supervisor restarting the service waits this much longer for the restart.
        public var wait: Duration

        public init(senderPath: String, wait: Duration = .seconds(5)) {
            self.senderPath = senderPath
            self.wait = wait
        }
    }
}

/// What the crash-sender reads: written by `start`, the only channel between the two.
struct SenderConfiguration: Codable, Equatable {
    enum Destination: Codable, Equatable {
        case collector(endpoint: String, token: String?)
        case sentry(dsn: String)
        case logzio(url: String, token: String, type: String)
    }

    /// One redaction rule: one of seed 000's, by name, or a template rule written out.
    struct Rule: Codable, Equatable {
        var builtin: String?
        var name: String?
        var pattern: String?
        var template: String?
    }

    var version = 1
    var reportsDirectory: String
    var app: AppMetadata
    var destinations: [Destination]
    var rules: [Rule]
    var knownNames: [String]
    /// nil: no check of the final payload (`verifiesRedaction` off).
    var verifierKnownNames: [String]?
    var debugDirectories: [String]
    var requestTimeoutMilliseconds: Int
    var waitMilliseconds: Int

    struct NotCarriable: Error, CustomStringConvertible {
        var description: String
    }

    static func milliseconds(_ duration: Duration) -> Int {
        let c = duration.components
        return Int(clamping: c.seconds * 1000 + c.attoseconds / 1_000_000_000_000_000)
    }

    /// The configuration as the sender will use it; throws when part of it cannot be written down.
    static func make(_ configuration: CrashReporter.Configuration, reportsDirectory: String, delivery: CrashReporter.DeliveryAtCrash,
                     collector: (endpoint: URL, token: String?)?) throws -> SenderConfiguration {
        let upload = configuration.upload
        var destinations: [Destination] = []
        // The crash-sender sends with URLSession: a client of the app's own cannot travel to it.
        let clients: [any HTTPClient] = [upload.httpClient].compactMap { $0 } + (upload.transports ?? []).compactMap { transport in
            (transport as? HTTPTransport)?.client ?? (transport as? SentryTransport)?.client ?? (transport as? LogzioTransport)?.client
        }
        if let own = clients.first(where: { !($0 is URLSessionHTTPClient) }) {
            throw NotCarriable(description: "delivery at crash time cannot carry the HTTP client \(type(of: own)): "
                               + "the crash-sender sends with URLSession")
        }
        if let transports = upload.transports {
            for transport in transports {
                switch transport {
                case let http as HTTPTransport:
                    destinations.append(.collector(endpoint: http.endpoint.absoluteString, token: http.token))
                case let sentry as SentryTransport:
                    destinations.append(.sentry(dsn: sentry.dsn.text))
                case let logzio as LogzioTransport:
                    destinations.append(.logzio(url: logzio.url.absoluteString, token: logzio.token, type: logzio.type))
                default:
                    throw NotCarriable(description: "delivery at crash time cannot carry the destination \(transport.name) "
                                       + "(\(type(of: transport))): only the collector, Sentry and Logz.io travel to the crash-sender")
                }
            }
        } else if let collector {
            destinations.append(.collector(endpoint: collector.endpoint.absoluteString, token: collector.token))
        }
        let redactor = upload.redactor ?? .seed000
        let builtins = Dictionary(Redactor.seed000Rules.map { ($0.name, $0.pattern) }, uniquingKeysWith: { first, _ in first })
        var rules: [Rule] = []
        for rule in redactor.rules {
            if builtins[rule.name] == rule.pattern {
                rules.append(Rule(builtin: rule.name))
            } else if rule.transform == nil {
                rules.append(Rule(name: rule.name, pattern: rule.pattern, template: rule.template))
            } else {
                throw NotCarriable(description: "delivery at crash time cannot carry the redaction rule \"\(rule.name)\": "
                                   + "its transform is a closure (a rule with a template travels)")
            }
        }
        let verifier: [String]? = upload.verifiesRedaction ? (upload.verifier ?? RedactionVerifier()).knownNames : nil
        return SenderConfiguration(
            reportsDirectory: reportsDirectory,
            app: AppMetadata(app_name: configuration.appName, app_version: configuration.appVersion, build_number: configuration.buildNumber,
                             bundle_id: configuration.appID, environment: configuration.environment),
            destinations: destinations, rules: rules, knownNames: redactor.knownNames, verifierKnownNames: verifier,
            debugDirectories: upload.debugDirectories,
            requestTimeoutMilliseconds: milliseconds(min(upload.requestTimeout, delivery.wait)),
            waitMilliseconds: milliseconds(delivery.wait))
    }

    /// The pipeline's settings in the sender: one try per destination (the crashed process is
    /// waiting), no beacons or logs, the same redaction and check.
    func upload() throws -> CrashReporter.Upload {
        var upload = CrashReporter.Upload()
        upload.allowsInsecureHTTP = true   // checked by `start` in the app, with the app's setting
        var transports: [any DiagnosticsTransport] = []
        let timeout = Duration.milliseconds(requestTimeoutMilliseconds)
        for destination in destinations {
            switch destination {
            case .collector(let endpoint, let token):
                guard let url = URL(string: endpoint) else { throw NotCarriable(description: "bad collector endpoint \(endpoint)") }
                transports.append(HTTPTransport(endpoint: url, token: token, timeout: timeout))
            case .sentry(let dsn):
                guard let sentry = SentryTransport(dsn: dsn, timeout: timeout) else { throw NotCarriable(description: "bad Sentry DSN") }
                transports.append(sentry)
            case .logzio(let url, let token, let type):
                guard let listener = URL(string: url) else { throw NotCarriable(description: "bad Logz.io URL \(url)") }
                transports.append(LogzioTransport(url: listener, token: token, type: type, timeout: timeout))
            }
        }
        if destinations.count == 1, case .collector(let endpoint, let token) = destinations[0] {
            // The collector alone, as the app has it: session beacons (crash-free rates) go too.
            upload.endpoint = URL(string: endpoint)
            upload.token = token
        } else {
            upload.transports = transports
        }
        upload.requestTimeout = timeout
        upload.maxAttemptsPerLaunch = 1
        upload.periodicInterval = nil
        let builtins = Dictionary(Redactor.seed000Rules.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        upload.redactor = Redactor(rules: try rules.map { rule in
            if let name = rule.builtin {
                guard let builtin = builtins[name] else { throw NotCarriable(description: "unknown built-in redaction rule \(name)") }
                return builtin
            }
            return Redactor.Rule(name: rule.name ?? "", pattern: rule.pattern ?? "", template: rule.template ?? "")
        }, knownNames: knownNames)
        upload.verifiesRedaction = verifierKnownNames != nil
        upload.verifier = verifierKnownNames.map { RedactionVerifier(knownNames: $0) }
        upload.debugDirectories = debugDirectories
        return upload
    }

    /// Written whole (temporary file, fsync, rename), 0600: it holds the upload token.
    func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(self)
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw NotCarriable(description: "cannot write \(temporary): \(String(cString: strerror(errno)))") }
        fchmod(fd, 0o600)
        let written = CrashReporter.writeAll(fd, data) && fsync(fd) == 0
        close(fd)
        guard written, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw NotCarriable(description: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    static func read(from path: String) throws -> SenderConfiguration {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw NotCarriable(description: "cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard ReportsDirectory.isOurs(fd) else { throw NotCarriable(description: "\(path) is not a regular file owned by this user") }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while data.count < 4 * 1024 * 1024 {
            let n = Glibc.read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            data.append(contentsOf: buffer[0..<n])
        }
        return try JSONDecoder().decode(SenderConfiguration.self, from: data)
    }
}

extension SentryTransport.DSN {
    /// The DSN as text again: scheme://key@host[:port][/path]/project.
    var text: String {
        guard var components = URLComponents(url: base, resolvingAgainstBaseURL: false) else { return base.absoluteString }
        components.user = publicKey
        let prefix = components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path
        components.path = prefix + "/" + projectID
        return components.string ?? base.absoluteString
    }
}

extension CrashReporter {
    /// The file `start` writes for the crash-sender, in the reports directory.
    static func senderConfigurationPath(_ directory: ReportsDirectory) -> String { directory.path + "/crash-sender.json" }

    /// Checks, before anything is installed, that delivery at crash time can work as configured:
    /// the sender is an executable at an absolute path and the configuration can travel. nil when
    /// it is off (not configured, or uploads off).
    static func prepareDeliveryAtCrash(_ configuration: Configuration, directory: ReportsDirectory,
                                       collector: @autoclosure () -> (endpoint: URL, token: String?)) throws -> SenderConfiguration? {
        guard let delivery = configuration.deliveryAtCrash, configuration.upload.isEnabled else { return nil }
        guard delivery.senderPath.hasPrefix("/"), access(delivery.senderPath, X_OK) == 0 else {
            throw StartError(kind: .invalidConfiguration,
                             message: "deliveryAtCrash.senderPath \(delivery.senderPath) is not an executable file at an absolute path "
                                 + "(build the crash-sender product and install it beside the app)")
        }
        do {
            return try SenderConfiguration.make(configuration, reportsDirectory: directory.path, delivery: delivery, collector: collector())
        } catch {
            throw StartError(kind: .invalidConfiguration, message: "\(error)")
        }
    }

    /// Writes the sender's configuration and hands the handler its settings (after install). A
    /// failure here leaves crash-time delivery off for this process, with a warning: the records
    /// still go at the next launch.
    static func enableDeliveryAtCrash(_ sender: SenderConfiguration, configuration: Configuration, directory: ReportsDirectory) {
        guard let delivery = configuration.deliveryAtCrash else { return }
        let path = senderConfigurationPath(directory)
        do {
            try sender.write(to: path)
        } catch {
            warn("delivery at crash time is off for this process: \(error)")
            return
        }
        var errorBuffer = [CChar](repeating: 0, count: 512)
        let result = ccr_sender_configure(delivery.senderPath, path, Int32(clamping: SenderConfiguration.milliseconds(delivery.wait)),
                                          &errorBuffer, errorBuffer.count)
        if result != 0 {
            warn("delivery at crash time is off for this process: "
                 + String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
    }

    /// The crash-sender's work (its `main` calls this): attach the crashed session's context to
    /// the record, then send it once to every destination. Returns the process exit status:
    /// 0 delivered, 1 kept for the next launch, 2 unusable arguments or configuration.
    public static func _deliverAtCrash(configurationFile: String, record: String) -> Int32 {
        let sender: SenderConfiguration
        let upload: Upload
        let directory: ReportsDirectory
        do {
            sender = try SenderConfiguration.read(from: configurationFile)
            upload = try sender.upload()
            directory = try ReportsDirectory(path: sender.reportsDirectory)
        } catch {
            warn("crash-sender: \(error)")
            return 2
        }
        let name = (record as NSString).lastPathComponent
        guard name.hasSuffix(".crash"), record == directory.pendingFolder + "/" + name else {
            warn("crash-sender: \(record) is not a record in \(directory.pendingFolder)")
            return 2
        }
        let id = String(name.dropLast(".crash".count))
        // The crashed process still holds its session's lock (it waits for us): its context is
        // attached here, as the next launch would, so the record travels whole.
        SessionRecovery(directory: directory, currentSessionID: "").attachToCrashRecord(id: id)
        let uploader = Uploader(directory: directory, settings: upload, app: sender.app, sessionID: "crash-sender")
        guard uploader.sendOne(name) else { return 1 }
        // The next launch's didCrashDuringPreviousExecution: the record it would have looked for is gone.
        ReportsDirectory.writeSmallFile(directory.path + "/delivered-at-crash", id + "\n")
        return 0
    }
}
