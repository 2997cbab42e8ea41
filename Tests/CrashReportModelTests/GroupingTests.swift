// The grouping rule (CrashGrouping, rule 2) on frame lists modelled on real reports of the
// CrashFixture program: one bug in debug, release, static-stdlib and stripped-then-symbolicated
// builds signs alike; two bugs with the same reason sign apart; the reporter's frames and
// compiler wrappers never decide an issue. Frames are written innermost first, as reports are.
import CrashReportModel
import Testing

struct GroupingTests {
    typealias Frame = DiagnosticsPayload.Frame

    static let core = "/opt/swift/usr/lib/swift/linux/libswiftCore.so"
    static let app = "/srv/app/.build/release/CrashFixture"
    static let source = "/srv/app/CrashFixtures/CrashFixture/main.swift"

    static func frame(_ index: Int, _ module: String?, _ function: String?, file: String? = nil, line: Int? = nil,
                      inlined: Bool = false, offset: String? = nil) -> Frame {
        Frame(index: index, address: "0x\(String(0x5000 + index * 16, radix: 16))", module: module, module_offset: offset,
              build_id: nil, function: function, file: file, line: line, column: nil, inlined: inlined)
    }

    static func entry(_ frames: [Frame], message: String, type: String = "SIGILL", kind: String = "crash",
                      images: [String] = [core, app, "/usr/lib/x86_64-linux-gnu/libc.so.6"]) -> DiagnosticsPayload.CrashReportEntry {
        .init(timestamp: "2026-11-23T20:00:00.000Z", exception_type: type, exception_message: message,
              stack_trace: frames.map(\.stackTraceLine),
              thread_info: [.init(id: 1, name: "main", crashed: true, is_main: true, frames: frames)],
              report_id: "r", kind: kind, symbolicated: true, is_partial: false,
              images: images.map { .init(path: $0, build_id: "ab", start: "0x0", end: "0x1", bias: "0x0") })
    }

    /// The app's frames below the failing function: indexOutOfRange ← crash ← level5 ← level4.
    static func callers(from index: Int) -> [Frame] {
        [
            frame(index, "CrashFixture", "CrashFixture.crash(CrashFixture.Fixture) -> ()", file: source, line: 70),
            frame(index + 1, "CrashFixture", "CrashFixture.level5(CrashFixture.Fixture) -> ()", file: source, line: 46),
            frame(index + 2, "CrashFixture", "CrashFixture.level4(CrashFixture.Fixture) -> ()", file: source, line: 45),
            frame(index + 3, "libc.so.6", "__libc_start_call_main", file: "./csu/../sysdeps/nptl/libc_start_call_main.h", line: 58),
            frame(index + 4, "CrashFixture", "_start"),
        ]
    }

    static let failing = "CrashFixture.indexOutOfRange(_: Swift.Array<Swift.Int>, index: Swift.Int) -> Swift.Int"

    /// Debug build, shared standard library: the fatal message names the failure; the library's
    /// frames sit in libswiftCore and libswiftSwiftOnoneSupport.
    static let debug = entry([
        frame(0, "libswiftCore.so", "closure #1 (Swift.UnsafeBufferPointer<Swift.UInt8>) -> () in closure #1 (Swift.UnsafeBufferPointer<Swift.UInt8>) -> () in Swift._assertionFailure(_: Swift.StaticString, _: Swift.StaticString, file: Swift.StaticString, line: Swift.UInt, flags: Swift.UInt32) -> Swift.Never"),
        frame(1, "libswiftCore.so", "Swift._assertionFailure(_: Swift.StaticString, _: Swift.StaticString, file: Swift.StaticString, line: Swift.UInt, flags: Swift.UInt32) -> Swift.Never"),
        frame(2, "libswiftSwiftOnoneSupport.so", "merged generic specialization <Swift.UInt64> of Swift.Array.subscript.getter : (Swift.Int) -> A"),
        frame(3, "CrashFixture", failing, file: source, line: 96),
    ] + callers(from: 4), message: "Swift/ContiguousArrayBuffer.swift:692: Fatal error: Index out of range",
       images: [core, "/opt/swift/usr/lib/swift/linux/libswiftSwiftOnoneSupport.so", app])

