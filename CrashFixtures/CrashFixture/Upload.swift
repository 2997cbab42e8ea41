// Upload fixture modes: the next-launch pipeline against the test's collector. The endpoint and
// the pipeline's knobs come from the environment (CRASH_FIXTURE_ENDPOINT and friends); without an
// endpoint, uploads are off, so the other fixtures keep their records where the tests look.
import CrashReporting
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc

let environment = ProcessInfo.processInfo.environment

func milliseconds(_ name: String) -> Duration? {
    environment[name].flatMap(Int.init).map { .milliseconds($0) }
}

/// The configuration every fixture starts with.
func fixtureConfiguration(_ reportsDirectory: String) -> CrashReporter.Configuration {
    var upload = CrashReporter.Upload.disabled
    if let endpoint = environment["CRASH_FIXTURE_ENDPOINT"].flatMap(URL.init(string:)) {
        upload = CrashReporter.Upload()
        upload.endpoint = endpoint
        upload.token = environment["CRASH_FIXTURE_TOKEN"]
    } else if environment["CRASH_FIXTURE_UPLOAD"] == "1" {
        upload = CrashReporter.Upload()   // endpoint resolved from the environment or a connect URL
    }
    upload.requestTimeout = milliseconds("CRASH_FIXTURE_TIMEOUT_MS") ?? .seconds(2)
    // Several destinations at once: the collector (when named), Sentry by DSN, an ELK listener.
    var transports: [any DiagnosticsTransport] = []
    if let dsn = environment["CRASH_FIXTURE_SENTRY_DSN"], let sentry = SentryTransport(dsn: dsn, timeout: upload.requestTimeout) {
        transports.append(sentry)
    }
    if let url = environment["CRASH_FIXTURE_LOGZIO_URL"].flatMap(URL.init(string:)) {
        transports.append(LogzioTransport(url: url, token: environment["CRASH_FIXTURE_LOGZIO_TOKEN"] ?? "", timeout: upload.requestTimeout))
    }
    if !transports.isEmpty {
        if let endpoint = upload.endpoint {
            transports.insert(HTTPTransport(endpoint: endpoint, token: upload.token, timeout: upload.requestTimeout), at: 0)
        }
        upload.isEnabled = true
        upload.transports = transports
    }
    upload.maxAttemptsPerLaunch = environment["CRASH_FIXTURE_ATTEMPTS"].flatMap(Int.init) ?? 3
    upload.initialBackoff = .milliseconds(50)
    upload.maxBackoff = .milliseconds(400)
    upload.maxPendingReports = environment["CRASH_FIXTURE_MAX_PENDING"].flatMap(Int.init) ?? 200
    upload.maxPendingBytes = environment["CRASH_FIXTURE_MAX_PENDING_BYTES"].flatMap(Int.init) ?? 64 * 1024 * 1024
    upload.crashOnLaunchWindow = milliseconds("CRASH_FIXTURE_CRASH_ON_LAUNCH_WINDOW_MS") ?? .seconds(5)
    if let delay = milliseconds("CRASH_FIXTURE_FIRST_PASS_DELAY_MS") { upload.firstPassDelay = delay }
    upload.periodicInterval = milliseconds("CRASH_FIXTURE_PERIODIC_MS")
    upload.beaconBatch = environment["CRASH_FIXTURE_BEACON_BATCH"].flatMap(Int.init) ?? 20
    upload.allowsInsecureHTTP = environment["CRASH_FIXTURE_ALLOW_HTTP"] == "1"
    upload.persistsConnectURL = environment["CRASH_FIXTURE_PERSIST_CONNECT"] == "1"
    upload.connectURLHosts = environment["CRASH_FIXTURE_CONNECT_HOSTS"].map { $0.split(separator: ",").map(String.init) }
    var configuration = CrashReporter.Configuration(appID: "com.example.crash-fixture", reportsDirectory: reportsDirectory,
                                                    appVersion: "1.0.0", buildNumber: "42", environment: "staging", upload: upload)
    if environment["CRASH_FIXTURE_THREADS_OFF"] == "1" { configuration.threads = .disabled }
    if let sender = environment["CRASH_FIXTURE_SENDER"] {
        configuration.deliveryAtCrash = .init(senderPath: sender, wait: milliseconds("CRASH_FIXTURE_SENDER_WAIT_MS") ?? .seconds(5))
    }
    configuration.crashLineOnStandardError = environment["CRASH_FIXTURE_CRASH_LINE"] == "1"
    if let wait = milliseconds("CRASH_FIXTURE_THREAD_WAIT_MS") { configuration.threads.wait = wait }
    if let limit = environment["CRASH_FIXTURE_MAX_THREADS"].flatMap(Int.init) { configuration.threads.maxThreads = limit }
    if let timeout = milliseconds("CRASH_FIXTURE_WATCHDOG_TIMEOUT_MS") { configuration.watchdogTimeout = timeout }
    return configuration
}

