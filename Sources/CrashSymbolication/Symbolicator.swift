// Turns a CrashRecord (addresses and build-ids) into a CrashReport (functions, files, lines,
// inlined frames). Frame 0 is looked up at its address, callers at their return address − 1.
// A module whose file changed since the crash is never symbolicated from that file.
import CLibdwLoader
import CrashReportModel
import Foundation

/// Symbolicates records. `Symbolicator` is the libdw implementation; tests can use a double.
public protocol Symbolicating {
    func symbolicate(_ record: CrashRecord) -> CrashReport
}

public final class Symbolicator: Symbolicating {
    public let locator: DebugFileLocator
    private var opened: [String: ModuleSymbols?] = [:]
    private var located: [String: Result<DebugFileLocator.Location, DebugFileLocator.Failure>] = [:]

    /// Why nothing can be symbolicated in this process (libdw.so.1 could not be loaded), or nil.
    /// Records are then reported raw: each frame's build-id and module offset.
    public static var unavailableReason: String? {
        ccr_libdw_load() == 1 ? nil : ccr_libdw_error().map { String(cString: $0) } ?? "libdw could not be loaded"
    }

    public init(locator: DebugFileLocator = .init()) {
        self.locator = locator
    }

    public convenience init(debugDirectories: [String]) {
        self.init(locator: DebugFileLocator(options: .init(debugDirectories: debugDirectories)))
    }

    public func symbolicate(_ record: CrashRecord) -> CrashReport {
        var usedModules: Set<String> = []
        // The outermost frames follow the innermost, with their true indices (a gap between).
        // Then the async callers (awaiting functions), marked as such.
        let asyncIndices = Set(record.asyncFrames.map(\.index))
        let frames = symbolicate(record.frames + record.outerFrames + record.asyncFrames, in: record, usedModules: &usedModules)
            .map { frame in
                var frame = frame
                frame.isAsync = asyncIndices.contains(frame.index)
                return frame
            }
        let others = record.otherThreads.map { other in
            CrashReport.Thread(id: other.thread.id, name: other.thread.name, isMain: other.thread.isMain,
                               frames: symbolicate(other.frames, in: record, usedModules: &usedModules),
                               state: other.state, stack: other.stack, crashedToo: other.crashedToo)
        }

        let images = record.modules.map { module -> CrashReport.Image in
            var source: CrashReport.SymbolSource?
            var hasDebugInfo = false
            if usedModules.contains(key(module)), let location = located[key(module)] {
                switch location {
                case .success(let found):
                    source = found.isRecordedPath ? .recordedPath(found.path) : .debugFile(found.path)
                    hasDebugInfo = opened[found.path]??.hasDebugInfo ?? false
                case .failure(.buildIDMismatch(let onDisk)): source = .buildIDMismatch(fileBuildID: onDisk)
                case .failure(.notFound): source = .notFound
                }
            }
            return .init(path: module.path, buildID: module.buildID, start: module.start, end: module.end, bias: module.bias,
                         symbols: source, hasDebugInfo: hasDebugInfo)
        }

        let thread = record.thread
        return CrashReport(
            record: record, reason: reason(record, frames),
            crashedThread: .init(id: thread?.id ?? 0, name: thread?.name ?? "", isMain: thread?.isMain ?? false, frames: frames),
            otherThreads: others, images: images)
    }

