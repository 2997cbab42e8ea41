// The next-launch pipeline, on its own thread: pending/ → uploading/ → deleted, or quarantine/
// with the reason. Each record is symbolicated with what this host has, made into seed 000's
// payload, redacted, checked, cut to the limits, gzip'd and delivered. Moves are renames, so a
// process killed at any point leaves every record in exactly one folder; a record found in
// uploading/ at the next launch is sent again under the same idempotency key (its id), which
// the collector stores once.
import CrashReportModel
import CrashSymbolication
import Foundation
import Glibc
import Synchronization

final class Uploader: Sendable {
    let directory: ReportsDirectory
    let settings: CrashReporter.Upload
    let app: AppMetadata
    let sessionID: String

    private struct Shared {
        var requested: UInt64 = 1   // the launch's own pass
        var completed: UInt64 = 0
        var force = false
        var status = CrashReporter.UploadStatus()
        var connected: URL?
        var connectedLoaded = false
        var attempts: [String: Int] = [:]
        var warnedFallback = false
    }

    private let shared = Mutex(Shared())
    private let passLock = Mutex(())
    private let signal = Semaphore()

    init(directory: ReportsDirectory, settings: CrashReporter.Upload, app: AppMetadata, sessionID: String) {
        self.directory = directory
        self.settings = settings
        self.app = app
        self.sessionID = sessionID
    }

    // MARK: Triggers

    /// Asks for a pass; returns its number, for `waitForPass(after:)`.
    @discardableResult
    func wake(force: Bool = false) -> UInt64 {
        let generation = shared.withLock { shared -> UInt64 in
            shared.requested += 1
            shared.force = shared.force || force
            return shared.requested
        }
        signal.post()
        return generation
    }

    /// Waits until pass `generation` (or a later one) has finished; false on time-out.
    func waitForPass(after generation: UInt64, timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while shared.withLock({ $0.completed }) < generation {
            if ContinuousClock.now >= deadline { return false }
            usleep(2000)
        }
        return true
    }

    /// Waits for every pass asked for so far.
    func waitForRequestedPasses(timeout: Duration) -> Bool {
        waitForPass(after: shared.withLock { $0.requested }, timeout: timeout)
    }

    var status: CrashReporter.UploadStatus { shared.withLock { $0.status } }

    func setConnectedEndpoint(_ url: URL) {
        shared.withLock {
            $0.connected = url
            $0.connectedLoaded = true
        }
        let file = directory.path + "/connect-endpoint"
        try? Data((url.absoluteString + "\n").utf8).write(to: URL(fileURLWithPath: file), options: .atomic)
    }

