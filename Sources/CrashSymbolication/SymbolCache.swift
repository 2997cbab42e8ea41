// Symbols by build-id for a long-running server that symbolicates other hosts' reports (the
// collector, for records sent raw): each debug file is located and opened once, kept in a bounded
// least-recently-used table, and a build-id with no debug file is asked again only after a while
// (symbols may be uploaded later). Not thread-safe: one caller at a time (the collector's queue).
import CrashReportModel
import Foundation

public final class SymbolCache {
    public let locator: DebugFileLocator
    /// How many opened debug files are kept (each holds libdw's index of its DWARF).
    public let capacity: Int
    /// How long a build-id without a debug file is remembered as missing.
    public let retryMissesAfter: Duration

    private struct Entry {
        var symbols: ModuleSymbols
        var lastUse: UInt64
    }

    private var opened: [String: Entry] = [:]
    private var missing: [String: (failure: DebugFileLocator.Failure, since: ContinuousClock.Instant)] = [:]
    private var useCounter: UInt64 = 0
    /// The clock misses are timed by: the continuous clock, or a test's own.
    private let now: () -> ContinuousClock.Instant

    public init(locator: DebugFileLocator, capacity: Int = 32, retryMissesAfter: Duration = .seconds(60),
                now: @escaping () -> ContinuousClock.Instant = { .now }) {
        self.locator = locator
        self.capacity = max(1, capacity)
        self.retryMissesAfter = retryMissesAfter
        self.now = now
    }

    /// Debug files opened so far and still held; for tests and logs.
    public var openCount: Int { opened.count }

    /// The source locations at `fileAddress` (runtime address minus load bias; for a caller
    /// frame, its return address − 1) in the module with `buildID`, loaded from `path` on the
    /// crashed host. Innermost inline frame first; empty when the debug file covers nothing there.
    public func lookup(buildID: BuildID, path: String, fileAddress: UInt64) -> Result<[SymbolLocation], DebugFileLocator.Failure> {
        symbols(buildID: buildID, path: path).map { $0.lookup(fileAddress: fileAddress) }
    }

    /// The debug file used for `buildID`, when one is open.
    public func debugFile(for buildID: BuildID) -> String? {
        opened[buildID.hex]?.symbols.path
    }

    private func symbols(buildID: BuildID, path: String) -> Result<ModuleSymbols, DebugFileLocator.Failure> {
        let key = buildID.hex
        useCounter += 1
        if var entry = opened[key] {
            entry.lastUse = useCounter
            opened[key] = entry
            return .success(entry.symbols)
        }
        if let miss = missing[key], now() - miss.since < retryMissesAfter {
            return .failure(miss.failure)
        }
        if missing.count >= 4096 { missing.removeAll() }   // random build-ids from a client: bounded too
        let found: ModuleSymbols
        switch locator.locate(buildID: buildID, path: path) {
        case .failure(let failure):
            missing[key] = (failure, now())
            return .failure(failure)
        case .success(let location):
            guard let symbols = ModuleSymbols(path: location.path, debugSearchPath: locator.debugSearchPath) else {
                missing[key] = (.notFound, now())
                return .failure(.notFound)
            }
            found = symbols
        }
        missing[key] = nil
        if opened.count >= capacity, let oldest = opened.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
            opened[oldest] = nil   // ModuleSymbols' deinit ends its Dwfl
        }
        opened[key] = Entry(symbols: found, lastUse: useCounter)
        return .success(found)
    }
}
