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
    /// When this launch started (its session beacon's started_at).
    let startedAt = Date()
    /// This launch's beacon was spooled (a later pass must not spool it again once sent).
    let beaconSpooled = Atomic<Bool>(false)
    /// Spooling and withdrawing this launch's beacon, one at a time: a beacon written as
    /// collection is turned off is either withdrawn or sees the marker and is not written.
    let beaconLock = Mutex(())

    private struct Shared {
        var requested: UInt64 = 1   // the launch's own pass
        var completed: UInt64 = 0
        var force = false
        var status = CrashReporter.UploadStatus()
        var connected: URL?
        var connectedLoaded = false
        var attempts: [String: Int] = [:]
        var deleteRequested = false
        var warnedFallback = false
        var warnedEnvironment = false
        /// Destinations already said to be unreachable in this launch (said once, not per pass).
        var warnedDown: Set<String> = []
    }

    private let shared = Mutex(Shared())
    private let passLock = Mutex(())
    private let signal = Semaphore()

    /// The previous launch's crash record, sent first.
    let priorityRecord: String?
    private let stableAt: ContinuousClock.Instant
    private let markedStable = Atomic<Bool>(false)

    init(directory: ReportsDirectory, settings: CrashReporter.Upload, app: AppMetadata, sessionID: String, priorityRecord: String? = nil) {
        self.directory = directory
        self.settings = settings
        self.app = app
        self.sessionID = sessionID
        self.priorityRecord = priorityRecord
        stableAt = ContinuousClock.now + min(settings.crashOnLaunchWindow, .seconds(86_400))
    }

    /// Marks this launch as past the crash-on-launch window once it is, whatever the pipeline is
    /// busy with (a long pass must not make a later crash look like one at launch).
    private func checkStable() {
        guard !markedStable.load(ordering: .relaxed), ContinuousClock.now >= stableAt else { return }
        markedStable.store(true, ordering: .relaxed)
        LaunchFile.markStable(directory, sessionID: sessionID)
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
        // Kept for later launches only when the app asked for it (seed 002 §8: an app-level decision).
        guard settings.persistsConnectURL else { return }
        ReportsDirectory.writeSmallFile(directory.path + "/connect-endpoint", url.absoluteString + "\n")
    }

    /// The remembered connect URL endpoint, when the app opted in, and only if its host is still
    /// one a connect URL may name (the file is checked like any state file: ours, no link).
    private func readConnectedEndpoint() -> URL? {
        guard settings.persistsConnectURL,
              let text = ReportsDirectory.readSmallFile(directory.path + "/connect-endpoint"),
              let url = URL(string: text.trimmingCharacters(in: .whitespacesAndNewlines)),
              url.scheme == "http", let host = url.host else { return nil }
        guard ConnectURL.isAllowed(host, settings.connectURLHosts) else {
            CrashReporter.warn("ignoring the remembered connect URL endpoint \(url.absoluteString): its host is not allowed (upload.connectURLHosts)")
            return nil
        }
        return url
    }

    /// Seed 003 §6: configuration, environment, connect URL, then localhost:9090.
    func resolveEndpoint() -> CrashReporter.ResolvedEndpoint {
        if let url = settings.endpoint { return .init(url: url, source: .configuration) }
        if let text = getenv("CRASH_REPORTING_ENDPOINT").map({ String(cString: $0) }), !text.isEmpty, let url = URL(string: text) {
            if let problem = CrashReporter.Upload.endpointProblem(url, allowsInsecureHTTP: settings.allowsInsecureHTTP) {
                let first = shared.withLock { shared -> Bool in
                    defer { shared.warnedEnvironment = true }
                    return !shared.warnedEnvironment
                }
                if first { CrashReporter.warn("CRASH_REPORTING_ENDPOINT ignored: \(problem)") }
            } else {
                return .init(url: url, source: .environment)
            }
        }
        // Read on first use, not in `start`: Foundation's file reading costs more than start's budget.
        let connected = shared.withLock { shared -> URL? in
            if !shared.connectedLoaded {
                shared.connected = readConnectedEndpoint()
                shared.connectedLoaded = true
            }
            return shared.connected
        }
        if let url = connected { return .init(url: url, source: .connectURL) }
        return .init(url: URL(string: "http://localhost:9090")!, source: .fallback)
    }

    fileprivate func transports() -> [any DiagnosticsTransport] {
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
        var transport = HTTPTransport(endpoint: endpoint.url, token: token, timeout: settings.requestTimeout)
        if let client = settings.httpClient { transport.client = client }
        return [transport]
    }

    // MARK: The loop

    /// Lets the app's start-up go first (`firstPassDelay`; tools/bench-start): the launch's pass
    /// (recovery, payloads, beacons) costs a few milliseconds of CPU that a
    /// server starting on two cores otherwise pays in its time to the first answer. A crashed last
    /// launch goes at once (this launch may be waiting for its upload: crash on launch), and a
    /// wake (`sendUnsentReports`, a new record) ends the wait early.
    func waitForAppStartup() {
        guard priorityRecord == nil && settings.firstPassDelay > .zero else { return }
        _ = signal.wait(until: ContinuousClock.now + min(settings.firstPassDelay, .seconds(60)))
    }

    /// Runs forever on the pipeline's thread: the launch's pass first, then one per trigger.
    func run(recovery: SessionRecovery) {
        // Before the recovery: it writes abnormal-termination records, which must not pass for
        // the crash records that are the evidence here.
        judgeAttempts(crashEvidence: true)
        recovery.run()
        let started = ContinuousClock.now
        let interval = settings.periodicInterval.map { min(max($0, .milliseconds(10)), .seconds(366 * 86_400)) }
        var periodicDue = interval.map { started + $0 }
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
                checkStable()
                let due = [markedStable.load(ordering: .relaxed) ? nil : stableAt, periodicDue].compactMap { $0 }.min()
                if signal.wait(until: due) { break }
                checkStable()
                if let due = periodicDue, ContinuousClock.now >= due, let interval {
                    periodicDue = due + interval
                    // A checkpoint only when something happened since the last one, and only when
                    // it can be sent (kept snapshots would push crashes out of the store).
                    let mark = CrashReporter.breadcrumbMark()
                    let sending = settings.isEnabled && access(directory.path + "/collection-disabled", F_OK) != 0
                    if mark != snapshotMark && sending {
                        snapshotMark = mark
                        try? CrashReporter.writeSnapshot(trigger: "periodic")
                    }
                    shared.withLock { $0.requested += 1 }
                    break
                }
            }
        }
    }

    /// Deletes what waits to be sent (Crashlytics' deleteUnsentReports), without waiting for a
    /// pass in progress: pending records go now; one being sent is deleted when its attempt ends,
    /// and records a dead process left in uploading/ at the next pass.
    func deletePending() {
        shared.withLock { $0.deleteRequested = true }
        for name in directory.records(in: directory.pendingFolder) {
            let path = directory.pendingFolder + "/" + name
            for sidecar in [""] + Self.sidecars { unlink(path + sidecar) }
        }
        withdrawBeacons(all: true)
        wake()
    }

    // MARK: One pass

    private func pass(force: Bool) {
        ReportsDirectory.makeFolder(directory.uploadingFolder)
        ReportsDirectory.makeFolder(directory.quarantineFolder)
        recoverInterrupted()
        shared.withLock { $0.deleteRequested = false }
        enforceBounds()
        guard settings.isEnabled else { return }
        guard force || access(directory.path + "/collection-disabled", F_OK) != 0 else { return }
        // Spooled first: a pass that stops at an unreachable collector must not lose it.
        let beacons = settings.transports == nil && settings.sendsSessionBeacons
        if beacons { spoolBeacon(evenIfCollectionOff: force) }
        // Never this process's own crash record: it appears while this process is dying, and a
        // thread that did not stop for the crash (one that answered the handler's signal late)
        // must not start an upload the process's end cuts short. The crash-sender or the next
        // launch sends it.
        var names = directory.recordsOldestFirst(in: directory.pendingFolder).filter { $0 != sessionID + ".crash" }
        let logs = settings.transports == nil && hasAPILogsToSend()
        let beaconsDue = beacons && beaconsAreDue(alongWithOthers: !names.isEmpty || logs, forced: force)
        // Nothing to send: no redactor (ICU regular expressions), host metadata (ICU time zones),
        // symbolicator or HTTP client gets built. Measured: a launch's background work then adds
        // ~0.2 MiB of private memory instead of ~4.4 MiB (tools/bench-context).
        guard !names.isEmpty || logs || beaconsDue else { return }
        let tools = SendingTools(self, warnUnsymbolicated: !names.isEmpty)
        let memo = tools.memo
        // Crash on launch: the crash that may repeat goes first, before any backlog.
        if let first = priorityRecord, let index = names.firstIndex(of: first) { names.insert(names.remove(at: index), at: 0) }
        var down: Set<String> = []
        for name in names {
            checkStable()
            let builder = PayloadBuilder(app: app, host: tools.host, droppedReports: tools.dropped)
            guard send(name, destinations: tools.destinations, symbolicator: tools.symbolicator, builder: builder, memo: memo,
                       down: &down) else { return }
        }
        // Seed 003's log server and the session count are the collector's.
        if settings.transports == nil {
            guard sendAPILogs(memo: memo) else { return }
            if beaconsDue { sendBeacons(memo: memo) }
        }
    }

    /// What sending records needs, built only when there is something to send.
    private struct SendingTools {
        let destinations: [any DiagnosticsTransport]
        let symbolicator: Symbolicator
        let memo: RedactionMemo
        let host: HostMetadata
        let dropped: Int

        init(_ uploader: Uploader, warnUnsymbolicated: Bool) {
            destinations = uploader.transports()
            symbolicator = Symbolicator(locator: DebugFileLocator(options: .init(
                debugDirectories: uploader.settings.debugDirectories, useSystemDebugDirectory: true, useDebuginfod: false)))
            if warnUnsymbolicated, let reason = Symbolicator.unavailableReason {
                CrashReporter.warn("reports are sent unsymbolicated (each frame's build-id and offset, for the collector or crashtool): \(reason)")
            }
            dropped = LaunchFile.droppedCount(uploader.directory)
            memo = RedactionMemo(redactor: uploader.settings.redactor ?? .seed000,
                                 verifier: uploader.settings.verifiesRedaction ? uploader.settings.verifier ?? RedactionVerifier() : nil)
            host = HostMetadata.current(reportsDirectory: uploader.directory.path)
        }
    }

    /// Delivery at crash time (the crash-sender): this one record of pending/, now, one try per
    /// destination (the settings say 1). True when every destination has it; otherwise it is
    /// back in pending/ (or quarantined, with why) for the next launch.
    func sendOne(_ name: String) -> Bool {
        ReportsDirectory.makeFolder(directory.uploadingFolder)
        ReportsDirectory.makeFolder(directory.quarantineFolder)
        guard settings.isEnabled, access(directory.path + "/collection-disabled", F_OK) != 0 else { return false }
        let tools = SendingTools(self, warnUnsymbolicated: true)
        var down: Set<String> = []
        _ = send(name, destinations: tools.destinations, symbolicator: tools.symbolicator,
                 builder: PayloadBuilder(app: app, host: tools.host, droppedReports: tools.dropped), memo: tools.memo, down: &down)
        let delivered = shared.withLock { $0.status.delivered } > 0
        // The crashed session's beacon too (spooled at its start): on a host that never launches
        // again, the collector's crash-free rate would otherwise not know the session existed.
        if delivered && settings.transports == nil && settings.sendsSessionBeacons { sendBeacons(memo: tools.memo) }
        return delivered
    }

    /// Records left in uploading/ by a process that died mid-upload go back to pending/. One
    /// whose lock is held belongs to a live process sharing the directory.
    private func recoverInterrupted() {
        let deleting = shared.withLock { $0.deleteRequested }
        for name in directory.records(in: directory.uploadingFolder) {
            let path = directory.uploadingFolder + "/" + name
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }
            let target = directory.pendingFolder + "/" + name
            if !deleting { Self.judgeAttempt(path, directory: directory, crashEvidence: false) }
            for sidecar in Self.sidecars where access(path + sidecar, F_OK) == 0 {
                if deleting { unlink(path + sidecar) } else { rename(path + sidecar, target + sidecar) }
            }
            if deleting { unlink(path) } else { rename(path, target) }
        }
    }

    /// At most `maxPendingReports` records and `maxPendingBytes` bytes wait. Diagnostics snapshots
    /// go first, then the oldest records; quarantine/ keeps at most as many as pending/ may.
    private func enforceBounds() {
        let all = directory.recordEntries(in: directory.pendingFolder)
        var entries = all.filter(\.isSnapshot) + all.filter { !$0.isSnapshot }
        var bytes = entries.reduce(0) { $0 + $1.size }
        var dropped = 0
        while !entries.isEmpty && (entries.count > settings.maxPendingReports || bytes > settings.maxPendingBytes) {
            let entry = entries.removeFirst()
            let path = directory.pendingFolder + "/" + entry.name
            if unlink(path) == 0 { dropped += 1 }
            for sidecar in Self.sidecars { unlink(path + sidecar) }
            bytes -= entry.size
        }
        if dropped > 0 {
            let total = LaunchFile.addDropped(directory, dropped)
            shared.withLock { $0.status.dropped = total }
            CrashReporter.warn("the reports store was full: \(dropped) record(s) deleted, snapshots and oldest first (\(total) in all)")
        }
        // Quarantine is bounded the same way, and says so: nothing is deleted silently.
        let quarantined = directory.recordsOldestFirst(in: directory.quarantineFolder)
        var droppedQuarantined = 0
        for name in quarantined.prefix(max(0, quarantined.count - settings.maxPendingReports)) {
            if unlink(directory.quarantineFolder + "/" + name) == 0 { droppedQuarantined += 1 }
            unlink(directory.quarantineFolder + "/" + String(name.dropLast(".crash".count)) + ".reason")
        }
        if droppedQuarantined > 0 {
            let total = LaunchFile.addDropped(directory, droppedQuarantined)
            shared.withLock { $0.status.dropped = total }
            CrashReporter.warn("quarantine/ was full: \(droppedQuarantined) quarantined record(s) deleted, oldest first (\(total) records deleted in all)")
        }
    }

    /// Sends one record to every destination. False when the pass should stop (a destination is
    /// down or misconfigured: the records after this one would fail the same way).
    private func send(_ name: String, destinations: [any DiagnosticsTransport], symbolicator: Symbolicator,
                      builder: PayloadBuilder, memo: RedactionMemo, down: inout Set<String>) -> Bool {
        let pending = directory.pendingFolder + "/" + name
        let uploading = directory.uploadingFolder + "/" + name
        // Lock, then move: another process's recovery never takes a file whose lock is held.
        let lock = open(pending, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard lock >= 0 else {
            if errno == ELOOP { refuse(name, reason: "a symbolic link in pending/, not a record this program wrote: not sent") }
            return true
        }
        defer { close(lock) }
        guard ReportsDirectory.isOurs(lock) else {
            var info = stat()
            fstat(lock, &info)
            refuse(name, reason: "owned by uid \(info.st_uid), not by this process's user (uid \(geteuid())): a record this "
                   + "program did not write is never sent under its token")
            return true
        }
        guard flock(lock, LOCK_EX | LOCK_NB) == 0, rename(pending, uploading) == 0 else { return true }   // another process has it
        for sidecar in Self.sidecars where access(pending + sidecar, F_OK) == 0 { rename(pending + sidecar, uploading + sidecar) }
        if Self.interruptions(uploading) >= 3 {
            quarantine(name, reason: "the upload was interrupted 3 times (the process died while sending it, with the request "
                       + "sent and unanswered, or crashed while preparing it); not tried again (crashtool requeue puts it back)")
            return true
        }
        // The attempt mark (see `judgeAttempt`): removed on every way out of this function, so
        // only a process that died inside it leaves one.
        Self.markAttempt(uploading, session: sessionID, phase: .preparing)
        defer { unlink(uploading + ".attempt") }

        let record: CrashRecord
        do {
            record = try CrashRecord.load(contentsOf: URL(fileURLWithPath: uploading))
        } catch {
            quarantine(name, reason: "unreadable record: \(error)")
            return true
        }
        let report = symbolicator.symbolicate(record)
        var payload = builder.payload(record: record, report: report)
        do {
            try PayloadStages.run(PayloadStages.standard(memo: memo), on: &payload)   // Pipeline/PayloadStages.swift
        } catch {
            quarantine(name, reason: error.reason)
            return true
        }

        // Each destination has its own state: which already have the record (a file beside it),
        // its tries this launch, and whether it is down for the rest of this pass.
        let sentFile = uploading + ".sent"
        var sent = Set((ReportsDirectory.readSmallFile(sentFile) ?? "").split(separator: "\n").map(String.init))
        var waiting = false
        for destination in destinations where !sent.contains(destination.name) {
            let key = destination.name + "|" + name
            if down.contains(destination.name) || shared.withLock({ $0.attempts[key, default: 0] >= settings.maxAttemptsPerLaunch }) {
                waiting = true
                continue
            }
            switch deliver(&payload, id: record.id, key: key, to: destination, record: uploading, memo: memo) {
            case .delivered:
                sent.insert(destination.name)
                ReportsDirectory.writeSmallFile(sentFile, sent.sorted().joined(separator: "\n") + "\n")
            case .quarantine(let reason):
                quarantine(name, reason: "\(destination.name): \(reason)")
                return true
            case .keep(let destinationDown):
                if destinationDown { down.insert(destination.name) }
                waiting = true
            }
        }
        if waiting {
            if shared.withLock({ $0.deleteRequested }) {   // deleteUnsentReports() came during the attempt
                for sidecar in [""] + Self.sidecars where sidecar != ".attempt" { unlink(uploading + sidecar) }
                return true
            }
            rename(uploading, directory.pendingFolder + "/" + name)
            // Its sidecars go with it (the interruption count too); the attempt mark is removed on return.
            for sidecar in [".sent", ".interrupted"] where access(uploading + sidecar, F_OK) == 0 {
                rename(uploading + sidecar, directory.pendingFolder + "/" + name + sidecar)
            }
            return down.count < destinations.count   // the pass goes on while some destination is up
        }
        for sidecar in [""] + Self.sidecars where sidecar != ".attempt" { unlink(uploading + sidecar) }
        shared.withLock { $0.status.delivered += 1 }
        return true
    }

    /// keep(stopPass:) — true: the destination is down or misconfigured for the rest of this pass.
    private enum Verdict { case delivered, quarantine(String), keep(stopPass: Bool) }

    /// Seed 000's responses: 201 → done; 400 → quarantine; 413 → shrink once, then quarantine;
    /// 401/403 → keep, configuration error; 5xx / time-out / refused → backoff, bounded tries.
    private func deliver(_ payload: inout DiagnosticsPayload, id: String, key: String, to destination: any DiagnosticsTransport,
                         record: String, memo: RedactionMemo) -> Verdict {
        var shrunk = false
        while true {
            let body: Data
            do {
                guard let fitting = try PayloadLimits.body(for: &payload, gzipped: memo.gzipped) else {
                    return .quarantine("payload over 5 MB even when shrunk")
                }
                body = fitting
            } catch {
                return .quarantine("cannot encode the payload: \(error)")
            }
            // While the body is out and no answer is in, the mark says "sent": dying now counts.
            let session = sessionID
            let outcome = HTTPExchange.Attempt.withBodySent({ Self.markAttempt(record, session: session, phase: .sent) }) {
                destination.deliver(DiagnosticsUpload(payload: payload, body: body, idempotencyKey: id))
            }
            Self.markAttempt(record, session: sessionID, phase: .preparing)
            if case .unreachable = outcome {} else {
                unlink(record + ".interrupted")   // an answer came: this record does not kill the process
            }
            switch outcome {
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
                // The destination answered: this record may be the problem, so once its tries
                // are spent the pass goes on with the next one.
                let attempts = countAttempt(key, failure: "\(destination.name): \(reason)")
                guard attempts < settings.maxAttemptsPerLaunch else { return .keep(stopPass: false) }
                if let after, after > settings.maxBackoff { return .keep(stopPass: false) }   // it asked for more patience than we have
                sleep(for: after ?? backoff(attempt: attempts))
            case .unreachable(let reason):
                let attempts = countAttempt(key, failure: "\(destination.name): \(reason)")
                guard attempts < settings.maxAttemptsPerLaunch else {
                    noteDown(destination.name, reason: reason)
                    return .keep(stopPass: true)
                }
                sleep(for: backoff(attempt: attempts))
            }
        }
    }

    private func countAttempt(_ name: String, failure: String) -> Int {
        shared.withLock { shared -> Int in
            shared.attempts[name, default: 0] += 1
            shared.status.lastFailure = failure
            return shared.attempts[name]!
        }
    }

    /// Doubling from `initialBackoff`, ±50 % jitter, never above `maxBackoff` (in seconds as a
    /// Double: no overflow for any configured Duration).
    private func backoff(attempt: Int) -> Duration {
        let base = HTTPExchange.seconds(settings.initialBackoff) * pow(2, Double(min(attempt - 1, 30)))
        let jittered = base * Double.random(in: 0.5...1.5)
        return .milliseconds(Int(min(jittered, HTTPExchange.seconds(settings.maxBackoff)) * 1000))
    }

    /// A destination that cannot be reached says so once per launch, on stderr and in the status.
    private func noteDown(_ name: String, reason: String) {
        let waiting = directory.records(in: directory.pendingFolder).count + directory.records(in: directory.uploadingFolder).count
        let text = "\(name) is unreachable (\(reason)); \(waiting) report(s) kept for a later try"
        let first = shared.withLock { shared -> Bool in
            shared.status.unreachable = text
            return shared.warnedDown.insert(name).inserted
        }
        if first { CrashReporter.warn(text) }
    }

    /// The files that travel with a record: which destinations have it, its interruption count,
    /// and the mark of an attempt in progress.
    static let sidecars = [".sent", ".interrupted", ".attempt"]

    /// Interrupted attempts of a record (a file beside it counts them), so that a record that
    /// kills the process while being sent is not retried at every launch forever.
    static func interruptions(_ path: String) -> Int {
        ReportsDirectory.readSmallFile(path + ".interrupted").flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
    }

    enum AttemptPhase: String { case preparing, sent }

    /// `<record>.attempt` holds "<session id> <phase>" while this process works on the record:
    /// `preparing` (symbolicating, building, redacting, waiting between tries) or `sent` (the
    /// body went out over an established connection and no answer has come back yet).
    static func markAttempt(_ path: String, session: String, phase: AttemptPhase) {
        ReportsDirectory.writeSmallFile(path + ".attempt", "\(session) \(phase.rawValue)\n")
    }

    /// Judges the attempt marks that dead processes left in uploading/ (a record whose lock is
    /// held belongs to a live process).
    private func judgeAttempts(crashEvidence: Bool) {
        for name in directory.records(in: directory.uploadingFolder) {
            let path = directory.uploadingFolder + "/" + name
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }
            Self.judgeAttempt(path, directory: directory, crashEvidence: crashEvidence)
        }
    }

    /// Decides, at the next launch, whether a dead process's attempt counts as an interruption
    /// (Docs/Decisions/0012-delivery-never-lost-never-leaked.md). It counts when the process died with the
    /// request sent and unanswered (`sent`), or crashed while preparing the record (its session
    /// left a crash record). It never counts for a process that ended any other way while
    /// preparing or waiting (SIGTERM in a rolling restart, SIGKILL), nor for a destination that
    /// was never reached (refused, DNS, time-out before the body went out): the record is not
    /// what ended the process.
    /// `crashEvidence`: whether a record in pending/ named after the marking session proves that
    /// it crashed (true only before this launch's session recovery has written abnormal-termination
    /// records, which carry the session's name too).
    static func judgeAttempt(_ path: String, directory: ReportsDirectory, crashEvidence: Bool) {
        guard let mark = ReportsDirectory.readSmallFile(path + ".attempt") else { return }
        unlink(path + ".attempt")
        let fields = mark.split(whereSeparator: \.isWhitespace).map(String.init)
        guard fields.count == 2, let phase = AttemptPhase(rawValue: fields[1]) else { return }
        let crashed = crashEvidence && access(directory.pendingFolder + "/" + fields[0] + ".crash", F_OK) == 0
        guard phase == .sent || crashed else { return }
        ReportsDirectory.writeSmallFile(path + ".interrupted", "\(interruptions(path) + 1)\n")
    }

    private func sleep(for duration: Duration) {
        let c = duration.components
        var request = timespec(tv_sec: Int(c.seconds), tv_nsec: Int(c.attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    /// A file in pending/ that is not ours to send: moved to quarantine/ with why, untouched.
    private func refuse(_ name: String, reason: String) {
        let id = String(name.dropLast(".crash".count))
        rename(directory.pendingFolder + "/" + name, directory.quarantineFolder + "/" + name)
        ReportsDirectory.writeSmallFile(directory.quarantineFolder + "/" + id + ".reason", reason + "\n")
        shared.withLock { $0.status.quarantined += 1 }
        CrashReporter.warn("report \(id) refused: \(reason)")
    }

    private func quarantine(_ name: String, reason: String) {
        let id = String(name.dropLast(".crash".count))
        ReportsDirectory.writeSmallFile(directory.quarantineFolder + "/" + id + ".reason", reason + "\n")
        rename(directory.uploadingFolder + "/" + name, directory.quarantineFolder + "/" + name)
        for sidecar in Self.sidecars { unlink(directory.uploadingFolder + "/" + name + sidecar) }
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
            var left = ContinuousClock.now.duration(to: deadline)
            if left <= .zero { return false }
            left = min(left, .seconds(86_400))   // a "never" deadline: wake daily rather than overflow timespec
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