    private static func readConnectedEndpoint(_ directory: ReportsDirectory) -> URL? {
        (try? String(contentsOfFile: directory.path + "/connect-endpoint", encoding: .utf8))
            .flatMap { URL(string: $0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// Seed 003 §6: configuration, environment, connect URL, then localhost:9090.
    func resolveEndpoint() -> CrashReporter.ResolvedEndpoint {
        if let url = settings.endpoint { return .init(url: url, source: .configuration) }
        if let text = getenv("CRASH_REPORTING_ENDPOINT").map({ String(cString: $0) }), !text.isEmpty, let url = URL(string: text) {
            return .init(url: url, source: .environment)
        }
        // Read on first use, not in `start`: Foundation's file reading costs more than start's budget.
        let connected = shared.withLock { shared -> URL? in
            if !shared.connectedLoaded {
                shared.connected = Self.readConnectedEndpoint(directory)
                shared.connectedLoaded = true
            }
            return shared.connected
        }
        if let url = connected { return .init(url: url, source: .connectURL) }
        return .init(url: URL(string: "http://localhost:9090")!, source: .fallback)
    }

    private func transports() -> [any DiagnosticsTransport] {
        if let transports = settings.transports { return transports }
        let endpoint = resolveEndpoint()
        if endpoint.source == .fallback {
            let first = shared.withLock { shared -> Bool in
                defer { shared.warnedFallback = true }
                return !shared.warnedFallback
            }
            if first { CrashReporter.warn("no upload endpoint configured (Configuration.upload.endpoint, CRASH_REPORTING_ENDPOINT or a connect URL); using http://localhost:9090") }
        }
        let token = settings.token ?? getenv("CRASH_REPORTING_TOKEN").map { String(cString: $0) }
        return [HTTPTransport(endpoint: endpoint.url, token: token, timeout: settings.requestTimeout)]
    }

    // MARK: The loop

    /// Runs forever on the pipeline's thread: the launch's pass first, then one per trigger.
    func run(recovery: SessionRecovery) {
        recovery.run()
        let started = ContinuousClock.now
        var stableDue: ContinuousClock.Instant? = started + settings.crashOnLaunchWindow
        var periodicDue = settings.periodicInterval.map { started + $0 }
        var snapshotMark = CrashReporter.breadcrumbMark()
        while true {
            let (generation, force) = shared.withLock { shared -> (UInt64, Bool) in
                defer { shared.force = false }
                return (shared.requested, shared.force)
            }
            passLock.withLock { _ in pass(force: force) }
            shared.withLock { shared in
                shared.completed = max(shared.completed, generation)
                shared.status.passes += 1
            }
            while true {
                let due = [stableDue, periodicDue].compactMap { $0 }.min()
                if signal.wait(until: due) { break }
                let now = ContinuousClock.now
                if let due = stableDue, now >= due {
                    LaunchFile.markStable(directory, sessionID: sessionID)
                    stableDue = nil
                }
                if let due = periodicDue, now >= due, let interval = settings.periodicInterval {
                    periodicDue = due + interval
                    // A checkpoint only when something happened since the last one.
                    let mark = CrashReporter.breadcrumbMark()
                    if mark != snapshotMark {
                        snapshotMark = mark
                        try? CrashReporter.writeSnapshot(trigger: "periodic")
                    }
                    shared.withLock { $0.requested += 1 }
                    break
                }
            }
        }
    }

    /// Deletes what waits to be sent (Crashlytics' deleteUnsentReports).
    func deletePending() {
        passLock.withLock { _ in
            for name in directory.records(in: directory.pendingFolder) { unlink(directory.pendingFolder + "/" + name) }
        }
    }

    // MARK: One pass

    private func pass(force: Bool) {
        mkdir(directory.uploadingFolder, 0o755)
        mkdir(directory.quarantineFolder, 0o755)
        recoverInterrupted()
        enforceBounds()
        guard settings.isEnabled else { return }
        guard force || access(directory.path + "/collection-disabled", F_OK) != 0 else { return }
        let destinations = transports()
        let symbolicator = Symbolicator(locator: DebugFileLocator(options: .init(
            debugDirectories: settings.debugDirectories, useSystemDebugDirectory: true, useDebuginfod: false)))
        let dropped = LaunchFile.droppedCount(directory)
        let memo = RedactionMemo(redactor: settings.redactor ?? .seed000,
                                 verifier: settings.verifiesRedaction ? settings.verifier ?? RedactionVerifier() : nil)
        let host = HostMetadata.current(reportsDirectory: directory.path)
        for name in directory.recordsOldestFirst(in: directory.pendingFolder) {
            let builder = PayloadBuilder(app: app, host: host, droppedReports: dropped)
            guard send(name, destinations: destinations, symbolicator: symbolicator, builder: builder, memo: memo) else { return }
        }
        if settings.transports == nil { _ = sendAPILogs(memo: memo) }   // seed 003's log server is the collector
    }

    /// Records left in uploading/ by a process that died mid-upload go back to pending/. One
    /// whose lock is held belongs to a live process sharing the directory.
    private func recoverInterrupted() {
        for name in directory.records(in: directory.uploadingFolder) {
            let path = directory.uploadingFolder + "/" + name
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { rename(path, directory.pendingFolder + "/" + name) }
            close(fd)
        }
    }

    /// At most `maxPendingReports` records and `maxPendingBytes` bytes wait; the oldest go first.
    private func enforceBounds() {
        var entries = directory.recordsOldestFirst(in: directory.pendingFolder).map { name -> (String, Int) in
            var info = stat()
            return (name, stat(directory.pendingFolder + "/" + name, &info) == 0 ? Int(info.st_size) : 0)
        }
        var bytes = entries.reduce(0) { $0 + $1.1 }
        var dropped = 0
        while !entries.isEmpty && (entries.count > settings.maxPendingReports || bytes > settings.maxPendingBytes) {
            let (name, size) = entries.removeFirst()
            if unlink(directory.pendingFolder + "/" + name) == 0 { dropped += 1 }
            bytes -= size
        }
        if dropped > 0 {
            let total = LaunchFile.addDropped(directory, dropped)
            shared.withLock { $0.status.dropped = total }
            CrashReporter.warn("the reports store was full: \(dropped) oldest record(s) deleted (\(total) in all)")
        }
    }

    /// Sends one record to every destination. False when the pass should stop (a destination is
    /// down or misconfigured: the records after this one would fail the same way).
    private func send(_ name: String, destinations: [any DiagnosticsTransport], symbolicator: Symbolicator,
                      builder: PayloadBuilder, memo: RedactionMemo) -> Bool {
        let uploading = directory.uploadingFolder + "/" + name
        guard rename(directory.pendingFolder + "/" + name, uploading) == 0 else { return true }   // another process took it
        let lock = open(uploading, O_RDONLY | O_CLOEXEC)
        if lock >= 0 { flock(lock, LOCK_EX) }
        defer { if lock >= 0 { close(lock) } }

        let record: CrashRecord
        do {
            record = try CrashRecord.load(contentsOf: URL(fileURLWithPath: uploading))
        } catch {
            quarantine(name, reason: "unreadable record: \(error)")
            return true
        }
        let report = symbolicator.symbolicate(record)
        var payload = builder.payload(record: record, report: report)
        PayloadLimits.apply(&payload)   // first: no time spent redacting what is cut anyway
        memo.redactor.apply(to: &payload, redact: memo.redact)
        PayloadLimits.apply(&payload)   // again: a replacement can be longer than what it replaced
        let findings = memo.findings(in: payload)
        if !findings.isEmpty {
            quarantine(name, reason: "redaction check failed, not sent: " + findings.prefix(5).map { "\($0)" }.joined(separator: "; "))
            return true
        }

        let sentFile = uploading + ".sent"   // destinations that already have it (several transports)
        var sent = Set(((try? String(contentsOfFile: sentFile, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init))
        for destination in destinations where !sent.contains(destination.name) {
            switch deliver(&payload, id: record.id, to: destination) {
            case .delivered:
                sent.insert(destination.name)
                try? Data((sent.sorted().joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: sentFile))
            case .quarantine(let reason):
                quarantine(name, reason: "\(destination.name): \(reason)")
                unlink(sentFile)
                return true
            case .keep(let stopPass):
                rename(uploading, directory.pendingFolder + "/" + name)
                if FileManager.default.fileExists(atPath: sentFile) { rename(sentFile, directory.pendingFolder + "/" + name + ".sent") }
                return !stopPass
            }
        }
        unlink(uploading)
        unlink(sentFile)
        unlink(directory.pendingFolder + "/" + name + ".sent")
        shared.withLock { $0.status.delivered += 1 }
        return true
    }

    private enum Verdict { case delivered, quarantine(String), keep(stopPass: Bool) }

    /// Seed 000's responses: 201 → done; 400 → quarantine; 413 → shrink once, then quarantine;
    /// 401/403 → keep, configuration error; 5xx / time-out / refused → backoff, bounded tries.
    private func deliver(_ payload: inout DiagnosticsPayload, id: String, to destination: any DiagnosticsTransport) -> Verdict {
        var shrunk = false
        while true {
            let body: Data
            do {
                guard let fitting = try PayloadLimits.body(for: &payload) else { return .quarantine("payload over 5 MB even when shrunk") }
                body = fitting
            } catch {
                return .quarantine("cannot encode the payload: \(error)")
            }
            switch destination.deliver(DiagnosticsUpload(payload: payload, body: body, idempotencyKey: id)) {
            case .delivered:
                shared.withLock { $0.status.configurationError = nil }
                return .delivered
            case .rejected(let status, let message):
                return .quarantine("HTTP \(status): \(message)")
            case .tooLarge(let limit):
                guard !shrunk, let smaller = PayloadLimits.shrunk(payload) else {
                    return .quarantine("HTTP 413 (limit \(limit.map(String.init) ?? "?") bytes) even after shrinking")
                }
                payload = smaller
                shrunk = true
            case .unauthorized(let status, let message):
                let text = "\(destination.name) answered HTTP \(status) (\(message)): check the upload token and endpoint; reports are kept"
                let first = shared.withLock { shared -> Bool in
                    defer { shared.status.configurationError = text; shared.status.lastFailure = text }
                    return shared.status.configurationError != text
                }
                if first { CrashReporter.warn(text) }
                return .keep(stopPass: true)
            case .retryLater(let reason, let after):
                let attempts = shared.withLock { shared -> Int in
                    shared.attempts[id, default: 0] += 1
                    shared.status.lastFailure = "\(destination.name): \(reason)"
                    return shared.attempts[id]!
                }
                guard attempts < settings.maxAttemptsPerLaunch else { return .keep(stopPass: true) }
                let delay = after ?? backoff(attempt: attempts)
                guard delay <= settings.maxBackoff else { return .keep(stopPass: true) }
                sleep(for: delay)
            }
        }
    }

    private func backoff(attempt: Int) -> Duration {
        let base = settings.initialBackoff * (1 << min(attempt - 1, 20))
        let capped = min(base, settings.maxBackoff)
        return capped * Double.random(in: 0.5...1.5)
    }

    private func sleep(for duration: Duration) {
        let c = duration.components
        var request = timespec(tv_sec: Int(c.seconds), tv_nsec: Int(c.attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    private func quarantine(_ name: String, reason: String) {
        let id = String(name.dropLast(".crash".count))
        try? Data((reason + "\n").utf8).write(to: URL(fileURLWithPath: directory.quarantineFolder + "/" + id + ".reason"))
        rename(directory.uploadingFolder + "/" + name, directory.quarantineFolder + "/" + name)
        shared.withLock { $0.status.quarantined += 1 }
        CrashReporter.warn("report \(id) quarantined: \(reason)")
    }
}

/// A counting semaphore with a deadline, on a pthread condition (no Dispatch in the pipeline's loop).
final class Semaphore: @unchecked Sendable {
    // Heap-allocated: pthread objects must not move, and a Swift property's address is not stable.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var count = 0

    init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func post() {
        pthread_mutex_lock(mutex)
        count += 1
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// True when posted; false when `deadline` (nil: none) passed first.
    func wait(until deadline: ContinuousClock.Instant?) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while count == 0 {
            guard let deadline else {
                pthread_cond_wait(condition, mutex)
                continue
            }
            let left = ContinuousClock.now.duration(to: deadline)
            if left <= .zero { return false }
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let c = left.components
            var nanoseconds = Int(now.tv_nsec) + Int(c.attoseconds / 1_000_000_000)
            let seconds = Int(now.tv_sec) + Int(c.seconds) + nanoseconds / 1_000_000_000
            nanoseconds %= 1_000_000_000
            var until = timespec(tv_sec: seconds, tv_nsec: nanoseconds)
            _ = pthread_cond_timedwait(condition, mutex, &until)
        }
        count -= 1
        return true
    }
}
