// CrashRecord: what the signal handler wrote, parsed and typed — raw addresses and build-ids,
// never symbols (those belong to CrashReport, made by symbolication). The on-disk format is JSON
// Lines, versioned in the first line; see README "Crash record format".
import Foundation

/// A runtime address in the crashed process. Not a pointer: it is only meaningful with the
/// module table of the same record.
public struct Address: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var value: UInt64
    public init(_ value: UInt64) { self.value = value }

    /// Parses `0x…` (the record's spelling).
    public init?(hex: String) {
        guard hex.hasPrefix("0x"), let value = UInt64(hex.dropFirst(2), radix: 16) else { return nil }
        self.value = value
    }

    public var description: String { "0x" + String(value, radix: 16) }
    public static func < (a: Address, b: Address) -> Bool { a.value < b.value }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let address = Address(hex: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an address: \(text)"))
        }
        self = address
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// A GNU build-id as lower-case hex; empty when the module had none.
public struct BuildID: Hashable, Sendable, Codable, CustomStringConvertible {
    public var hex: String
    public init(hex: String) { self.hex = hex.lowercased() }
    public var isEmpty: Bool { hex.isEmpty }
    public var description: String { hex }

    public init(from decoder: any Decoder) throws {
        self.init(hex: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }
}

public struct CrashRecord: Sendable, Equatable, Codable {
    public static let format = "swift-crash-reporting.crash-record"
    /// The version this reader writes and understands best. Version 2 added the other threads'
    /// sections (a `thread` line after the crashing thread's opens another thread's section).
    public static let supportedVersion = 2
    /// Every version this reader accepts.
    public static let readableVersions = 1...2

    public struct Signal: Sendable, Equatable, Codable {
        public var number: Int32
        public var name: String
        public var code: Int32
        public var codeName: String
        /// The faulting address, for a signal the CPU raised (si_code > 0); nil for one a process
        /// sent (kill, tgkill, raise, abort), whose si_addr is not an address.
        public var faultAddress: Address?
        /// Set when another process sent the signal (si_code ≤ 0).
        public var senderPID: Int32?
        /// The handler saw the fault just below the stack pointer: the thread ran out of stack.
        public var stackOverflow: Bool? = nil

        /// The name of a signal the handler handles, by number (Linux), else "SIG<n>".
        public static func name(of number: Int32) -> String {
            let names: [Int32: String] = [4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 11: "SIGSEGV", 31: "SIGSYS"]
            return names[number] ?? "SIG\(number)"
        }
    }

    public struct Thread: Sendable, Equatable, Codable {
        public var id: Int32
        public var name: String
        public var isMain: Bool
    }

    /// Another thread at the moment of the crash (record version 2): listed with its id and
    /// name, and asked to unwind itself.
    public struct OtherThread: Sendable, Equatable, Codable {
        public var thread: Thread
        /// "answered" (frames follow), "no_answer" (it did not unwind itself in time),
        /// "blocked_signal" (it blocks the signal that asks), "exited", "crash_reporter" (the
        /// watchdog, never asked), "not_asked" (another handler had taken the signal); other words
        /// from newer writers are kept as they are.
        public var state: String
        public var frames: [Frame]
        public var stack: Stack?
        /// The thread crashed too, while the crash this record is about was being recorded (the
        /// handler records one crash; a second waits): its own signal. Its frames are where it
        /// crashed (it answered from its crash's context).
        public var crashedToo: Signal? = nil

        public init(thread: Thread, state: String, frames: [Frame] = [], stack: Stack? = nil, crashedToo: Signal? = nil) {
            self.thread = thread
            self.state = state
            self.frames = frames
            self.stack = stack
            self.crashedToo = crashedToo
        }
    }

    /// The `threads` line: how the other threads were collected.
    public struct ThreadsSummary: Sendable, Equatable, Codable {
        /// Threads in the process, the crashing one included.
        public var total: Int
        /// Threads with a section in the record, the crashing one included.
        public var listed: Int
        public var asked: Int
        public var answered: Int
        /// The real-time signal that asked.
        public var signal: Int32
        /// Its action was no longer ours at the crash (something installed another since start):
        /// no thread was asked.
        public var signalTaken: Bool
        /// Time spent waiting for answers, and in the whole collection.
        public var waitNanoseconds: UInt64
        public var elapsedNanoseconds: UInt64
        /// Why /proc/self/task could not be opened (the other threads are then unknown, not
        /// absent), e.g. 24, EMFILE; nil when it was.
        public var listErrno: Int? = nil
    }

