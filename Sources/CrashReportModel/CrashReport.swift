// CrashReport: what symbolication made of a CrashRecord — function, file, line and inlined
// frames for each address, the crash's reason, and where each module's symbols came from.
// The record is never modified; a report can always be made again from it.
import Foundation

public struct CrashReport: Sendable, Codable, Equatable {
    /// Where a module's symbols came from, or why there are none.
    public enum SymbolSource: Sendable, Codable, Equatable {
        /// The file at the module's recorded path, whose build-id matched.
        case recordedPath(String)
        /// A file found by build-id or name in a debug directory, /usr/lib/debug or debuginfod.
        case debugFile(String)
        /// The file at the recorded path has another build-id and no matching file was found.
        case buildIDMismatch(fileBuildID: String)
        /// No file with this build-id was found.
        case notFound
    }

    public struct Image: Sendable, Codable, Equatable {
        public var path: String
        public var buildID: BuildID
        public var start: Address
        public var end: Address
        public var bias: Address
        /// nil when no frame of the crash is in this module, so it was not looked up.
        public var symbols: SymbolSource?
        /// True when the symbol file carries DWARF (file and line), not only a symbol table.
        public var hasDebugInfo: Bool

        public init(path: String, buildID: BuildID, start: Address, end: Address, bias: Address,
                    symbols: SymbolSource?, hasDebugInfo: Bool) {
            self.path = path
            self.buildID = buildID
            self.start = start
            self.end = end
            self.bias = bias
            self.symbols = symbols
            self.hasDebugInfo = hasDebugInfo
        }
    }

    public struct Frame: Sendable, Codable, Equatable {
        /// Index of the record frame this comes from; inlined frames share it.
        public var index: Int
        public var address: Address
        public var module: String?
        /// Address as the module's ELF file sees it (lookup address for callers: pc − 1).
        public var moduleOffset: Address?
        /// Demangled function name, or nil if no symbol covers the address.
        public var function: String?
        /// The name as the symbol table or DWARF has it (mangled for Swift and C++).
        public var symbol: String?
        public var file: String?
        public var line: Int?
        public var column: Int?
        /// True for a frame inlined into the next one (same address).
        public var isInlined: Bool
        /// A caveat, such as "binary changed since the crash".
        public var note: String?
        /// Whose code this is (CrashGrouping): the app's, the system's or the reporter's; nil when
        /// not worked out. Views dim what is not the app's.
        public var origin: CrashGrouping.Origin?
        /// A Swift async caller (an awaiting function's resume point), after the synchronous frames.
        public var isAsync: Bool = false

        public init(index: Int, address: Address, module: String?, moduleOffset: Address?, function: String?,
                    symbol: String?, file: String?, line: Int?, column: Int?, isInlined: Bool, note: String?) {
            self.index = index
            self.address = address
            self.module = module
            self.moduleOffset = moduleOffset
            self.function = function
            self.symbol = symbol
            self.file = file
            self.line = line
            self.column = column
            self.isInlined = isInlined
            self.note = note
        }
    }

    public struct Thread: Sendable, Codable, Equatable {
        public var id: Int32
        public var name: String
        public var isMain: Bool
        public var frames: [Frame]
        /// Another thread's answer ("answered", "no_answer", "blocked_signal"…; see
        /// CrashRecord.OtherThread); nil for the crashed thread.
        public var state: String?
        /// Another thread's stack line; the crashed thread's is the report's `stack`.
        public var stack: CrashRecord.Stack?
        /// Another thread that crashed too while this crash was recorded: its signal (its frames
        /// are where it crashed).
        public var crashedToo: CrashRecord.Signal?

        public init(id: Int32, name: String, isMain: Bool, frames: [Frame], state: String? = nil, stack: CrashRecord.Stack? = nil,
                    crashedToo: CrashRecord.Signal? = nil) {
            self.id = id
            self.name = name
            self.isMain = isMain
            self.frames = frames
            self.state = state
            self.stack = stack
            self.crashedToo = crashedToo
        }
    }

