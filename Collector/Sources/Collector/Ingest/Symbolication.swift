// Symbolication on arrival: a report sent raw (a stripped binary, its debug info kept apart) gets
// function, file and line from symbol store folders or debuginfod, and moves to the issue its
// function names sign. The upload is answered first: its raw reports are stored as sent, then a
// worker finishes them (a bounded queue of uploads, a cap on the build-ids one token may have
// looked up per hour) and regroups them, so a slow or stalling debuginfod never holds an answer.
// Reports marked symbolicated are never touched, and neither is a frame that already has a file.
// Lookups go through the root package's CrashSymbolication (libdw) on one serial queue: libdw's
// handles are not thread-safe, and a debuginfod download must not block Swift concurrency's few
// threads.
import CrashReportModel
import CrashSymbolication
import Dispatch
import Foundation
import Logging
import Synchronization

public final class ArrivalSymbolication: @unchecked Sendable {
    /// What symbolication did to one payload, for the log.
    public struct Outcome: Sendable, Equatable {
        /// crash_reports entries that had raw frames.
        public var reportsTried = 0
        /// Entries whose in-app frames all have a function now.
        public var reportsCompleted = 0
        public var framesResolved = 0
        /// Raw frames left raw: no debug file for their build-id, or past their token's cap.
        public var framesWithoutDebugFile = 0
        public var framesOverCap = 0
        /// "CrashFixture (build-id 1a2b…)": modules with raw frames and no debug file anywhere.
        public var missing: [String] = []
        public var duration: Duration = .zero
        /// Stored reports rewritten (some frame resolved), and of those moved to another issue.
        public var improved = 0
        public var regrouped = 0
        /// Distinct build-ids left raw because their token had used its hour's lookups.
        public var buildIDsOverCap = 0

        public init() {}

        /// "1/1 raw reports completed, 2 frames resolved in 3 ms; no debug file for …": the log's.
        var summary: String {
            "\(reportsCompleted)/\(reportsTried) raw reports completed, \(framesResolved) frames resolved in \(duration)"
                + (regrouped > 0 ? ", \(regrouped) moved to another issue" : "")
                + (missing.isEmpty ? "" : "; no debug file for \(missing.joined(separator: ", "))")
                + (buildIDsOverCap > 0 ? "; \(buildIDsOverCap) build-ids left raw (this token's lookups for the hour are used up)" : "")
        }
    }

    /// Bounds of the work after the answer.
    public struct Limits: Sendable {
        /// Uploads waiting for the worker; past it an upload's raw reports stay raw (logged;
        /// `crash-collector resymbolicate` finishes them).
        public var queuedUploads = 256
        /// Distinct build-ids one ingest token's reports may have looked up in an hour (each may
        /// cost two debuginfod queries); frames of the others stay raw.
        public var buildIDsPerTokenPerHour = 64

        public init() {}
    }

    public let symbolDirectories: [String]
    public let usesDebuginfod: Bool
    public let limits: Limits
    private let queue = DispatchQueue(label: "crash-collector.symbolication")
    /// Touched only on `queue`.
    private let cache: SymbolCache

    private struct Job: Sendable {
        var diagnosticsID: String
        var token: String
        var store: any Store
        var logger: Logger?
    }

    private struct WorkState {
        /// Jobs queued or running (and a start's pass over what a restart left raw).
        var unfinished = 0
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        /// Per token: the hour's window and the build-ids looked up in it.
        var windows: [String: (start: ContinuousClock.Instant, buildIDs: Set<String>)] = [:]
    }

    private let state = Mutex(WorkState())
    /// Where the worker's frame lookups are counted (the collector's /metrics), once a server runs.
    private let metrics = Mutex<CollectorMetrics?>(nil)
    private let beforeLookup: (@Sendable () -> Void)?
    private let jobs: AsyncStream<Job>.Continuation

    /// `symbolDirectories`: flat debug files (`NAME`, `NAME.debug`) and `.build-id/xx/rest.debug`
    /// trees. `useDebuginfod`: also ask the servers in DEBUGINFOD_URLS (elfutils' client, its
    /// cache in DEBUGINFOD_CACHE_PATH). Paths recorded on the crashed host are never opened here.
    /// `beforeLookup`: called on the lookup queue before each report is finished (tests hold the
    /// worker with it, as a stalled debuginfod would).
    public init(symbolDirectories: [String], useDebuginfod: Bool, capacity: Int = 32, limits: Limits = Limits(),
                beforeLookup: (@Sendable () -> Void)? = nil) {
        self.symbolDirectories = symbolDirectories
        usesDebuginfod = useDebuginfod
        self.limits = limits
        self.beforeLookup = beforeLookup
        cache = SymbolCache(
            locator: DebugFileLocator(options: .init(debugDirectories: symbolDirectories, useSystemDebugDirectory: false,
                                                     useDebuginfod: useDebuginfod, useRecordedPath: false)),
            capacity: capacity)
        let (stream, continuation) = AsyncStream.makeStream(of: Job.self, bufferingPolicy: .bufferingOldest(max(0, limits.queuedUploads)))
        jobs = continuation
        // One worker: lookups are serial anyway (one libdw cache), and uploads are answered
        // without it. Weak: the stream ends with this object (deinit finishes it).
        Task.detached { [weak self] in
            for await job in stream {
                guard let self else { return }
                await self.run(job)
            }
        }
    }