    /// The `modules` line: where the module lines came from.
    public struct ModuleTable: Sendable, Equatable, Codable {
        /// "link_map": the loader's list read at the crash; "install": the table made at start
        /// (the walk failed), so libraries loaded or unloaded since start are missing or stale.
        public var source: String
        public var count: Int
        /// "consistent", or "adding" / "deleting" when a dlopen or dlclose was under way.
        public var loaderState: String
        /// With "link_map": how many objects, from the list's start, one read found as start saw
        /// them (build-id included); the others were read one by one. Nil in older records.
        public var unchanged: Int? = nil
        /// With "link_map": how that one read was made, "direct" (copied in the crash handler,
        /// a fault in the copy caught by it), "pipe" (a pipe of the reporter's own: the handler
        /// could not catch such a fault) or "process_vm_readv" (neither). Nil in older records.
        public var read: String? = nil
        /// With "direct": true when a fault in the copy stopped that read (caught by the handler;
        /// the objects it did not confirm were read one by one). Nil otherwise.
        public var readFault: Bool? = nil
        public var elapsedNanoseconds: UInt64?
    }

    public struct Frame: Sendable, Equatable, Codable {
        public enum Kind: String, Sendable, Codable {
            /// Where the signal struck: look it up at its own address.
            case programCounter = "pc"
            /// A caller's return address: look it up at address − 1, inside the call instruction.
            case returnAddress = "return_address"
            /// A Swift async caller: the resume function its awaited callee returns to (an entry
            /// point: look it up at its own address).
            case async = "async"
        }
        public var index: Int
        public var address: Address
        public var kind: Kind

        /// The address to give a symbolizer.
        public var lookupAddress: Address {
            kind == .returnAddress && address.value > 0 ? Address(address.value - 1) : address
        }
    }

    public struct Stack: Sendable, Equatable, Codable {
        /// "libunwind", or "frame-pointer" when libunwind was unavailable or stalled.
        public var unwinder: String
        public var depth: Int
        public var isTruncated: Bool
        /// The walk stopped counting at its bound, or after an unwinder error; the real stack is
        /// deeper still.
        public var depthIsLowerBound: Bool
        /// libunwind's error code when a step failed (the frames after it come from the saved
        /// frame pointers: unwinder "libunwind+frame-pointer"); nil when the walk ended normally.
        public var unwindError: Int? = nil
        /// The crashing thread's walk: how many of libunwind's memory checks were guarded copies
        /// (nil: none, its own system calls made them), and how many of those faulted.
        public var copyChecks: Int? = nil
        public var copyCheckFaults: Int? = nil
        /// The crashing thread's walk: how many of libunwind's look-ups of the object an address is
        /// in the module table answered instead of the loader's dl_iterate_phdr (nil: none), how
        /// many of those only after the object its ranges gave declined (nil: none), and how many it
        /// did not answer (nil: none).
        public var tableLookups: Int? = nil
        public var tableScans: Int? = nil
        public var tableMisses: Int? = nil
    }

    public struct Module: Sendable, Equatable, Codable {
        public var path: String
        public var start: Address
        public var end: Address
        /// Load bias: file virtual address + bias = runtime address.
        public var bias: Address
        public var buildID: BuildID

        public func contains(_ address: Address) -> Bool { start <= address && address < end }
        /// The address as the ELF file sees it (what llvm-symbolizer and libdw take).
        public func fileAddress(of address: Address) -> Address { Address(address.value &- bias.value) }
    }

    /// A second fault inside the handler: the record stops where the handler did.
    public struct NestedCrash: Sendable, Equatable, Codable {
        public var signal: Int32
        public var code: Int32
        public var stage: Int
    }

    /// The handler stalled and the watchdog finished the record.
    public struct Watchdog: Sendable, Equatable, Codable {
        public var stage: Int
        public var waitedMilliseconds: UInt64
    }

    /// A breadcrumb from the session's ring, oldest first in `breadcrumbs`.
    public struct Breadcrumb: Sendable, Equatable, Codable {
        /// Position in the session (0 = the first ever logged); gaps mean overwritten or torn slots.
        public var index: UInt64
        public var timestamp: Date
        public var level: String
        /// "log", "screen", "action" or "error".
        public var kind: String
        public var tag: String
        public var message: String
        public var metadata: [String: String]?
        /// The session ring it was read from: 0 is shared by threads without one of their own.
        public var ring: Int? = nil
    }