    /// Release (-O): a bare trap; the standard library's subscript is inlined into the app's
    /// function and carries the app's module, and the reason is an inlined frame.
    static let release = entry([
        frame(0, "CrashFixture", "Swift runtime failure: Index out of range", file: "/<compiler-generated>", inlined: true),
        frame(0, "CrashFixture", "generic specialization <Swift.Int> of Swift.Array._checkSubscript(_: Swift.Int, wasNativeTypeChecked: Swift.Bool) -> Swift._DependenceToken", file: "/<compiler-generated>", inlined: true),
        frame(0, "CrashFixture", "generic specialization <Swift.Int> of Swift.Array.subscript.getter : (Swift.Int) -> A", file: "/<compiler-generated>", inlined: true),
        frame(0, "CrashFixture", failing, file: source, line: 96),
    ] + callers(from: 1), message: "Swift runtime failure: Index out of range")

    /// Debug with --static-swift-stdlib: the runtime's frames are in the app binary, named only by
    /// the symbol table or by the toolchain's paths.
    static let staticStdlib = entry([
        frame(0, "CrashFixture", "closure #1 (Swift.UnsafeBufferPointer<Swift.UInt8>) -> () in closure #1 (Swift.UnsafeBufferPointer<Swift.UInt8>) -> () in Swift._assertionFailure(_: Swift.StaticString, _: Swift.StaticString, file: Swift.StaticString, line: Swift.UInt, flags: Swift.UInt32) -> Swift.Never"),
        frame(1, "CrashFixture", "Swift._assertionFailure(_: Swift.StaticString, _: Swift.StaticString, file: Swift.StaticString, line: Swift.UInt, flags: Swift.UInt32) -> Swift.Never",
              file: "/home/build-user/swift/stdlib/public/core/AssertCommon.swift", line: 168),
        frame(2, "CrashFixture", "swift_reportError"),
        frame(2, "CrashFixture", "generic specialization <Swift.Int> of Swift.Array.subscript.getter : (Swift.Int) -> A",
              file: "/home/build-user/swift/stdlib/public/core/Array.swift", line: 840),
        frame(3, "CrashFixture", failing, file: source, line: 96),
    ] + callers(from: 4), message: "Swift/ContiguousArrayBuffer.swift:692: Fatal error: Index out of range", images: [app])

    /// Release, stripped, symbolicated from a debug file by the collector: the same frames, the
    /// reason found only in the inlined frame (the host sent the signal's meaning).
    static let strippedSymbolicated = entry(release.thread_info[0].frames, message: "Swift runtime trap or illegal instruction")