    /// The record as the handler (or the app) wrote it: every fact that symbolication does not
    /// change is read from it, not copied.
    public var record: CrashRecord
    /// One line a person reads first: the Swift fatal-error message, the inlined "Swift runtime
    /// failure: …" at a -O trap, or the signal's meaning.
    public var reason: String
    public var crashedThread: Thread
    /// Every other thread at the crash, in the record's order (empty in records before version 2).
    public var otherThreads: [Thread] = []
    public var images: [Image]

    private enum CodingKeys: String, CodingKey {
        case record, reason, crashedThread, otherThreads, images
        /// Written for readers of crashtool's JSON (the record's own is computed, so not encoded).
        case isPartial
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        record = try container.decode(CrashRecord.self, forKey: .record)
        reason = try container.decode(String.self, forKey: .reason)
        crashedThread = try container.decode(Thread.self, forKey: .crashedThread)
        otherThreads = try container.decodeIfPresent([Thread].self, forKey: .otherThreads) ?? []
        images = try container.decode([Image].self, forKey: .images)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(record, forKey: .record)
        try container.encode(reason, forKey: .reason)
        try container.encode(crashedThread, forKey: .crashedThread)
        try container.encode(otherThreads, forKey: .otherThreads)
        try container.encode(images, forKey: .images)
        try container.encode(isPartial, forKey: .isPartial)
    }

    public init(record: CrashRecord, reason: String, crashedThread: Thread, otherThreads: [Thread] = [], images: [Image]) {
        self.record = record
        self.reason = reason
        self.crashedThread = crashedThread
        self.otherThreads = otherThreads
        self.images = images
    }

    // The record's facts, by the names reports give them.
    public var recordID: String { record.id }
    public var appID: String { record.appID }
    public var appVersion: String { record.appVersion }
    public var processID: Int32 { record.processID }
    /// A forked child's crash: the parent's pid and record id.
    public var forkedFromProcessID: Int32? { record.forkedFromProcessID }
    public var forkedFromRecordID: String? { record.forkedFromRecordID }
    public var timestamp: Date { record.timestamp }
    public var architecture: String { record.architecture }
    public var signal: CrashRecord.Signal? { record.signal }
    public var fatalMessage: String? { record.fatalMessage }
    public var stack: CrashRecord.Stack? { record.stack }
    /// Where the record's module table came from ("link_map": read at the crash; "install": the
    /// table made at start, because the walk failed); nil in records without a modules line.
    public var moduleTableSource: String? { record.moduleTable?.source }
    public var nestedCrash: CrashRecord.NestedCrash? { record.nestedCrash }
    public var watchdog: CrashRecord.Watchdog? { record.watchdog }
    public var isPartial: Bool { record.isPartial }
    public var problems: [String] { record.problems }
    public var userID: String? { record.userID }
    public var customKeys: [CrashRecord.CustomKey] { record.customKeys }
    public var breadcrumbs: [CrashRecord.Breadcrumb] { record.breadcrumbs }
    public var termination: CrashRecord.Termination? { record.termination }
    public var hang: CrashRecord.Hang? { record.hang }
    public var terminationAfterHang: CrashRecord.TerminationHang? { record.terminationAfterHang }
    public var nonFatalError: CrashRecord.NonFatalError? { record.nonFatalError }
    public var customDataJSON: String? { record.customDataJSON }
}

extension CrashRecord.Signal {
    /// What the signal usually means in a Swift program on Linux.
    public var meaning: String {
        switch name {
        case "SIGSEGV": return "invalid memory access"
        case "SIGBUS": return "bus error (access to a mapping with no backing, e.g. a truncated file)"
        case "SIGILL": return "Swift runtime trap or illegal instruction"
        case "SIGTRAP": return "trap instruction (Swift runtime trap on arm64, or a breakpoint)"
        case "SIGABRT": return "abort() called"
        case "SIGFPE": return "arithmetic error (integer division by zero)"
        case "SIGSYS": return "system call refused by a seccomp filter (or a bad system call)"
        default: return "signal \(number)"
        }
    }
}