    /// A custom key; `jsonValue` is the value's JSON text (true, 42, 1.5, "text", {...}).
    public struct CustomKey: Sendable, Equatable, Codable {
        public var key: String
        public var jsonValue: String
        public init(key: String, jsonValue: String) {
            self.key = key
            self.jsonValue = jsonValue
        }
    }

    /// A non-fatal error or event reported by the app (not a crash).
    public struct NonFatalError: Sendable, Equatable, Codable {
        public var domain: String
        public var code: Int
        public var message: String
        /// The userInfo as JSON text (an object; values may be nested).
        public var userInfoJSON: String
        /// Underlying errors, outermost first: domain, code, message.
        public var underlying: [[String: String]]
    }

    /// The process ended without a crash record: detected by the next launch.
    public struct Termination: Sendable, Equatable, Codable {
        /// "abnormal" (killed: SIGKILL, OOM killer, power loss) or "crash_without_record".
        public var kind: String
        public var sessionStarted: Date
        public var detected: Date
    }

    /// A hang report's subject (Configuration.hangs): a heartbeat that stopped. The record's first
    /// thread is the one that last beat it (an event loop's thread), with every other thread after.
    public struct Hang: Sendable, Equatable, Codable {
        /// The heartbeat's name ("event loop 3", "cooperative pool").
        public var name: String
        /// The thread that last beat it.
        public var threadID: Int32
        public var thresholdMilliseconds: Int
        /// How long it had not beaten when the report was written.
        public var ageMilliseconds: Int
        /// From the last beat before the hang to the first after it; nil while it lasted (the
        /// process ended during the hang: killed by a liveness probe, crashed, exited).
        public var durationMilliseconds: Int?
        /// The session of the process that hung.
        public var sessionID: String?
    }

    /// A request a server was serving when it crashed (written by a framework middleware through
    /// `CrashReporter.beginRequest`).
    public struct Request: Sendable, Equatable, Codable {
        public var method: String
        /// The route pattern (`/users/{id}`).
        public var route: String
        public var requestID: String?
        public var traceID: String?
        /// The thread it started on (an async handler may have moved since).
        public var threadID: Int32
        /// Milliseconds from its start to the crash.
        public var ageMilliseconds: UInt64
        /// It started on the thread that crashed.
        public var startedOnCrashedThread: Bool

        public init(method: String, route: String, requestID: String?, traceID: String?, threadID: Int32,
                    ageMilliseconds: UInt64, startedOnCrashedThread: Bool) {
            self.method = method
            self.route = route
            self.requestID = requestID
            self.traceID = traceID
            self.threadID = threadID
            self.ageMilliseconds = ageMilliseconds
            self.startedOnCrashedThread = startedOnCrashedThread
        }
    }

    /// Memory before the end (the sampler's sidecar, attached to an abnormal termination).
    public struct Memory: Sendable, Equatable, Codable {
        public struct Sample: Sendable, Equatable, Codable {
            public var timestamp: Date
            public var residentBytes: Int?
            public var cgroupBytes: Int?
            public init(timestamp: Date, residentBytes: Int?, cgroupBytes: Int?) {
                self.timestamp = timestamp
                self.residentBytes = residentBytes
                self.cgroupBytes = cgroupBytes
            }
        }
        /// The memory cgroup's folder, when the process was in one with the files readable.
        public var cgroup: String?
        public var limitBytes: Int?
        /// Oldest first, at most 60.
        public var samples: [Sample] = []
        public init(cgroup: String?, limitBytes: Int?, samples: [Sample]) {
            self.cgroup = cgroup
            self.limitBytes = limitBytes
            self.samples = samples
        }
    }

