// The public facade: `CrashReporter.start(_:)` once, early, on the caller's thread.
// It prepares the reports directory and hands everything else to the C installer (CCrashCapture),
// which sets up what the signal handler needs so that a crash only writes and renames a file.
import CCrashCapture
import CrashReportModel
import Foundation
import Glibc
import Synchronization

public enum CrashReporter {
    /// How crash reporting runs in this process. A value type: build it, then pass it to `start`.
    public struct Configuration: Sendable {
        /// Identifies the program in reports (seed 000's `app_metadata.bundle_id`), e.g. "com.example.app".
        public var appID: String
        /// Where records are written: `new/` while a process runs, `pending/` once a crash is recorded.
        public var reportsDirectory: String
        /// The program's version, carried in every record.
        public var appVersion: String
        /// How long the handler may take before the watchdog finishes the record itself.
        public var watchdogTimeout: Duration
        /// Display name (seed 000 app_name); defaults to the executable's name.
        public var appName: String
        /// CI/CD build identifier (seed 000 build_number).
        public var buildNumber: String
        /// "development", "staging" or "production" (seed 000 environment).
        public var environment: String
        /// Delivery: endpoint, token, retries, store bounds, triggers, redaction.
        public var upload: Upload
        /// How often the process's RSS and its memory cgroup's usage are sampled (last 60 kept
        /// beside the session file), so that a process the OOM killer ends is reported as
        /// `oom_kill` with the memory before the end; nil turns it off. Off the hot path: one
        /// thread, two small file reads and a 3 KB file rewrite per sample.
        public var memorySampleInterval: Duration? = .seconds(5)
        /// At a crash, after the record is durable, one JSON line on standard error (record id,
        /// signal, thread, the innermost 16 frames as module + offset with build-ids), so journald,
        /// Docker's logs or an ELK shipper see every crash even when the host never restarts and no
        /// collector is reachable; `crashtool symbolicate` reads a log holding it. Off by default.
        public var crashLineOnStandardError = false
        /// Other threads' stacks at a crash.
        public var threads: ThreadCapture = ThreadCapture()
        /// Delivery at crash time (off by default): for hosts that may be gone before a next
        /// launch, the crash-sender uploads the record while the crashed process waits, bounded.
        /// See `DeliveryAtCrash`.
        public var deliveryAtCrash: DeliveryAtCrash?
        /// Hang detection (on by default in release builds, off in debug ones; nil turns it off):
        /// heartbeats (`CrashReporter.heartbeat(named:)`, the server integrations' event loops,
        /// the cooperative pool, the main thread) that stop for longer than the threshold make a
        /// hang report with every thread's stack. See `HangDetection`.
        public var hangs: HangDetection? = HangDetection.buildDefault

        public init(appID: String, reportsDirectory: String, appVersion: String = "", watchdogTimeout: Duration = .seconds(2),
                    appName: String? = nil, buildNumber: String = "", environment: String = "production",
                    upload: Upload = Upload()) {
            self.appID = appID
            self.reportsDirectory = reportsDirectory
            self.appVersion = appVersion
            self.watchdogTimeout = watchdogTimeout
            self.appName = appName ?? fileName(of: CommandLine.arguments.first ?? appID)
            self.buildNumber = buildNumber
            self.environment = environment
            self.upload = upload
        }
    }

    /// At a crash, every other thread is listed (id, name) and asked, by a real-time signal, to
    /// unwind itself; the record keeps what answered within `wait` (never more than half of the
    /// watchdog's budget). Docs/Decisions/0010-all-threads.md.
    public struct ThreadCapture: Sendable, Equatable {
        /// Other threads listed at most (1…256); 0 records the crashing thread only.
        public var maxThreads: Int
        /// Frames kept per other thread (1…64).
        public var framesPerThread: Int
        /// Longest wait for all answers together.
        public var wait: Duration

        public init(maxThreads: Int = 256, framesPerThread: Int = 32, wait: Duration = .milliseconds(250)) {
            self.maxThreads = maxThreads
            self.framesPerThread = framesPerThread
            self.wait = wait
        }

        /// The crashing thread only.
        public static let disabled = ThreadCapture(maxThreads: 0)
    }

    /// Why `start` refused. Nothing is left installed when it throws.
    public struct StartError: Error, CustomStringConvertible, Equatable {
        public enum Kind: Sendable, Equatable {
            case alreadyStarted
            case invalidConfiguration
            case reportsDirectoryUnusable
            case installationFailed
        }
        public var kind: Kind
        public var message: String
        public var description: String { message }
    }

    private struct State {
        var started = false
        var reportsDirectory: String?
        var recordID: String?
        var recovery: BackgroundWork?
        var context: ReportingContext?
        var configuration: Configuration?
        var uploader: Uploader?
        var directory: ReportsDirectory?
        var previousLaunch = LaunchFile.Previous()
        var hangMonitor: HangMonitor?
    }