    deinit {
        jobs.finish()
    }

    // MARK: - After the answer

    /// Queues an upload just stored (by the diagnostics id its answer carries) whose raw reports
    /// the worker will finish and regroup. False when the queue is full: they stay raw.
    func enqueue(diagnosticsID: String, token: String, store: any Store, logger: Logger?) -> Bool {
        state.withLock { $0.unfinished += 1 }
        if case .enqueued = jobs.yield(Job(diagnosticsID: diagnosticsID, token: token, store: store, logger: logger)) {
            return true
        }
        finishedOne()
        return false
    }

    /// Returns once no upload is queued or being symbolicated (tests; a graceful shutdown).
    public func waitUntilIdle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                guard state.unfinished > 0 else { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    /// Uploads queued or being symbolicated now.
    public var unfinishedUploads: Int { state.withLock { $0.unfinished } }

    /// Counts the worker's frame lookups into `metrics` from now on.
    func report(to metrics: CollectorMetrics) {
        self.metrics.withLock { $0 = metrics }
    }

    private func finishedOne() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.unfinished -= 1
            guard state.unfinished == 0 else { return [] }
            defer { state.idleWaiters = [] }
            return state.idleWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func run(_ job: Job) async {
        defer { finishedOne() }
        do {
            var outcome = Outcome()
            let start = ContinuousClock.now
            var bundleID = ""
            var overCap = Set<String>()
            for raw in try await job.store.rawReports(diagnosticsID: job.diagnosticsID) {
                bundleID = raw.bundleID
                try await finishStored(raw, capKey: job.token, store: job.store, outcome: &outcome, overCap: &overCap)
            }
            outcome.buildIDsOverCap = overCap.count
            outcome.duration = ContinuousClock.now - start
            if outcome.reportsTried > 0 {
                // A missing debug file is no error: the report stays as sent, and said so here.
                job.logger?.info("symbolication: \(outcome.summary) (upload \(job.diagnosticsID), \(bundleID))")
            }
        } catch {
            job.logger?.error("symbolication: upload \(job.diagnosticsID) left raw: \(error)")
        }
    }

    /// The key a start's pass is capped under (no ingest token is empty).
    static let startPassCapKey = ""

    /// A collector's start: raw reports received in the last `hours` hours are finished in the
    /// background (those a restart left queued among them), on the worker's lookup queue and under
    /// the same hourly cap of build-ids as one token (the rest stay raw for `resymbolicate`).
    public func finishRecentRaw(_ store: any Store, hours: Int = 24, logger: Logger?) {
        state.withLock { $0.unfinished += 1 }
        Task.detached {
            defer { self.finishedOne() }
            do {
                let result = try await self.resymbolicate(store, receivedSince: Date().addingTimeInterval(-Double(hours) * 3600),
                                                          capKey: Self.startPassCapKey)
                if result.improved > 0 {
                    logger?.info("symbolication at start: \(result.examined) raw reports of the last \(hours) h, \(result.improved) with frames resolved, \(result.completed) complete, \(result.regrouped) moved to another issue")
                }
            } catch {
                logger?.error("symbolication at start: \(error)")
            }
        }
    }

    /// The build-ids among `ids` this token may have looked up now (its hour's window).
    private func admitted(_ ids: [String], token: String) -> Set<String> {
        let now = ContinuousClock.now
        return state.withLock { state in
            var window = state.windows[token] ?? (now, [])
            if now - window.start >= .seconds(3600) { window = (now, []) }
            var allowed = Set<String>()
            for id in ids {
                if window.buildIDs.contains(id) {
                    allowed.insert(id)
                } else if window.buildIDs.count < limits.buildIDsPerTokenPerHour {
                    window.buildIDs.insert(id)
                    allowed.insert(id)
                }
            }
            state.windows[token] = window
            return allowed
        }
    }

    /// One stored raw report finished with what the symbols know, replaced and regrouped when it
    /// changed — unless another pass rewrote it since it was read. `capKey`: whose hourly
    /// build-ids it spends (an ingest token, or the start's pass); nil for no cap.
    private func finishStored(_ raw: RawReport, capKey: String?, store: any Store, outcome total: inout Outcome,
                              overCap: inout Set<String>) async throws {
        guard let entry = try? JSONDecoder().decode(DiagnosticsPayload.CrashReportEntry.self, from: Data(raw.reportJSON.utf8)),
              Self.needsSymbolication(entry) else { return }
        var admittedIDs: Set<String>?
        if let capKey {
            var ids: [String] = []
            for thread in entry.thread_info { for frame in thread.frames where Self.isRaw(frame) { ids.append(BuildID(hex: frame.build_id ?? "").hex) } }
            var seen = Set<String>()
            ids = ids.filter { seen.insert($0).inserted }
            let admitted = admitted(ids, token: capKey)
            overCap.formUnion(ids.filter { !admitted.contains($0) })
            admittedIDs = admitted
        }
        let allowed = admittedIDs
        let (finished, outcome) = await withCheckedContinuation { continuation in
            queue.async {
                self.beforeLookup?()
                var outcome = Outcome()
                var missing: [String: String] = [:]
                let finished = self.finish(entry, outcome: &outcome, missing: &missing, allowed: allowed)
                outcome.missing = missing.map { "\($1) (build-id \($0))" }.sorted()
                continuation.resume(returning: (finished, outcome))
            }
        }
        total.reportsTried += outcome.reportsTried
        total.reportsCompleted += outcome.reportsCompleted
        total.framesResolved += outcome.framesResolved
        if let metrics = metrics.withLock({ $0 }) {
            metrics.symbolicated(.resolved, frames: outcome.framesResolved)
            metrics.symbolicated(.noDebugFile, frames: outcome.framesWithoutDebugFile)
            metrics.symbolicated(.overCap, frames: outcome.framesOverCap)
        }
        total.missing = Array(Set(total.missing).union(outcome.missing)).sorted()
        guard finished != entry else { return }
        let oldKey = CrashGrouping.issueKey(for: entry), newKey = CrashGrouping.issueKey(for: finished)
        guard try await store.replaceReport(.init(
            id: raw.id, bundleID: raw.bundleID, kind: finished.kind,
            reportJSON: String(decoding: try JSONEncoder.api.encode(finished), as: UTF8.self),
            symbolicated: finished.symbolicated, issue: newKey, expectedJSON: raw.reportJSON)) else {
            total.reportsCompleted -= outcome.reportsCompleted   // another pass got there first
            return
        }
        total.improved += 1
        if oldKey?.signature != newKey?.signature { total.regrouped += 1 }
    }

    /// The payload with its raw reports symbolicated; the payload itself (no queue hop) when no
    /// report needs it.
    public func symbolicate(_ payload: DiagnosticsPayload) async -> (DiagnosticsPayload, Outcome) {
        guard payload.crash_reports.contains(where: Self.needsSymbolication) else { return (payload, Outcome()) }
        return await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.symbolicateOnQueue(payload)) }
        }
    }

    /// An entry the host could not symbolicate, with at least one frame that has a build-id and a
    /// module offset but no file.
    public static func needsSymbolication(_ entry: DiagnosticsPayload.CrashReportEntry) -> Bool {
        !entry.symbolicated && entry.thread_info.contains { $0.frames.contains(where: isRaw) }
    }

    static let runtimeFailure = "Swift runtime failure: "

    static func isRaw(_ frame: DiagnosticsPayload.Frame) -> Bool {
        frame.file == nil && !(frame.build_id ?? "").isEmpty && frame.module_offset.flatMap(Address.init(hex:)) != nil
    }

    private func symbolicateOnQueue(_ payload: DiagnosticsPayload) -> (DiagnosticsPayload, Outcome) {
        let start = ContinuousClock.now
        var payload = payload
        var outcome = Outcome()
        var missing: [String: String] = [:]
        for index in payload.crash_reports.indices where Self.needsSymbolication(payload.crash_reports[index]) {
            payload.crash_reports[index] = finish(payload.crash_reports[index], outcome: &outcome, missing: &missing)
        }
        outcome.missing = missing.map { "\($1) (build-id \($0))" }.sorted()
        outcome.duration = ContinuousClock.now - start
        return (payload, outcome)
    }

    /// One raw entry with what the symbols know filled in.
    private func finish(_ entry: DiagnosticsPayload.CrashReportEntry, outcome: inout Outcome,
                        missing: inout [String: String], allowed: Set<String>? = nil) -> DiagnosticsPayload.CrashReportEntry {
        outcome.reportsTried += 1
        var entry = entry
        let before = entry.thread_info
        let crashedBefore = (entry.thread_info.first(where: \.crashed) ?? entry.thread_info.first)?.frames ?? []
        for thread in entry.thread_info.indices {
            var frames: [DiagnosticsPayload.Frame] = []
            for frame in entry.thread_info[thread].frames {
                let resolved = resolve(frame, missing: &missing, allowed: allowed, outcome: &outcome)
                if resolved.count > 1 || resolved.first?.file != nil || resolved.first?.function != frame.function {
                    outcome.framesResolved += 1
                }
                frames += resolved
            }
            // Inlined frames add lines; the schema's (and seed 000's) limit stays.
            entry.thread_info[thread].frames = Array(frames.prefix(DiagnosticsPayload.Limits.stackFrames))
        }
        // stack_trace is the crashed thread's frames as text when the runtime wrote it: rewrite
        // it only then (another sender's text is theirs).
        if entry.stack_trace == crashedBefore.map(\.stackTraceLine) {
            let crashed = entry.thread_info.first(where: \.crashed) ?? entry.thread_info.first
            entry.stack_trace = (crashed?.frames ?? []).map(\.stackTraceLine)
        }
        // An -O trap's reason is known only now: it is the innermost inlined frame at the trap
        // address ("Swift runtime failure: Index out of range"), which the host would have used
        // as the headline had it had the symbols.
        let crashedFrames = CrashGrouping.crashedFrames(of: entry)
        if let top = crashedFrames.first?.index,
           let failure = crashedFrames.first(where: { $0.index == top && ($0.function ?? "").hasPrefix(Self.runtimeFailure) })?.function,
           !entry.exception_message.hasPrefix(Self.runtimeFailure) {
            entry.exception_message = failure
        }
        let appFrames = crashedFrames.filter { CrashGrouping.isInApp($0, images: entry.images) }
        if entry.thread_info != before, !appFrames.isEmpty, appFrames.allSatisfy({ $0.function != nil }) {
            entry.symbolicated = true
            outcome.reportsCompleted += 1
        }
        return entry
    }

    // MARK: - Stored reports

    /// What `resymbolicate` did.
    public struct Resymbolication: Sendable, Equatable {
        /// Stored reports marked symbolicated false.
        public var examined = 0
        /// Reports that got at least one frame resolved (and were rewritten).
        public var improved = 0
        /// Of those, reports whose in-app frames all have a function now.
        public var completed = 0
        /// Reports that moved to another issue (their signature changed).
        public var regrouped = 0
        public var missing: Set<String> = []
    }

    /// Symbolicates the reports stored raw with the symbols known now (symbols uploaded after
    /// their crashes), rewrites those that changed and moves them to the issue of their new
    /// signature; an issue left empty goes. The upload's payload copy is left as it arrived.
    public func resymbolicate(_ store: any Store, batch: Int = 200, receivedSince: Date? = nil,
                              capKey: String? = nil) async throws -> Resymbolication {
        var result = Resymbolication()
        var after: Int64 = 0
        while true {
            let page = if let receivedSince {
                try await store.rawReports(after: after, limit: batch, receivedSince: receivedSince)
            } else {
                try await store.rawReports(after: after, limit: batch)
            }
            guard let last = page.last else { break }
            after = last.id
            for raw in page {
                result.examined += 1
                var outcome = Outcome()
                var overCap = Set<String>()
                try await finishStored(raw, capKey: capKey, store: store, outcome: &outcome, overCap: &overCap)
                result.missing.formUnion(outcome.missing)
                result.improved += outcome.improved
                result.completed += outcome.reportsCompleted
                result.regrouped += outcome.regrouped
            }
        }
        return result
    }

    /// The frame's source locations, innermost first, each a frame with the original index,
    /// address, module, offset and build-id; the frame itself when nothing resolves it.
    private func resolve(_ frame: DiagnosticsPayload.Frame, missing: inout [String: String], allowed: Set<String>?,
                         outcome: inout Outcome) -> [DiagnosticsPayload.Frame] {
        guard Self.isRaw(frame), let buildID = frame.build_id, let offset = frame.module_offset.flatMap(Address.init(hex:)) else {
            return [frame]
        }
        guard allowed?.contains(BuildID(hex: buildID).hex) ?? true else {
            outcome.framesOverCap += 1
            return [frame]
        }
        switch cache.lookup(buildID: BuildID(hex: buildID), path: frame.module ?? "", fileAddress: offset.value) {
        case .failure:
            missing[BuildID(hex: buildID).hex] = frame.module ?? "?"
            outcome.framesWithoutDebugFile += 1
            return [frame]
        case .success(let locations):
            guard !locations.isEmpty else { return [frame] }
            return locations.map { location in
                var resolved = frame
                resolved.function = Demangler.demangle(location.symbol)
                resolved.file = location.file
                resolved.line = location.line.flatMap { $0 > 0 ? $0 : nil }
                resolved.column = location.column
                resolved.inlined = location.isInlined
                return resolved
            }
        }
    }
}