    @Test func oneBugSignsAlikeInEveryBuild() throws {
        let keys = try [Self.debug, Self.release, Self.staticStdlib, Self.strippedSymbolicated].map { try #require(CrashGrouping.issueKey(for: $0)) }
        #expect(keys[0].signature == "crash|Index out of range|indexOutOfRange(_:index:) < crash(_:) < level5(_:)")
        for key in keys {
            #expect(key.signature == keys[0].signature)
            #expect(key.title == "indexOutOfRange(_:index:) — Index out of range")
            #expect(key.ruleVersion == CrashGrouping.ruleVersion)
        }
    }

    @Test func twoIndexOutOfRangeBugsSignApart() throws {
        func release(_ function: String, _ caller: String) -> DiagnosticsPayload.CrashReportEntry {
            Self.entry([
                Self.frame(0, "RWServer", "Swift runtime failure: Index out of range", file: "/<compiler-generated>", inlined: true),
                Self.frame(0, "RWServer", "generic specialization <Swift.Int> of Swift.Array._checkSubscript(_: Swift.Int, wasNativeTypeChecked: Swift.Bool) -> Swift._DependenceToken", file: "/<compiler-generated>", inlined: true),
                Self.frame(0, "RWServer", "generic specialization <Swift.Int> of Swift.Array.subscript.getter : (Swift.Int) -> A", file: "/<compiler-generated>", inlined: true),
                Self.frame(0, "RWServer", function, file: "/srv/rw/Sources/RWServer/Reports.swift", line: 12),
                Self.frame(1, "RWServer", caller, file: "/srv/rw/Sources/RWServer/Routes.swift", line: 40),
            ], message: "Swift runtime failure: Index out of range", images: ["/srv/rw/RWServer"])
        }
        let pages = try #require(CrashGrouping.issueKey(for: release(
            "RWServer.Pagination.pageItems(_: Swift.Int) -> [Swift.Int]", "RWServer.listReports(page: Swift.Int) async throws -> ()")))
        let shards = try #require(CrashGrouping.issueKey(for: release(
            "static RWServer.ShardedReport.computeShard(for: Swift.String) -> Swift.Int", "RWServer.listReports(page: Swift.Int) async throws -> ()")))
        #expect(pages.signature != shards.signature)
        #expect(pages.title == "Pagination.pageItems(_:) — Index out of range")
        #expect(shards.title == "static ShardedReport.computeShard(for:) — Index out of range")
        #expect(!pages.signature.contains("Swift.Array") && !pages.signature.contains("subscript"))
    }

    @Test func theReportersFramesAreNeverTheApps() throws {
        // A crash right at the top of a Thread's body: below it only the thread start, which runs
        // through the reporter's altstack wrapper (linked into the app binary).
        let frames = [
            Self.frame(0, "CrashFixture", "closure #1 @Sendable () -> () in CrashFixture.runOnThread(_: CrashFixture.Fixture, stackSize: Swift.Int) -> ()", file: Self.source, line: 120),
            Self.frame(1, "CrashFixture", "partial apply forwarder for closure #1 @Sendable () -> () in CrashFixture.runOnThread(_: CrashFixture.Fixture, stackSize: Swift.Int) -> ()", file: "/<compiler-generated>"),
            Self.frame(2, "CrashFixture", "reabstraction thunk helper from @escaping @callee_guaranteed @Sendable () -> () to @escaping @callee_guaranteed @Sendable (@in_guaranteed ()) -> (@out ())", file: "/<compiler-generated>"),
            Self.frame(3, "libFoundation.so", "closure #1 (Swift.UnsafeMutableRawPointer?) -> Swift.UnsafeMutableRawPointer? in Foundation.Thread.start() -> ()"),
            Self.frame(4, "CrashFixture", "start_with_altstack", file: "/srv/app/.build/checkouts/swift-crash-reporting/Sources/CCrashCapture/Setup/ccr_altstack.c", line: 104),
            Self.frame(5, "libc.so.6", "start_thread", file: "./nptl/./nptl/pthread_create.c", line: 447),
            Self.frame(6, "libc.so.6", "__clone3"),
        ]
        let entry = Self.entry(frames, message: "Swift runtime failure: Unexpectedly found nil while unwrapping an Optional value")
        let key = try #require(CrashGrouping.issueKey(for: entry))
        #expect(key.signature == "crash|Unexpectedly found nil while unwrapping an Optional value|closure in runOnThread(_:stackSize:)")
        #expect(CrashGrouping.origin(of: frames[4], images: entry.images) == .reporter)
        // Stripped of DWARF, the reporter's C functions are still known by name.
        #expect(CrashGrouping.origin(function: "start_with_altstack", file: nil, module: "CrashFixture", modulePath: Self.app) == .reporter)
        #expect(CrashGrouping.origin(function: "ccr_signal_handler", file: nil, module: "CrashFixture", modulePath: Self.app) == .reporter)
        #expect(CrashGrouping.origin(function: "static CrashReporting.CrashReporter.forceCrash() -> ()", file: nil, module: "CrashFixture", modulePath: Self.app) == .reporter)
    }

    @Test func aTaskInAStaticStdlibBuildIsSignedByTheAppsAsyncFunctionOnly() throws {
        // --static-swift-stdlib: the concurrency runtime and Dispatch are in the app binary.
        let frames = [
            Self.frame(0, "RWServer", "Swift runtime failure: Division by zero", file: "/<compiler-generated>", inlined: true),
            Self.frame(0, "RWServer", "(1) suspend resume partial function for RWServer.ShardedReport.computeShard(for: Swift.String) async -> Swift.Int",
                       file: "/srv/rw/Sources/RWServer/Reports.swift", line: 30),
            Self.frame(1, "RWServer", "swift::runJobInEstablishedExecutorContext(swift::Job*)",
                       file: "/home/build-user/swift/stdlib/public/Concurrency/Actor.cpp", line: 1400),
            Self.frame(2, "RWServer", "swift_job_run"),
            Self.frame(3, "RWServer", "_dispatch_root_queue_drain"),
            Self.frame(4, "RWServer", "_dispatch_worker_thread2"),
            Self.frame(5, "RWServer", "start_with_altstack"),
            Self.frame(6, "libc.so.6", "start_thread", file: "./nptl/./nptl/pthread_create.c", line: 447),
        ]
        let key = try #require(CrashGrouping.issueKey(for: Self.entry(frames, message: "Swift runtime failure: Division by zero",
                                                                      images: ["/srv/rw/RWServer"])))
        #expect(key.signature == "crash|Division by zero|ShardedReport.computeShard(for:)")
        #expect(key.title == "ShardedReport.computeShard(for:) — Division by zero")
    }

    @Test func wrappersCountAsTheFunctionTheyWrap() {
        let names = [
            "function signature specialization <Arg[1] = Dead> of RWServer.Pagination.pageItems(_: Swift.Int) -> [Swift.Int]",
            "generic specialization <Swift.String> of RWServer.Pagination.pageItems<A>(_: A) -> [A]",
            "merged RWServer.Pagination.pageItems(_: Swift.Int) -> [Swift.Int]",
            "RWServer.Pagination.pageItems(_: Swift.Int) -> [Swift.Int]",
        ]
        #expect(Set(names.map(CrashGrouping.groupingName)) == ["Pagination.pageItems(_:)"])
        let async = [
            "(1) suspend resume partial function for RWServer.loadProfile(id: Swift.Int) async throws -> RWServer.Profile",
            "(2) await resume partial function for RWServer.loadProfile(id: Swift.Int) async throws -> RWServer.Profile",
            "RWServer.loadProfile(id: Swift.Int) async throws -> RWServer.Profile",
        ]
        #expect(Set(async.map(CrashGrouping.groupingName)) == ["loadProfile(id:)"])
        #expect(CrashGrouping.groupingName("partial apply forwarder for closure #3 (Swift.Int) -> () in RWServer.process(_: Swift.Int) -> ()")
                == "closure in process(_:)")
        #expect(CrashGrouping.groupingName("outlined variable #0 of RWServer.Pagination.pageItems(_: Swift.Int) -> [Swift.Int]")
                == "Pagination.pageItems(_:)")
        // Glue that wraps no function of its own decides nothing.
        #expect(CrashGrouping.groupingName("reabstraction thunk helper from @escaping @callee_guaranteed () -> () to @escaping @callee_guaranteed (@in_guaranteed ()) -> (@out ())") == nil)
        #expect(CrashGrouping.groupingName("protocol witness for Swift.Sequence.makeIterator() -> A.Iterator in conformance RWServer.Page : Swift.Sequence in RWServer") == nil)
        #expect(CrashGrouping.groupingName("outlined copy of RWServer.Profile?") == nil)
        #expect(CrashGrouping.groupingName("closure #12 in App.run() at 0xdeadbeef") == "closure in run()")
        #expect(CrashGrouping.groupingName("0x1234") == nil)
        // A top-level closure: swift-demangle prints its context as nothing; people read the module.
        #expect(CrashGrouping.displayName("closure #5 () async -> () in CrashFixture") == "closure #5 in CrashFixture")
        #expect(CrashGrouping.groupingName("(1) suspend resume partial function for closure #5 () async -> () in CrashFixture")
                == "closure in CrashFixture")
        #expect(SwiftNames.isAsync("(1) suspend resume partial function for RWServer.loadProfile(id: Swift.Int) async throws -> RWServer.Profile"))
        #expect(SwiftNames.isAsync("RWServer.loadProfile(id: Swift.Int) async throws -> RWServer.Profile"))
        #expect(!SwiftNames.isAsync("RWServer.Pagination.pageItems(_: Swift.Int) -> [Swift.Int]"))
    }

    @Test func appOwnedIsDecidedByWhereTheCodeComesFrom() {
        func origin(_ function: String?, file: String? = nil, module: String = "RWServer", path: String = "/srv/rw/RWServer") -> CrashGrouping.Origin {
            CrashGrouping.origin(function: function, file: file, module: module, modulePath: path)
        }
        #expect(origin("RWServer.Pagination.pageItems(_: Swift.Int) -> [Swift.Int]", file: "/srv/rw/Sources/RWServer/Pagination.swift") == .app)
        #expect(origin("(extension in RWServer):Swift.Array.page(_: Swift.Int) -> [A]") == .app)
        #expect(origin("Swift._assertionFailure(_: Swift.StaticString, _: Swift.StaticString, file: Swift.StaticString, line: Swift.UInt, flags: Swift.UInt32) -> Swift.Never") == .system)
        #expect(origin("closure #1 () -> () in Swift.Array.forEach((A) throws -> ()) throws -> ()") == .system)
        #expect(origin("FoundationEssentials.JSONDecoder.decode<A>(_: A.Type, from: Foundation.Data) throws -> A") == .system)
        #expect(origin("swift_job_run") == .system)
        #expect(origin("_dispatch_worker_thread2") == .system)
        #expect(origin("dispatch_async_f") == .system)
        #expect(origin("$ss17_assertionFailure_4file4line5flagss5NeverOs12StaticStringV_A2HSus6UInt32VtF") == .system)
        #expect(origin("helper", file: "./nptl/./nptl/pthread_create.c") == .system)
        #expect(origin("memcpy", file: "/usr/include/x86_64-linux-gnu/bits/string_fortified.h") == .system)
        #expect(origin("worker", file: "/home/build-user/swift-corelibs-libdispatch/src/queue.c") == .system)
        #expect(origin("c_helper", file: "/srv/rw/Sources/CHelpers/helpers.c") == .app)
        #expect(origin(nil, module: "libswiftCore.so", path: Self.core) == .system)
        #expect(origin(nil, module: "libAppCore.so", path: "/srv/rw/lib/libAppCore.so") == .app)
    }

    @Test func reasonsOfDebugAndReleaseAgree() {
        #expect(CrashGrouping.failureReason(frames: [], message: "Swift/ContiguousArrayBuffer.swift:692: Fatal error: Index out of range\n") == "Index out of range")
        #expect(CrashGrouping.failureReason(frames: [], message: "Fatal error: Index out of range: file Swift/ContiguousArrayBuffer.swift, line 600") == "Index out of range")
        #expect(CrashGrouping.failureReason(frames: [], message: "Swift runtime failure: Index out of range") == "Index out of range")
        #expect(CrashGrouping.failureReason(frames: [], message: "main.swift:4: Fatal error: order 4411 has no lines") == "order <n> has no lines")
        #expect(CrashGrouping.failureReason(frames: [], message: "invalid memory access at 0x0") == nil)
        // A precondition: -O drops its message, so the debug build's message is not the reason.
        #expect(CrashGrouping.failureReason(frames: [], message: "CrashFixture/Corpus.swift:38: Precondition failed: balance must not be negative")
                == "precondition failure")
        #expect(CrashGrouping.failureReason(frames: [Self.frame(0, "CrashFixture", "Swift runtime failure: precondition failure")], message: "")
                == "precondition failure")
        // Without a reason the exception type stands in: a signature is never the reason alone.
        let segv = Self.entry([Self.frame(0, "CrashFixture", "CrashFixture.level5(CrashFixture.Fixture) -> ()", file: Self.source, line: 46)],
                              message: "invalid memory access at 0x0", type: "SIGSEGV")
        #expect(CrashGrouping.issueKey(for: segv)?.signature == "crash|SIGSEGV|level5(_:)")
    }

    @Test func stackOverflowIsAnIssueOfItsOwn() throws {
        // Rule 4. The recursion's frames, repeats dropped, are the names of a plain fault in that
        // function from the same callers; the two were one issue, titled "— SIGSEGV".
        let recurse = "CrashFixture.recurse(Swift.Int) -> Swift.Int"
        func overflow(depth: Int, at address: String) -> DiagnosticsPayload.CrashReportEntry {
            Self.entry((0..<depth).map { Self.frame($0, "CrashFixture", recurse, file: Self.source, line: 120) } + Self.callers(from: depth),
                       message: "Stack overflow: SIGSEGV at \(address), beside the stack pointer", type: "SIGSEGV")
        }
        let fault = Self.entry([Self.frame(0, "CrashFixture", recurse, file: Self.source, line: 121)] + Self.callers(from: 1),
                               message: "invalid memory access at 0x10 (SEGV_MAPERR)", type: "SIGSEGV")
        let deep = try #require(CrashGrouping.issueKey(for: overflow(depth: 20, at: "0x7ffd1e5fdff8")))
        let shallow = try #require(CrashGrouping.issueKey(for: overflow(depth: 7, at: "0x7ffc02a11ff0")))
        let plain = try #require(CrashGrouping.issueKey(for: fault))
        #expect(deep.signature == "crash|Stack overflow|recurse(_:)")
        #expect(deep.title == "recurse(_:) — Stack overflow")
        #expect(shallow.signature == deep.signature, "two overflows of one recursion, at other depths and addresses")
        #expect(plain.signature == "crash|SIGSEGV|recurse(_:) < crash(_:) < level5(_:)")
        #expect(plain.signature != deep.signature)
    }

    @Test func stackOverflowThroughSeveralFunctionsSignsAlikeWhereverTheStackRanOut() throws {
        // A recursion through a closure, and a mutual one: the function that touched the guard page
        // depends on where the stack began; a helper the cycle called may be on top.
        let cycle = ["CrashFixture.walk(Swift.Int) -> Swift.Int", "closure #1 (Swift.Int) -> Swift.Int in CrashFixture.walk(Swift.Int) -> Swift.Int",
                     "CrashFixture.visit(Swift.Int) -> Swift.Int"]
        func overflow(phase: Int, helperOnTop: Bool, depth: Int = 30) -> DiagnosticsPayload.CrashReportEntry {
            var frames = (0..<depth).map { Self.frame($0 + (helperOnTop ? 1 : 0), "CrashFixture", cycle[($0 + phase) % cycle.count], file: Self.source, line: 130) }
            if helperOnTop { frames.insert(Self.frame(0, "CrashFixture", "CrashFixture.makeNode(Swift.Int) -> Swift.Int", file: Self.source, line: 140), at: 0) }
            return Self.entry(frames + Self.callers(from: frames.count), message: "Stack overflow: SIGSEGV at 0x7ffd00001000, beside the stack pointer", type: "SIGSEGV")
        }
        var signatures = Set<String>()
        for phase in 0..<3 {
            for helper in [false, true] {
                signatures.insert(try #require(CrashGrouping.issueKey(for: overflow(phase: phase, helperOnTop: helper, depth: 25 + phase))).signature)
            }
        }
        #expect(signatures == ["crash|Stack overflow|closure in walk(_:) < visit(_:) < walk(_:)"], "\(signatures)")
        // No repeating top (one deep chain): the first names, as for any crash.
        let chain = Self.entry([Self.frame(0, "CrashFixture", "CrashFixture.bigFrame(Swift.Int) -> Swift.Int", file: Self.source, line: 150)] + Self.callers(from: 1),
                               message: "Stack overflow: SIGSEGV at 0x7ffd00001000, beside the stack pointer", type: "SIGSEGV")
        #expect(try #require(CrashGrouping.issueKey(for: chain)).signature == "crash|Stack overflow|bigFrame(_:) < crash(_:) < level5(_:)")
    }

    @Test func unsymbolicatedReportsFallBackToModuleAndOffset() {
        let frames = [
            Self.frame(0, "libswiftCore.so", nil, offset: "0x3a1f0"),
            Self.frame(1, "CrashFixture", nil, offset: "0x1b2c4"),
        ]
        let key = CrashGrouping.issueKey(for: Self.entry(frames, message: "Swift runtime trap or illegal instruction"))
        #expect(key?.signature == "crash|SIGILL|CrashFixture + 0x1b2c4")
    }

    @Test func sourcePathsAreNormalised() {
        #expect(SourcePath.normalised("./nptl/./nptl/pthread_create.c") == "nptl/pthread_create.c")
        #expect(SourcePath.normalised("./csu/../sysdeps/nptl/libc_start_call_main.h") == "sysdeps/nptl/libc_start_call_main.h")
        #expect(SourcePath.normalised("/srv//app/Sources/main.swift") == "/srv/app/Sources/main.swift")
        #expect(SourcePath.joined(directory: "./nptl", file: "./nptl/pthread_create.c") == "nptl/pthread_create.c")
        #expect(SourcePath.joined(directory: "/srv/app", file: "Sources/main.swift") == "/srv/app/Sources/main.swift")
        #expect(SourcePath.joined(directory: "/", file: "<compiler-generated>") == "/<compiler-generated>")
    }
}