    public var version: Int
    public var id: String
    public var appID: String
    public var appVersion: String
    public var processID: Int32
    /// In a forked child's record: the parent's pid and record id (the parent's own crash, if it
    /// has one, is a record of its own).
    public var forkedFromProcessID: Int32?
    public var forkedFromRecordID: String?
    public var timestamp: Date
    public var architecture: String
    public var signal: Signal?
    /// The crashing thread (or, in a non-fatal report, the reporting one): the first thread line.
    public var thread: Thread?
    public var registers: [String: Address]
    public var fatalMessage: String?
    /// The crashing thread's frames and stack.
    public var frames: [Frame]
    /// The crashing thread's outer frames (true indices) when its stack was deeper than the frames
    /// kept: the 10 where a recursion cut by the limit was entered and who called it (when the kept
    /// frames end in a repeating pattern), then the outermost 10; at most 20, in index order.
    public var outerFrames: [Frame] = []
    /// The crashing thread's Swift async callers (the awaiting functions, innermost first), found
    /// by following the async context chain from the first async frame.
    public var asyncFrames: [Frame] = []
    public var stack: Stack?
    /// Every other thread, in the order the record lists them (version 2).
    public var otherThreads: [OtherThread] = []
    public var threadsSummary: ThreadsSummary?
    public var modules: [Module]
    /// Absent in records written before the crash-time walk (and in non-fatal reports).
    public var moduleTable: ModuleTable?
    public var nestedCrash: NestedCrash?
    public var watchdog: Watchdog?
    /// Time from the handler's first instruction to the record being durable (fsync + rename).
    public var durableNanoseconds: UInt64?
    /// True when the end line was written.
    public var hasEnd: Bool
    /// Lines that could not be read, as "line N: reason".
    public var problems: [String]
    /// Set when the record was converted from another tool's report (Swift's backtracer JSON):
    /// that tool's one-line description of the crash.
    public var foreignDescription: String?
    public var sessionID: String?
    public var userID: String?
    public var customKeys: [CustomKey] = []
    public var breadcrumbs: [Breadcrumb] = []
    public var termination: Termination?
    /// A hang report (kind `hang`).
    public var hang: Hang?
    /// An abnormal termination that followed a hang of the same session (a liveness probe's
    /// SIGKILL, say): the hang's heartbeat and its report id.
    public var terminationAfterHang: TerminationHang?
    public struct TerminationHang: Sendable, Equatable, Codable {
        public var name: String
        public var reportID: String
    }
    public var nonFatalError: NonFatalError?
    /// Seed 000's custom_data (Codable values set by the app) as JSON text.
    public var customDataJSON: String?
    /// Set on a diagnostics snapshot (no crash, no error): what asked for it ("manual",
    /// "session_end", "periodic").
    public var diagnosticsTrigger: String?
    /// Requests in flight at the crash, and how many began while every slot was taken.
    public var requests: [Request] = []
    public var requestsDropped: UInt64 = 0
    public var memory: Memory?

    /// A record cut short (second fault, power loss, watchdog) or with unreadable lines. An
    /// abnormal-termination record has no end line by nature and is not partial.
    public var isPartial: Bool { (!hasEnd && termination == nil) || !problems.isEmpty || nestedCrash != nil }

    /// A report of a non-fatal error or event, not of a crash.
    public var isNonFatal: Bool { nonFatalError != nil }

    public func module(containing address: Address) -> Module? {
        modules.first { $0.contains(address) }
    }
}

public struct CrashRecordError: Error, CustomStringConvertible, Equatable {
    public var source: String
    public var line: Int
    public var reason: String
    public init(source: String, line: Int, reason: String) {
        self.source = source
        self.line = line
        self.reason = reason
    }
    public var description: String { "\(source):\(line): \(reason)" }
}

extension CrashRecord {
    public init(contentsOf url: URL) throws {
        try self.init(data: try readFile(url.path), source: url.path)
    }