    /// This library's version, sent with every payload.
    public static let version = "0.5.0"

    static func uploader() -> Uploader? { state.withLock { $0.uploader } }
    static func hangMonitor() -> HangMonitor? { state.withLock { $0.hangMonitor } }
    static func reportsDirectoryValue() -> ReportsDirectory? { state.withLock { $0.directory } }
    static func launchInfo() -> LaunchFile.Previous { state.withLock { $0.previousLaunch } }
    static func breadcrumbMark() -> UInt64 { ccr_breadcrumb_total() }

    /// What reports written outside the signal handler (non-fatal errors) need.
    struct ReportingContext: Sendable {
        var appID: String
        var appVersion: String
        var newFolder: String
        var pendingFolder: String
        var sessionID: String
        var sessionPath: String?
    }

    static func reportingContext() -> ReportingContext? { state.withLock { $0.context } }

    private static let state = Mutex(State())

    /// Installs crash capture. Call it at most once per process, as early as possible, on any
    /// thread (that thread and every thread created afterwards get an alternate signal stack).
    /// Throws `StartError` for a second call, an unusable reports directory or a failed install.
    public static func start(_ configuration: Configuration) throws {
        let crashedOnLaunch = try state.withLock { state -> Uploader? in
            guard !state.started else {
                throw StartError(kind: .alreadyStarted, message: "CrashReporter.start was already called in this process")
            }
            guard !configuration.appID.isEmpty else {
                throw StartError(kind: .invalidConfiguration, message: "appID must not be empty")
            }
            try validate(configuration.upload)
            let directory = try ReportsDirectory(path: configuration.reportsDirectory)
            directory.recoverAbandonedRecords()
            var idBuffer = [CChar](repeating: 0, count: 37)
            ccr_make_record_id(&idBuffer)
            let recordID = String(decoding: idBuffer.prefix(36).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let app = AppMetadata(app_name: configuration.appName, app_version: configuration.appVersion,
                                  build_number: configuration.buildNumber, bundle_id: configuration.appID,
                                  environment: configuration.environment)
            let sender = try prepareDeliveryAtCrash(configuration, directory: directory, collector: {
                let resolver = Uploader(directory: directory, settings: configuration.upload, app: app, sessionID: recordID)
                return (resolver.resolveEndpoint().url, configuration.upload.token ?? getenv("CRASH_REPORTING_TOKEN").map { String(cString: $0) })
            }())
            try install(configuration, directory: directory.path, recordID: recordID)
            if let sender { enableDeliveryAtCrash(sender, configuration: configuration, directory: directory) }
            let sessionPath = openSession(configuration, directory: directory, sessionID: recordID)
            state.context = ReportingContext(appID: configuration.appID, appVersion: configuration.appVersion,
                                             newFolder: directory.newFolder, pendingFolder: directory.pendingFolder,
                                             sessionID: recordID, sessionPath: sessionPath)
            state.previousLaunch = LaunchFile.begin(directory, sessionID: recordID)
            let uploader = Uploader(directory: directory, settings: configuration.upload, app: app, sessionID: recordID,
                                    priorityRecord: state.previousLaunch.didCrash ? state.previousLaunch.sessionID.map { $0 + ".crash" } : nil)
            let recovery = SessionRecovery(directory: directory, currentSessionID: recordID)
            let memorySidecar = sessionPath.map { $0 + ".memory" }
            let memoryInterval = configuration.memorySampleInterval
            let hangMonitor = configuration.hangs.flatMap { hangs in
                state.context.map { makeHangMonitor(hangs, context: $0, uploader: uploader) }
            }
            let pipeline = BackgroundWork {
                // Listed at a crash, not asked to unwind (like the watchdog); not renamed: it makes threads
                // and URLSession queues work on libdispatch's pool, whose new workers inherit its name.
                ccr_threads_mark_reporter("crash-pipeline", 0)
                startDeferredSetup()           // watchdog thread and libunwind: off the caller's thread (install deferred them)
                hangMonitor?.start()           // its thread made here, not on the caller's
                if let memorySidecar, let memoryInterval { MemorySampler(sidecar: memorySidecar, interval: memoryInterval).start() }
                uploader.spoolBeaconAtStart()  // counted even if the launch ends before its first pass
                uploader.waitForAppStartup()   // the launch's pass after the app's own start-up (Upload.firstPassDelay)
                uploader.run(recovery: recovery)
            }
            if !pipeline.hasThread { startDeferredSetup() }   // no background thread: here, as before
            state.recovery = pipeline
            state.uploader = uploader
            state.hangMonitor = hangMonitor
            state.directory = directory
            state.started = true
            state.configuration = configuration
            state.reportsDirectory = directory.path
            state.recordID = recordID
            return state.previousLaunch.crashedOnLaunch && configuration.upload.isEnabled ? uploader : nil
        }
        // The last run crashed within seconds of starting: it may crash again before the
        // background upload gets anywhere, so this launch waits for it, a bounded time.
        if let uploader = crashedOnLaunch {
            _ = uploader.waitForPass(after: 1, timeout: configuration.upload.crashOnLaunchWait)
        }
    }

    /// Endpoints the token would be sent to: https, or http for loopback (or with
    /// `allowsInsecureHTTP`). Checked before anything is installed.
    private static func validate(_ upload: Upload) throws {
        guard upload.isEnabled else { return }
        var endpoints = upload.endpoint.map { [("upload.endpoint", $0)] } ?? []
        for case let transport as HTTPTransport in upload.transports ?? [] {
            endpoints.append(("HTTPTransport endpoint", transport.endpoint))
        }
        for (name, url) in endpoints {
            if let problem = Upload.endpointProblem(url, allowsInsecureHTTP: upload.allowsInsecureHTTP) {
                throw StartError(kind: .invalidConfiguration, message: "\(name): \(problem)")
            }
        }
    }

    /// The app metadata of seed 000, from the configuration given to `start`.
    public static var appMetadata: AppMetadata? {
        state.withLock { state in
            state.configuration.map {
                AppMetadata(app_name: $0.appName, app_version: $0.appVersion, build_number: $0.buildNumber,
                            bundle_id: $0.appID, environment: $0.environment)
            }
        }
    }

    /// The host metadata of seed 000, mapped to Linux (see Metadata.swift), read now.
    public static func hostMetadata() -> HostMetadata? {
        state.withLock { $0.reportsDirectory }.map { HostMetadata.current(reportsDirectory: $0) }
    }

    /// Whether reports may be sent (Crashlytics' collection switch). Persisted in the reports
    /// directory, so it holds across launches; while false, reports are kept but not sent.
    public static var isCollectionEnabled: Bool {
        guard let directory = state.withLock({ $0.reportsDirectory }) else { return true }
        return access(directory + "/collection-disabled", F_OK) != 0
    }

    /// Turns collection on or off, for this and later launches. Throws before `start` (there is
    /// no reports directory to remember it in) or when the setting cannot be stored.
    public static func setCollectionEnabled(_ enabled: Bool) throws {
        guard let directory = state.withLock({ $0.reportsDirectory }) else { throw ReportingError.notStarted }
        let marker = directory + "/collection-disabled"
        if enabled {
            guard unlink(marker) == 0 || errno == ENOENT else {
                throw ReportingError.storageFailed("cannot remove \(marker): \(String(cString: strerror(errno)))")
            }
        } else {
            let fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { throw ReportingError.storageFailed("cannot create \(marker): \(String(cString: strerror(errno)))") }
            fsync(fd)
            close(fd)
            // This launch's beacon was spooled as the reporter started, before the app could
            // say no: it goes (another launch's was spooled while collection was allowed).
            uploader()?.withdrawBeacons(all: false)
        }
    }

    /// True once `start` has succeeded.
    public static var isStarted: Bool { state.withLock { $0.started } }

    /// Waits until the background work asked for so far is done (attaching the previous
    /// session's breadcrumbs to its crash record, reporting abnormal terminations, upload
    /// passes), at most `timeout`. Returns false on time-out. For short-lived programs and tests.
    @discardableResult
    public static func waitForBackgroundWork(timeout: Duration = .seconds(5)) -> Bool {
        guard let uploader = uploader() else { return true }
        return uploader.waitForRequestedPasses(timeout: timeout)
    }

    /// The session file carries breadcrumbs, keys and the user id. Without one (say, the disk is
    /// full) crash capture still works, and those calls are ignored.
    private static func openSession(_ configuration: Configuration, directory: ReportsDirectory, sessionID: String) -> String? {
        var error = [CChar](repeating: 0, count: 256)
        let path = directory.sessionsFolder + "/" + sessionID + ".session"
        guard ccr_session_open(path, sessionID, configuration.appID, configuration.appVersion, &error, error.count) == 0 else {
            let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            FileHandle.standardError.write(Data("CrashReporter: breadcrumbs and keys disabled: \(message)\n".utf8))
            return nil
        }
        return path
    }

    /// Crashes the process on purpose, to check that reports arrive — in debug builds only.
    /// In release builds it writes a line to standard error and returns.
    public static func forceCrash() {
        #if DEBUG
        fatalError("CrashReporter.forceCrash() was called")
        #else
        FileHandle.standardError.write(Data("CrashReporter.forceCrash() ignored: only debug builds crash on purpose\n".utf8))
        #endif
    }

    private static func install(_ configuration: Configuration, directory: String, recordID: String) throws {
        let components = configuration.watchdogTimeout.components
        let timeoutMilliseconds = components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
        let threads = configuration.threads
        let waitMilliseconds = threads.wait.components.seconds * 1000 + threads.wait.components.attoseconds / 1_000_000_000_000_000
        var errorBuffer = [CChar](repeating: 0, count: 512)
        let result = directory.withCString { reportsDirectory in
            recordID.withCString { recordID in
                configuration.appID.withCString { appID in
                    configuration.appVersion.withCString { appVersion in
                        var options = ccr_install_options(
                            reports_directory: reportsDirectory,
                            record_id: recordID,
                            app_id: appID,
                            app_version: appVersion,
                            watchdog_timeout_ms: Int32(clamping: max(timeoutMilliseconds, 1)),
                            test_misbehaviour: testMisbehaviour(),
                            thread_limit: threads.maxThreads <= 0 ? -1 : Int32(clamping: min(threads.maxThreads, 256)),
                            thread_frames: Int32(clamping: min(max(threads.framesPerThread, 1), 64)),
                            thread_wait_ms: Int32(clamping: max(waitMilliseconds, 1)),
                            defer_libunwind: 1)
                        return ccr_install(&options, &errorBuffer, errorBuffer.count)
                    }
                }
            }
        }
        guard result == 0 else {
            let message = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw StartError(kind: result == 3 ? .reportsDirectoryUnusable : .installationFailed, message: message)
        }
        ccr_set_crash_line_fd(configuration.crashLineOnStandardError ? STDERR_FILENO : -1)
    }

    /// Makes the watchdog thread and loads libunwind for the install made with `defer_libunwind`
    /// (Docs/Decisions/0037): ~0.6 ms that start() no longer spends on the caller's thread. Until
    /// libunwind is loaded a crash waits for it (at most 50 ms); if it fails, crashes are recorded
    /// with frame pointers, and this says why. The watchdog first: it bounds a crash's handler.
    private static func startDeferredSetup() {
        var errorBuffer = [CChar](repeating: 0, count: 512)
        if getenv("CRASH_REPORTING_TEST_WATCHDOG_AFTER_CRASH") != nil {
            // Test knob: the watchdog is made only once a crash has begun (at most 10 s), so that
            // a test sees a crash before it exists still finished by it.
            for _ in 0..<10_000 where ccr_crash_started() == 0 { usleep(1000) }
        }
        if ccr_watchdog_start_deferred(&errorBuffer, errorBuffer.count) != 0 {
            let message = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            warn("\(message); a crash handler that stalls will not be finished by the watchdog")
        }
        defer { ccr_watchdog_wait_started(100) }   // its name published; after the load, which a crash waits for
        // A failure is said before it is published: a crash waiting for the load then goes on
        // with frame pointers, and may end the process at once.
        let loaded = ccr_libunwind_load_deferred_unpublished(&errorBuffer, errorBuffer.count)
        if loaded != 0 {
            let message = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            warn("\(message); crash stacks are walked by frame pointers only")
        }
        ccr_libunwind_publish_deferred(loaded)
    }

    /// Test knob for the integration tests of the handler's own failure paths; read once, here.
    private static func testMisbehaviour() -> Int32 {
        switch getenv("CRASH_REPORTING_TEST_MISBEHAVIOUR").map({ String(cString: $0) }) {
        case "fault-in-handler": return 1
        case "hang-in-handler": return 2   // the handler stalls with its facts and modules in its buffer
        case "hang-in-handler-after-write": return 22   // the same stall, with them written to the file first
        case "modules-walk-fails": return 3
        case "threads-stall-after-frame-pointers": return 4
        case "threads-never-answer": return 5
        case "unwind-step-fails": return 6
        case "threads-stay-after-hang-answer": return 7
        case "stale-install-build-ids": return 8
        case "libunwind-missing": return 9
        case "modules-read-without-pipe", "modules-read-by-process-vm-readv": return 10   // neither the guarded copy nor the pipe
        case "abort-during-asked-walk": return 11
        case "killed-before-session-marked": return 12
        case "modules-read-without-direct": return 14
        case "modules-read-faults": return 15
        case "unwind-check-faults": return 16   // libunwind's first memory check in the crashing thread's walk faults
        case "unwind-checks-by-kernel": return 17   // libunwind checks memory with its own system calls
        case "unwind-lookups-by-loader": return 18   // libunwind finds objects with the loader's dl_iterate_phdr
        case "wait-for-second-crash": return 19   // the crash lists threads once a second thread's crash is noted
        case "threads-spare-kept": return 20   // the crash does not release the descriptor held for listing threads
        case "unwind-checks-by-pipe": return 21   // libunwind's checks through its pipe alone, as libunwind 1.8 makes them
        default: return 0
        }
    }
}