func statusLine() -> String {
    let status = CrashReporter.uploadStatus
    return "delivered=\(status.delivered) quarantined=\(status.quarantined) dropped=\(status.dropped) unsent=\(CrashReporter.checkForUnsentReports())"
        + " crashed_before=\(CrashReporter.didCrashDuringPreviousExecution)"
        + " config_error=\(status.configurationError == nil ? "none" : "yes") unreachable=\(status.unreachable == nil ? "no" : "yes")"
        + " masked=\(status.leaksMasked.isEmpty ? "none" : status.leaksMasked.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ","))"
        + " failure=\(status.lastFailure ?? "none")"
}

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

/// CRASH_FIXTURE_WAIT_FOR_BEACON_S=N: waits up to N s for a beacon in beacons/ and prints
/// beacon_spooled=true|false.
func waitForBeaconIfAsked(_ reportsDirectory: String) {
    guard let seconds = environment["CRASH_FIXTURE_WAIT_FOR_BEACON_S"].flatMap(Double.init) else { return }
    let deadline = Date().addingTimeInterval(seconds)
    func spooled() -> Bool {
        ((try? FileManager.default.contentsOfDirectory(atPath: reportsDirectory + "/beacons")) ?? []).contains { $0.hasSuffix(".json") }
    }
    while !spooled() && Date() < deadline { usleep(5_000) }
    say("beacon_spooled=\(spooled())")
}

enum UploadMode: String, CaseIterable {
    /// Starts, waits for the launch's upload pass, prints the status line.
    case uploadPass = "upload-pass"
    /// Starts and prints the status line at once (crash-on-launch: the upload happened inside start).
    case startThenStatus = "start-then-status"
    /// Starts, prints "ready" and waits to be killed (mid-upload, when the collector holds the request).
    case uploadThenWaitForKill = "upload-then-wait-for-kill"
    /// Records CRASH_FIXTURE_COUNT non-fatal errors and exits.
    case recordErrors = "record-errors"
    /// Logs every text of the PII corpus (CRASH_FIXTURE_PII_CORPUS) into breadcrumbs, keys,
    /// custom data, a non-fatal error and a network error, then crashes.
    case piiThenCrash = "pii-then-crash"
    /// Logs context, calls sendDiagnostics(), waits, prints the status line.
    case sendDiagnostics = "send-diagnostics"
    /// Logs context, records CRASH_FIXTURE_COUNT errors quickly (the burst trigger), waits, prints the status line.
    case errorBurst = "error-burst"
    /// Logs a line, then waits (CRASH_FIXTURE_PERIODIC_MS sets the checkpoint interval) until a
    /// checkpoint was delivered or 20 s passed; prints the status line.
    case periodic = "periodic"
    /// Logs context and calls shutdown(); prints "shutdown=<bool>" and the status line.
    case shutdown = "shutdown"
    /// Prints the unsent count, sends them (whatever the consent), prints the status line.
    case sendUnsent = "send-unsent"
    /// Prints the unsent count, deletes them, prints the count again.
    case deleteUnsent = "delete-unsent"
    /// Logs three requests (one failed) with personal data in URLs and bodies, then exits cleanly.
    case logNetwork = "log-network"
    /// Applies the connect URL in CRASH_FIXTURE_URL; prints the result and the resolved endpoint.
    case handleURL = "handle-url"
}