    /// Parses a record. The first line must be a valid header; later lines that cannot be read
    /// are listed in `problems` and the rest is kept (a record cut short still tells a lot).
    public init(data: Data, source: String = "<data>") throws {
        // One pass over the bytes; a record file ends in up to 64 KiB of prefill newlines, so
        // empty lines must cost nothing.
        var lines: [(number: Int, bytes: Data)] = []
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            var number = 1
            var start = 0
            for index in 0...raw.count {
                guard index == raw.count || raw[index] == UInt8(ascii: "\n") else { continue }
                if index > start { lines.append((number, Data(raw[start..<index]))) }
                number += 1
                start = index + 1
            }
        }
        guard let (firstNumber, first) = lines.first else {
            throw CrashRecordError(source: source, line: 1, reason: "empty file, not a crash record")
        }
        guard firstNumber == 1, let header = Self.object(first), header["format"] as? String == Self.format else {
            // A log with the handler's one-line summary (Configuration.crashLineOnStandardError),
            // perhaps behind journald's or Docker's prefix: the first such line is the record.
            for (_, bytes) in lines {
                guard let marker = bytes.range(of: Self.crashLineMarker), let line = Self.object(bytes[marker.lowerBound...]) else { continue }
                self = try Self(crashLine: line, source: source)
                return
            }
            throw CrashRecordError(source: source, line: firstNumber, reason: "not a crash record (missing \"format\":\"\(Self.format)\" header)")
        }
        guard let version = header["version"] as? Int, Self.readableVersions.contains(version) else {
            throw CrashRecordError(source: source, line: 1, reason: "unsupported record version \(header["version"] ?? "none")")
        }
        self.version = version
        id = header["id"] as? String ?? ""
        appID = header["app_id"] as? String ?? ""
        appVersion = header["app_version"] as? String ?? ""
        processID = Int32(exactly: header["pid"] as? Int ?? 0) ?? 0
        forkedFromProcessID = (header["forked_from_pid"] as? Int).flatMap { Int32(exactly: $0) }
        forkedFromRecordID = header["forked_from_id"] as? String
        let nanoseconds = Self.unsigned(header["timestamp_ns"]) ?? 0
        timestamp = Date(timeIntervalSince1970: Double(nanoseconds) / 1e9)
        architecture = header["arch"] as? String ?? ""
        registers = [:]
        frames = []
        modules = []
        hasEnd = false
        problems = []
        foreignDescription = nil

        for (number, bytes) in lines.dropFirst() {
            if bytes.starts(with: Self.customDataPrefix) {
                if bytes.last == UInt8(ascii: "}"), let object = Self.object(bytes), object["data"] is [String: Any] {
                    customDataJSON = String(decoding: bytes[bytes.startIndex + Self.customDataPrefix.count ..< bytes.index(before: bytes.endIndex)], as: UTF8.self)
                } else {
                    problems.append("line \(number): custom_data: malformed")
                }
                continue
            }
            if bytes.starts(with: Self.errorPrefix) {
                do { nonFatalError = try Self.nonFatal(bytes) } catch { problems.append("line \(number): error: \(error)") }
                continue
            }
            if bytes.starts(with: Self.customKeyPrefix) {
                do { try customKeys.append(Self.customKey(bytes)) } catch { problems.append("line \(number): custom_key: \(error)") }
                continue
            }
            guard let line = Self.object(bytes), let type = line["type"] as? String else {
                problems.append("line \(number): not a JSON object with a \"type\"")
                continue
            }
            // A newer writer's line type is skipped, so that old readers keep working.
            guard let known = RecordLineType(rawValue: type), known != .header else { continue }
            do {
                try apply(known, line: line)
            } catch {
                problems.append("line \(number): \(type): \(error)")
            }
        }
    }

