// Symbolication on arrival: a report sent raw (a stripped binary, its debug info kept apart) gets
// function, file and line from symbol store folders or debuginfod before it is grouped, so its
// issue is signed by function names. Reports marked symbolicated are never touched, and neither is
// a frame that already has a file. Lookups go through the root package's CrashSymbolication (libdw)
// on one serial queue: libdw's handles are not thread-safe, and a debuginfod download must not
// block Swift concurrency's few threads.
import CrashReportModel
import CrashSymbolication
import Dispatch
import Foundation

public final class ArrivalSymbolication: @unchecked Sendable {
    /// What symbolication did to one payload, for the log.
    public struct Outcome: Sendable, Equatable {
        /// crash_reports entries that had raw frames.
        public var reportsTried = 0
        /// Entries whose in-app frames all have a function now.
        public var reportsCompleted = 0
        public var framesResolved = 0
        /// "CrashFixture (build-id 1a2b…)": modules with raw frames and no debug file anywhere.
        public var missing: [String] = []
        public var duration: Duration = .zero

        public init() {}
    }

    public let symbolDirectories: [String]
    public let usesDebuginfod: Bool
    private let queue = DispatchQueue(label: "crash-collector.symbolication")
    /// Touched only on `queue`.
    private let cache: SymbolCache

    /// `symbolDirectories`: flat debug files (`NAME`, `NAME.debug`) and `.build-id/xx/rest.debug`
    /// trees. `useDebuginfod`: also ask the servers in DEBUGINFOD_URLS (elfutils' client, its
    /// cache in DEBUGINFOD_CACHE_PATH). Paths recorded on the crashed host are never opened here.
    public init(symbolDirectories: [String], useDebuginfod: Bool, capacity: Int = 32) {
        self.symbolDirectories = symbolDirectories
        usesDebuginfod = useDebuginfod
        cache = SymbolCache(
            locator: DebugFileLocator(options: .init(debugDirectories: symbolDirectories, useSystemDebugDirectory: false,
                                                     useDebuginfod: useDebuginfod, useRecordedPath: false)),
            capacity: capacity)
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
                        missing: inout [String: String]) -> DiagnosticsPayload.CrashReportEntry {
        outcome.reportsTried += 1
        var entry = entry
        let before = entry.thread_info
        let crashedBefore = (entry.thread_info.first(where: \.crashed) ?? entry.thread_info.first)?.frames ?? []
        for thread in entry.thread_info.indices {
            var frames: [DiagnosticsPayload.Frame] = []
            for frame in entry.thread_info[thread].frames {
                let resolved = resolve(frame, missing: &missing)
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
    public func resymbolicate(_ store: any Store, batch: Int = 200) async throws -> Resymbolication {
        let encoder = JSONEncoder.api
        var result = Resymbolication()
        var after: Int64 = 0
        while true {
            let page = try await store.rawReports(after: after, limit: batch)
            guard let last = page.last else { break }
            after = last.id
            for raw in page {
                result.examined += 1
                guard let entry = try? JSONDecoder().decode(DiagnosticsPayload.CrashReportEntry.self, from: Data(raw.reportJSON.utf8)),
                      Self.needsSymbolication(entry) else { continue }
                let (finished, outcome) = await withCheckedContinuation { continuation in
                    queue.async {
                        var outcome = Outcome()
                        var missing: [String: String] = [:]
                        let finished = self.finish(entry, outcome: &outcome, missing: &missing)
                        outcome.missing = missing.map { "\($1) (build-id \($0))" }
                        continuation.resume(returning: (finished, outcome))
                    }
                }
                result.missing.formUnion(outcome.missing)
                guard finished != entry else { continue }
                let oldKey = CrashGrouping.issueKey(for: entry), newKey = CrashGrouping.issueKey(for: finished)
                try await store.replaceReport(.init(
                    id: raw.id, bundleID: raw.bundleID, kind: finished.kind,
                    reportJSON: String(decoding: try encoder.encode(finished), as: UTF8.self),
                    symbolicated: finished.symbolicated, issue: newKey))
                result.improved += 1
                if finished.symbolicated { result.completed += 1 }
                if oldKey?.signature != newKey?.signature { result.regrouped += 1 }
            }
        }
        return result
    }

    /// The frame's source locations, innermost first, each a frame with the original index,
    /// address, module, offset and build-id; the frame itself when nothing resolves it.
    private func resolve(_ frame: DiagnosticsPayload.Frame, missing: inout [String: String]) -> [DiagnosticsPayload.Frame] {
        guard Self.isRaw(frame), let buildID = frame.build_id, let offset = frame.module_offset.flatMap(Address.init(hex:)) else {
            return [frame]
        }
        switch cache.lookup(buildID: BuildID(hex: buildID), path: frame.module ?? "", fileAddress: offset.value) {
        case .failure:
            missing[BuildID(hex: buildID).hex] = frame.module ?? "?"
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