/// VmRSS and VmHWM (the peak) of this process in KiB, from /proc/self/status (tools/bench-rss).
func memoryKiB() -> (resident: Int, peak: Int) {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    func field(_ name: String) -> Int {
        status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
            .flatMap { Int($0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") } ?? -1
    }
    return (field("VmRSS"), field("VmHWM"))
}

func runUploadMode(_ mode: UploadMode, reportsDirectory: String) -> Never {
    let printsMemory = environment["CRASH_FIXTURE_PRINT_RSS"] == "1"
    let beforeStart = memoryKiB()
    try! CrashReporter.start(fixtureConfiguration(reportsDirectory))
    if printsMemory { say("rss_before_start_kib=\(beforeStart.resident) rss_after_start_kib=\(memoryKiB().resident)") }
    waitForBeaconIfAsked(reportsDirectory)
    switch mode {
    case .uploadPass:
        _ = CrashReporter.waitForBackgroundWork(timeout: .seconds(environment["CRASH_FIXTURE_WAIT_S"].flatMap(Int.init) ?? 60))
        say(statusLine())
        if printsMemory {
            let after = memoryKiB()
            say("rss_after_pass_kib=\(after.resident) peak_kib=\(after.peak)")
        }
    case .startThenStatus:
        say(statusLine())
    case .uploadThenWaitForKill:
        // As an app is started by a service manager: SIGTERM takes its default action. (A test
        // runner may start us with it blocked, and the mask is inherited.)
        var terminate = sigset_t()
        sigemptyset(&terminate)
        sigaddset(&terminate, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &terminate, nil)
        say("ready")
        while true { sleep(60) }
    case .recordErrors:
        let count = environment["CRASH_FIXTURE_COUNT"].flatMap(Int.init) ?? 1
        for index in 0..<count {
            _ = try? CrashReporter.record(domain: "ledger", code: index, message: "imbalance #\(index)")
        }
        say("recorded \(count)")
    case .piiThenCrash:
        logCorpus()
        level1(.nullPointerWrite)
    case .sendDiagnostics:
        CrashReporter.logScreenView("checkout")
        CrashReporter.log("diagnostics requested", level: .warning, tag: "qa")
        try! CrashReporter.sendDiagnostics()
        _ = CrashReporter.waitForBackgroundWork(timeout: .seconds(30))
        say(statusLine())
    case .errorBurst:
        CrashReporter.log("before the burst")
        let count = environment["CRASH_FIXTURE_COUNT"].flatMap(Int.init) ?? 5
        for index in 0..<count { _ = try? CrashReporter.record(domain: "ledger", code: index, message: "burst #\(index)") }
        // No explicit wait for a pass: the burst itself must have asked for one.
        let deadline = Date().addingTimeInterval(20)
        while CrashReporter.uploadStatus.delivered < count && Date() < deadline { usleep(20_000) }
        say(statusLine())
    case .periodic:
        _ = CrashReporter.waitForBackgroundWork(timeout: .seconds(20))
        CrashReporter.log("a long session", level: .info, tag: "lifecycle")
        let deadline = Date().addingTimeInterval(20)
        while CrashReporter.uploadStatus.delivered < 1 && Date() < deadline { usleep(20_000) }
        say(statusLine())
    case .shutdown:
        CrashReporter.log("shutting down", level: .info, tag: "lifecycle")
        say("shutdown=\(CrashReporter.shutdown(timeout: .seconds(20)))")
        say(statusLine())
    case .sendUnsent:
        say("unsent-before=\(CrashReporter.checkForUnsentReports())")
        CrashReporter.sendUnsentReports()
        _ = CrashReporter.waitForBackgroundWork(timeout: .seconds(30))
        say(statusLine())
    case .deleteUnsent:
        say("unsent-before=\(CrashReporter.checkForUnsentReports())")
        CrashReporter.deleteUnsentReports()
        say("unsent-after=\(CrashReporter.checkForUnsentReports())")
    case .logNetwork:
        for (index, status) in [200, 201, 503].enumerated() {
            var request = URLRequest(url: URL(string: "https://api.example.com/v1/children/\(1000 + index)/feed?email=jane.doe@example.com")!)
            request.httpMethod = index == 1 ? "POST" : "GET"
            request.setValue("Bearer sk_live_abcdefghijklmnop", forHTTPHeaderField: "Authorization")
            let response = HTTPURLResponse(url: request.url!, statusCode: status, httpVersion: "HTTP/1.1", headerFields: ["Content-Type": "application/json"])
            CrashReporter.logNetworkRequest(request, response: response, requestBody: Data(#"{"password":"hunter22","n":\#(index)}"#.utf8),
                                            responseBody: Data(#"{"email":"jane.doe@example.com"}"#.utf8))
        }
        say("logged 3")
    case .handleURL:
        let url = URL(string: environment["CRASH_FIXTURE_URL"] ?? "")!
        say("result=\(CrashReporter.handleURL(url))")
        let resolved = CrashReporter.resolvedEndpoint
        say("endpoint=\(resolved?.url.absoluteString ?? "none") source=\(resolved?.source.rawValue ?? "none")")
    }
    exit(0)
}

/// Spreads the corpus over every place a payload carries people's text.
func logCorpus() {
    guard let path = environment["CRASH_FIXTURE_PII_CORPUS"], let data = FileManager.default.contents(atPath: path),
          let samples = ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any])?["samples"] as? [[String: Any]] else {
        FileHandle.standardError.write(Data("no PII corpus at CRASH_FIXTURE_PII_CORPUS\n".utf8))
        exit(5)
    }
    var custom: [String: String] = [:]
    var info: [ErrorPayloadKey: ErrorPayloadValue] = [:]
    for (index, sample) in samples.enumerated() {
        guard let text = sample["text"] as? String, (sample["type"] as? String) != "benign" else { continue }
        switch index % 6 {
        case 0: CrashReporter.log(text, level: .info, tag: "corpus")
        case 1: CrashReporter.log("sample \(index)", level: .debug, tag: "corpus", metadata: ["value": text])
        case 2: CrashReporter.setCustomValue(text, forKey: "sample_\(index)")
        case 3: custom["sample_\(index)"] = text
        case 4: info[ErrorPayloadKey("sample_\(index)")] = .string(text)
        default: CrashReporter.logAction("corpus", parameters: ["value": text])
        }
    }
    CrashReporter.setUserID("jane.doe@example.com")
    _ = try? CrashReporter.setCustomValue(custom, forKey: "corpus")
    _ = try? CrashReporter.record(domain: "corpus", code: 1, message: "could not reach jane.doe@example.com at 10.20.30.40", userInfo: info)
    var request = URLRequest(url: URL(string: "https://api.example.com/v1/children/12345/feed?email=jane.doe@example.com&token=abcdef1234567890")!)
    request.setValue("Bearer sk_live_abcdefghijklmnop", forHTTPHeaderField: "Authorization")
    CrashReporter.logNetworkRequest(request, response: nil, error: URLError(.timedOut))
}