    private static let crashLineMarker = Data(#"{"swift_crash_reporting":"crash""#.utf8)

    /// A record made of the handler's one-line summary: signal, thread, the innermost frames as
    /// module + file offset with build-ids. Each module gets an address range of its own so that
    /// a frame's file address is its offset; the record is partial (no end line, few frames).
    init(crashLine line: [String: Any], source: String) throws {
        guard let signo = line["signo"] as? Int, let frames = line["frames"] as? [[String: Any]] else {
            throw CrashRecordError(source: source, line: 1, reason: "a crash line without signo or frames")
        }
        version = Self.supportedVersion
        id = line["id"] as? String ?? ""
        appID = line["app_id"] as? String ?? ""
        appVersion = line["app_version"] as? String ?? ""
        processID = Int32(exactly: line["pid"] as? Int ?? 0) ?? 0
        timestamp = Date(timeIntervalSince1970: Double(Self.unsigned(line["timestamp_ns"]) ?? 0) / 1e9)
        architecture = ""
        // The fault address and the sender's pid as the record's signal line has them (lines
        // written before they were added have neither: no address is made up).
        signal = Signal(number: Int32(signo), name: Signal.name(of: Int32(truncatingIfNeeded: signo)), code: Int32(line["code"] as? Int ?? 0),
                        codeName: "", faultAddress: (line["fault_address"] as? String).flatMap(Address.init(hex:)),
                        senderPID: (line["sender_pid"] as? Int).flatMap { Int32(exactly: $0) },
                        stackOverflow: line["stack_overflow"] as? Bool == true ? true : nil)
        let tid = Int32(exactly: line["tid"] as? Int ?? 0) ?? 0
        thread = Thread(id: tid, name: "", isMain: tid == processID)
        registers = [:]
        hasEnd = false
        problems = []
        foreignDescription = nil
        var modules: [Module] = []
        var recordFrames: [Frame] = []
        var bases: [String: UInt64] = [:]
        for (index, frame) in frames.enumerated() {
            var address = (frame["address"] as? String).flatMap(Address.init(hex:)) ?? Address(0)
            if let path = frame["path"] as? String, let buildID = frame["build_id"] as? String,
               let offset = (frame["offset"] as? String).flatMap(Address.init(hex:))?.value {
                let key = buildID + path
                let base = bases[key] ?? {
                    let base = UInt64(bases.count + 1) << 40
                    bases[key] = base
                    modules.append(Module(path: path, start: Address(base), end: Address(base + (1 << 40) - 1), bias: Address(base),
                                          buildID: BuildID(hex: buildID)))
                    return base
                }()
                address = Address(base + offset)
            }
            recordFrames.append(Frame(index: index, address: address, kind: index == 0 ? .programCounter : .returnAddress))
        }
        self.modules = modules
        self.frames = recordFrames
        // The stack's depth when the line has it: more than its frames means the line kept the
        // innermost of a deeper stack.
        let depth = max(frames.count, line["depth"] as? Int ?? 0)
        stack = Stack(unwinder: "crash-line", depth: depth, isTruncated: depth > frames.count,
                      depthIsLowerBound: line["depth"] == nil || line["depth_is_lower_bound"] as? Bool == true)
    }

    // Lines whose JSON value is kept as text, found by the prefix their writers give them.
    private static let customKeyPrefix = Data((RecordLineType.custom_key.linePrefixText + #","key":"#).utf8)
    private static let errorPrefix = Data((RecordLineType.error.linePrefixText + ",").utf8)
    private static let customDataPrefix = Data((RecordLineType.custom_data.linePrefixText + #","data":"#).utf8)

    /// `{"type":"error",…,"user_info":{…}}`: user_info (last) is kept as its JSON text.
    private static func nonFatal(_ bytes: Data) throws -> NonFatalError {
        guard let object = Self.object(bytes), let domain = object["domain"] as? String, let code = object["code"] as? Int,
              let message = object["message"] as? String, object["user_info"] is [String: Any],
              let marker = bytes.range(of: Data(#","user_info":"#.utf8), options: .backwards), bytes.last == UInt8(ascii: "}") else {
            throw FieldError(description: "malformed error line")
        }
        let underlying = (object["underlying"] as? [[String: Any]] ?? []).map { entry in
            entry.mapValues { "\($0)" }
        }
        let info = bytes[marker.upperBound ..< bytes.index(before: bytes.endIndex)]
        return NonFatalError(domain: domain, code: code, message: message, userInfoJSON: String(decoding: info, as: UTF8.self),
                             underlying: underlying)
    }

    /// `{"type":"custom_key","key":"…","value":<JSON>}`: the value is kept as its JSON text.
    private static func customKey(_ bytes: Data) throws -> CustomKey {
        guard let object = Self.object(bytes), let key = object["key"] as? String, object["value"] != nil,
              let marker = bytes.range(of: Data(#","value":"#.utf8)), bytes.last == UInt8(ascii: "}") else {
            throw FieldError(description: "malformed custom key line")
        }
        let value = bytes[marker.upperBound ..< bytes.index(before: bytes.endIndex)]
        return CustomKey(key: key, jsonValue: String(decoding: value, as: UTF8.self))
    }

    private static func object(_ bytes: Data) -> [String: Any]? {
        JSONLine.parse(bytes) as? [String: Any]
    }

    private struct FieldError: Error, CustomStringConvertible {
        var description: String
    }

    private static func field<T>(_ line: [String: Any], _ key: String, as type: T.Type = T.self) throws -> T {
        guard let value = line[key] as? T else { throw FieldError(description: "missing or malformed \"\(key)\"") }
        return value
    }

    /// A 32-bit field (signal numbers, codes, thread ids): out of range is an error, not a trap.
    private static func int32(_ line: [String: Any], _ key: String) throws -> Int32 {
        guard let value = line[key] as? Int, let narrow = Int32(exactly: value) else {
            throw FieldError(description: "missing or out-of-range \"\(key)\"")
        }
        return narrow
    }

    /// A non-negative integer as JSONLine yields it (Int, or UInt64 past Int.max).
    private static func unsigned(_ value: Any?) -> UInt64? {
        if let value = value as? Int, value >= 0 { return UInt64(value) }
        return value as? UInt64
    }

    private static func unsignedField(_ line: [String: Any], _ key: String) throws -> UInt64 {
        guard let value = unsigned(line[key]) else { throw FieldError(description: "missing or malformed \"\(key)\"") }
        return value
    }

    private static func address(_ line: [String: Any], _ key: String) throws -> Address {
        guard let address = Address(hex: try field(line, key, as: String.self)) else {
            throw FieldError(description: "\"\(key)\" is not a 0x… address")
        }
        return address
    }

    private mutating func apply(_ type: RecordLineType, line: [String: Any]) throws {
        switch type {
        case .signal:
            signal = Signal(
                number: try Self.int32(line, "signo"),
                name: try Self.field(line, "name"),
                code: try Self.int32(line, "code"),
                codeName: line["code_name"] as? String ?? "",
                faultAddress: line["fault_address"] == nil ? nil : try Self.address(line, "fault_address"),
                senderPID: (line["sender_pid"] as? Int).flatMap { Int32(exactly: $0) },
                stackOverflow: line["stack_overflow"] as? Bool)
        case .thread:
            // The first thread line is the crashing thread; each later one opens another
            // thread's section, to which the frame and stack lines after it belong.
            let parsed = Thread(
                id: try Self.int32(line, "tid"),
                name: line["name"] as? String ?? "",
                isMain: line["main"] as? Bool ?? false)
            if thread == nil {
                thread = parsed
            } else {
                var crashedToo: Signal?
                if let too = line["crashed_too"] as? [String: Any], let signo = too["signo"] as? Int, let number = Int32(exactly: signo) {
                    let code = Int32(exactly: too["code"] as? Int ?? 0) ?? 0
                    crashedToo = Signal(number: number, name: Signal.name(of: number), code: code, codeName: "",
                                        faultAddress: (too["fault_address"] as? String).flatMap(Address.init(hex:)),
                                        senderPID: (too["sender_pid"] as? Int).flatMap { Int32(exactly: $0) })
                }
                otherThreads.append(OtherThread(thread: parsed, state: line["state"] as? String ?? "", crashedToo: crashedToo))
            }
        case .registers:
            let values: [String: String] = try Self.field(line, "values")
            for (name, text) in values {
                guard let value = Address(hex: text) else { throw FieldError(description: "register \(name) is not hex") }
                registers[name] = value
            }
        case .fatal_message:
            fatalMessage = try Self.field(line, "text")
        case .frame:
            let kind = Frame.Kind(rawValue: try Self.field(line, "kind"))
            guard let kind else { throw FieldError(description: "unknown frame kind") }
            let frame = Frame(index: try Self.field(line, "index"), address: try Self.address(line, "address"), kind: kind)
            if otherThreads.isEmpty { frames.append(frame) } else { otherThreads[otherThreads.count - 1].frames.append(frame) }
        case .async_frame:
            let frame = Frame(index: try Self.field(line, "index"), address: try Self.address(line, "address"), kind: .async)
            if otherThreads.isEmpty { asyncFrames.append(frame) }
        case .outer_frame:
            let frame = Frame(index: try Self.field(line, "index"), address: try Self.address(line, "address"), kind: .returnAddress)
            if otherThreads.isEmpty { outerFrames.append(frame) }
        case .stack:
            let parsed = Stack(
                unwinder: try Self.field(line, "unwinder"),
                depth: try Self.field(line, "depth"),
                isTruncated: try Self.field(line, "truncated"),
                depthIsLowerBound: line["depth_is_lower_bound"] as? Bool ?? false,
                unwindError: line["unwind_error"] as? Int,
                copyChecks: line["copy_checks"] as? Int,
                copyCheckFaults: line["copy_check_faults"] as? Int,
                tableLookups: line["table_lookups"] as? Int,
                tableScans: line["table_scans"] as? Int,
                tableMisses: line["table_misses"] as? Int)
            if otherThreads.isEmpty { stack = parsed } else { otherThreads[otherThreads.count - 1].stack = parsed }
        case .threads:
            threadsSummary = ThreadsSummary(
                total: try Self.field(line, "total"), listed: try Self.field(line, "listed"),
                asked: try Self.field(line, "asked"), answered: try Self.field(line, "answered"),
                signal: try Self.int32(line, "signo"), signalTaken: line["signal_taken"] as? Bool ?? false,
                waitNanoseconds: try Self.unsignedField(line, "wait_ns"),
                elapsedNanoseconds: try Self.unsignedField(line, "elapsed_ns"),
                listErrno: line["list_errno"] as? Int)
        case .module:
            modules.append(Module(
                path: try Self.field(line, "path"),
                start: try Self.address(line, "start"),
                end: try Self.address(line, "end"),
                bias: try Self.address(line, "bias"),
                buildID: BuildID(hex: try Self.field(line, "build_id"))))
        case .modules:
            moduleTable = ModuleTable(
                source: try Self.field(line, "source"), count: try Self.field(line, "count"),
                loaderState: line["loader_state"] as? String ?? "", unchanged: line["unchanged"] as? Int,
                read: line["read"] as? String, readFault: line["read_fault"] as? Bool,
                elapsedNanoseconds: Self.unsigned(line["elapsed_ns"]))
        case .nested_crash:
            nestedCrash = NestedCrash(
                signal: try Self.int32(line, "signo"),
                code: try Self.int32(line, "code"),
                stage: try Self.field(line, "stage"))
        case .watchdog:
            watchdog = Watchdog(
                stage: try Self.field(line, "stage"),
                waitedMilliseconds: (try Self.unsignedField(line, "waited_ms")))
        case .request:
            requests.append(Request(
                method: try Self.field(line, "method"),
                route: try Self.field(line, "route"),
                requestID: line["request_id"] as? String,
                traceID: line["trace_id"] as? String,
                threadID: try Self.int32(line, "tid"),
                ageMilliseconds: try Self.unsignedField(line, "age_ms"),
                startedOnCrashedThread: line["crashed_thread"] as? Bool ?? false))
        case .requests:
            requestsDropped = try Self.unsignedField(line, "dropped")
        case .memory_context:
            memory = Memory(cgroup: line["cgroup"] as? String, limitBytes: line["limit_bytes"] as? Int, samples: memory?.samples ?? [])
        case .memory_sample:
            let nanoseconds = try Self.unsignedField(line, "timestamp_ns")
            var memory = self.memory ?? Memory(cgroup: nil, limitBytes: nil, samples: [])
            memory.samples.append(.init(timestamp: Date(timeIntervalSince1970: Double(nanoseconds) / 1e9),
                                        residentBytes: line["rss_bytes"] as? Int, cgroupBytes: line["cgroup_bytes"] as? Int))
            self.memory = memory
        case .session:
            sessionID = try Self.field(line, "id")
        case .user:
            userID = try Self.field(line, "id")
        case .breadcrumb:
            let nanoseconds = (try Self.unsignedField(line, "timestamp_ns"))
            breadcrumbs.append(Breadcrumb(
                index: (try Self.unsignedField(line, "index")),
                timestamp: Date(timeIntervalSince1970: Double(nanoseconds) / 1e9),
                level: try Self.field(line, "level"), kind: try Self.field(line, "kind"),
                tag: line["tag"] as? String ?? "", message: try Self.field(line, "message"),
                metadata: (line["metadata"] as? [String: Any]).map { $0.compactMapValues { $0 as? String } },
                ring: line["ring"] as? Int))
        case .termination:
            func date(_ key: String) throws -> Date {
                Date(timeIntervalSince1970: Double((try Self.unsignedField(line, key))) / 1e9)
            }
            termination = Termination(kind: try Self.field(line, "kind"), sessionStarted: try date("session_started_ns"),
                                      detected: try date("detected_ns"))
            if let name = line["after_hang"] as? String, let id = line["after_hang_report"] as? String {
                terminationAfterHang = TerminationHang(name: name, reportID: id)
            }
        case .hang:
            hang = Hang(name: try Self.field(line, "name"), threadID: try Self.int32(line, "tid"),
                        thresholdMilliseconds: try Self.field(line, "threshold_ms"), ageMilliseconds: try Self.field(line, "age_ms"),
                        durationMilliseconds: nil, sessionID: line["session"] as? String)
        case .hang_end:
            hang?.durationMilliseconds = try Self.field(line, "duration_ms")
        case .diagnostics:
            diagnosticsTrigger = try Self.field(line, "trigger")
        case .end:
            hasEnd = true
        case .timing:
            durableNanoseconds = (try Self.unsignedField(line, "durable_ns"))
        case .header, .custom_key, .custom_data, .error:
            break   // the header is the first line; the other three are read from their text above
        }
    }
}