    /// One thread's frames, inlined frames expanded; notes which modules were looked up.
    private func symbolicate(_ recordFrames: [CrashRecord.Frame], in record: CrashRecord,
                             usedModules: inout Set<String>) -> [CrashReport.Frame] {
        var frames: [CrashReport.Frame] = []
        for frame in recordFrames {
            let lookup = frame.lookupAddress
            guard let module = record.module(containing: lookup) else {
                frames.append(.init(index: frame.index, address: frame.address, module: nil, moduleOffset: nil, function: nil,
                                    symbol: nil, file: nil, line: nil, column: nil, isInlined: false,
                                    note: "address outside every recorded module"))
                continue
            }
            usedModules.insert(key(module))
            let fileAddress = module.fileAddress(of: lookup)
            let base = CrashReport.Frame(index: frame.index, address: frame.address, module: module.path, moduleOffset: fileAddress,
                                         function: nil, symbol: nil, file: nil, line: nil, column: nil, isInlined: false, note: nil)
            switch symbols(for: module) {
            case .failure(let failure):
                var unresolved = base
                if case .buildIDMismatch(let onDisk) = failure {
                    unresolved.note = "binary changed since the crash (build-id \(module.buildID), file has \(onDisk))"
                }
                frames.append(unresolved)
            case .success(let symbols):
                let locations = symbols.lookup(fileAddress: fileAddress.value)
                if locations.isEmpty {
                    frames.append(base)
                }
                for location in locations {
                    var resolved = base
                    resolved.symbol = location.symbol
                    resolved.function = Demangler.demangle(location.symbol)
                    resolved.file = location.file
                    resolved.line = location.line.flatMap { $0 > 0 ? $0 : nil }
                    resolved.column = location.column
                    resolved.isInlined = location.isInlined
                    frames.append(resolved)
                }
            }
        }
        // Where each frame's code comes from (the grouping rule's; system and reporter frames are tagged).
        for index in frames.indices {
            let frame = frames[index]
            frames[index].origin = CrashGrouping.origin(function: frame.function, file: frame.file, module: frame.module.map(fileName(of:)),
                                                        modulePath: frame.module)
        }
        return frames
    }

    /// The line a person reads first.
    private func reason(_ record: CrashRecord, _ frames: [CrashReport.Frame]) -> String {
        if let error = record.nonFatalError {
            return "non-fatal: \(error.domain) \(error.code): \(error.message)"
        }
        if let hang = record.hang {
            let lasted = hang.durationMilliseconds.map { "; it resumed after \(CrashReport.seconds($0))" } ?? "; still hung when the process ended"
            return "hang: \(hang.name) did not respond for \(CrashReport.seconds(hang.ageMilliseconds))\(lasted)"
        }
        if let termination = record.termination {
            switch termination.kind {
            case "crash_without_record": return "crash without a readable record: the handler could not write it"
            case "oom_kill": return "killed by the OOM killer: its memory cgroup's OOM-kill counter rose while it ran"
            default: return "abnormal termination: the process ended without a crash record or a clean exit (SIGKILL, OOM killer, power loss)"
            }
        }
        // -O traps: the reason survives only as an inlined frame at the trap address.
        if let failure = frames.first(where: { $0.index == 0 && ($0.function ?? "").hasPrefix("Swift runtime failure: ") })?.function {
            return failure
        }
        if let message = record.fatalMessage?.trimmingCharacters(in: .whitespacesAndNewlines), !message.isEmpty {
            return message
        }
        if let description = record.foreignDescription, !description.isEmpty {
            return description
        }
        guard let signal = record.signal else { return "unknown (the record has no signal line)" }
        if signal.stackOverflow == true {
            return CrashGrouping.stackOverflowPrefix + "\(signal.name) at \(signal.faultAddress ?? Address(0)), beside the stack pointer"
        }
        var text = "\(signal.name): \(signal.meaning)"
        if ["SIGSEGV", "SIGBUS"].contains(signal.name), let address = signal.faultAddress { text += " at \(address)" }
        if !signal.codeName.isEmpty { text += " (\(signal.codeName))" }
        return text
    }

    private func key(_ module: CrashRecord.Module) -> String {
        module.buildID.isEmpty ? "path:" + module.path : module.buildID.hex
    }

    private func symbols(for module: CrashRecord.Module) -> Result<ModuleSymbols, DebugFileLocator.Failure> {
        let moduleKey = key(module)
        let location: Result<DebugFileLocator.Location, DebugFileLocator.Failure>
        if let known = located[moduleKey] {
            location = known
        } else {
            location = locator.locate(module)
            located[moduleKey] = location
        }
        switch location {
        case .failure(let failure):
            return .failure(failure)
        case .success(let found):
            if opened[found.path] == nil {
                opened[found.path] = ModuleSymbols(path: found.path, debugSearchPath: locator.debugSearchPath)
            }
            guard let symbols = opened[found.path] ?? nil else { return .failure(.notFound) }
            return .success(symbols)
        }
    }
}
