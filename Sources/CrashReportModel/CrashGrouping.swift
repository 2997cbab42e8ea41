// Crash signatures: which issue a report belongs to, for the collector (issues), the Sentry
// transport (fingerprint), Logz.io and crashtool alike — one rule, versioned (`ruleVersion`).
//
// Rule 2: the signature is the report's kind, the failure's reason and the first three *app-owned*
// frames of the crashed thread. App-owned is decided by where the code comes from, not by the
// module it was linked into: with -O the standard library is inlined into the app, and with
// --static-swift-stdlib the runtime, Foundation and Dispatch live in the app binary. A frame is
// not the app's when its DWARF file, its symbol's namespace or its module says it is the Swift
// standard library or runtime, Foundation, Dispatch, libc, or this crash reporter. Compiler
// wrappers (specialisations, thunks, partial applies, merged and outlined functions, async resume
// points) count as the function they wrap; pure glue (reabstraction thunks, protocol witnesses)
// counts as nothing. The reason is the runtime failure ("Index out of range", from the inlined
// "Swift runtime failure: …" frame of an -O trap or from the debug build's fatal message, which
// say the same) or, without one, the exception type; it is part of the signature, never all of
// it. Debug, release, static-stdlib and stripped-then-symbolicated builds of one bug sign alike.
// Reports without named app frames fall back to the first app frame's module + offset (stable for
// one build), then to the top named system frames.
//
// Rule 1 (before 2026-11-23) took the top three frames of modules that were not system libraries,
// so inlined standard-library frames counted as the app's; `crash-collector regroup` re-signs
// reports stored under it. Rule 3 (2026-11-24, found by tools/test-grouping-corpus): a failed
// `precondition` is "precondition failure" in every build — -O drops its message, so the debug
// build's "Precondition failed: <message>" split one bug into two issues.
// Rule 4 (2026-11-30): a stack overflow (the record's signal says so, and the report's message
// begins "Stack overflow") has "Stack overflow" for its reason, and its place is the cycle of
// names that repeats at the top of its stack, in one rotation (recursionCycle): the function that
// touched the guard page varies from run to run. Under rule 3 its frames, repeats dropped, were
// the names of a plain fault in that function from the same callers: both one issue, "— SIGSEGV".
import Foundation

public enum CrashGrouping {
    /// The rule's version, stored with each issue; a collector whose issues were signed by an older
    /// rule says so at start (`crash-collector regroup` re-signs them).
    public static let ruleVersion = 4

    /// What groups reports into one issue, and how the issue is titled.
    public struct IssueKey: Sendable, Equatable {
        public var signature: String
        public var title: String
        public var subtitle: String
        public var exceptionType: String
        /// The grouping rule that made the signature.
        public var ruleVersion: Int

        public init(signature: String, title: String, subtitle: String, exceptionType: String,
                    ruleVersion: Int = CrashGrouping.ruleVersion) {
            self.signature = signature
            self.title = title
            self.subtitle = subtitle
            self.exceptionType = exceptionType
            self.ruleVersion = ruleVersion
        }
    }

    public static let framesInSignature = 3

    /// The issue a report belongs to; nil for kinds that are no issue (diagnostics snapshots).
    public static func issueKey(for report: DiagnosticsPayload.CrashReportEntry) -> IssueKey? {
        let subtitle = clipped(report.exception_message.isEmpty ? report.exception_type
                               : report.exception_message.hasPrefix(report.exception_type) ? report.exception_message
                               : "\(report.exception_type): \(report.exception_message)")
        switch report.kind {
        case "diagnostics":
            return nil
        case "abnormal_termination":
            let kind = report.termination?.kind ?? "abnormal"
            return IssueKey(signature: "abnormal_termination|\(kind)", title: "Abnormal termination (\(kind))",
                            subtitle: subtitle, exceptionType: report.exception_type)
        default:
            break
        }
        let frames = crashedFrames(of: report)
        let failure = report.kind == "crash" ? failureReason(frames: frames, message: report.exception_message) : nil
        // A non-fatal error's type (domain and code) is part of what went wrong at the same call site.
        let reason = failure ?? report.exception_type
        let prefix = "\(report.kind)|\(reason)|"
        func key(_ place: String) -> IssueKey {
            IssueKey(signature: prefix + place, title: clipped("\(place.components(separatedBy: " < ")[0]) — \(reason)"),
                     subtitle: subtitle, exceptionType: report.exception_type)
        }
        // The app's first names, read only as far as the signature needs (grouping runs for every
        // report the collector receives, and a stack has up to 50 frames): the same names as
        // deduplicated(every app frame's name).prefix(framesInSignature).
        var origins: [Origin] = []
        origins.reserveCapacity(frames.count)
        // A stack overflow: the recursion's cycle of names, in one rotation (rule 4).
        if failure == "Stack overflow", let cycle = recursionCycle(frames: frames, images: report.images) {
            return key(cycle.joined(separator: " < "))
        }
        var appNames: [String] = []
        for frame in frames {
            if appNames.count == framesInSignature { break }
            let origin = origin(of: frame, images: report.images)
            origins.append(origin)
            if origin == .app, let name = frame.function.flatMap(groupingName), appNames.last != name { appNames.append(name) }
        }
        if !appNames.isEmpty {
            return key(appNames.joined(separator: " < "))
        }
        for frame in frames.dropFirst(origins.count) { origins.append(origin(of: frame, images: report.images)) }
        let appFrames = zip(frames, origins).filter { $1 == .app }.map(\.0)
        // Unsymbolicated: module + offset of the first app frame (stable for one build: ASLR moves addresses, not offsets).
        if let frame = appFrames.first(where: { $0.module != nil && $0.module_offset != nil }),
           let module = frame.module, let offset = frame.module_offset {
            return key("\(module) + \(offset)")
        }
        // Nothing of the app's: the top named frames (a crash wholly inside a library, on one of its threads).
        let systemNames = deduplicated(zip(frames, origins).filter { $1 == .system }.compactMap { $0.0.function.flatMap(groupingName) })
        if !systemNames.isEmpty {
            return key(systemNames.prefix(framesInSignature).joined(separator: " < "))
        }
        if let frame = frames.first(where: { $0.module != nil && $0.module_offset != nil }),
           let module = frame.module, let offset = frame.module_offset {
            return key("\(module) + \(offset)")
        }
        let message = stripNumbers(report.exception_message)
        return IssueKey(signature: prefix + message, title: clipped(reason), subtitle: subtitle, exceptionType: report.exception_type)
    }

    /// The names of the app's frames that repeat at the top of a stack overflow's stack, as one
    /// cycle starting at its least name (so the function that touched the guard page, which varies
    /// with where the stack began, does not change it), repeats next to each other dropped; nil
    /// when the top does not repeat (then the first names sign, as for any crash). The callers
    /// that entered the recursion are left out: a recursion too deep for the unwinder to reach
    /// them, or a build that inlines differently, would sign apart. At most the first app name
    /// may stand before the cycle (a helper it called that ran out of stack).
    static func recursionCycle(frames: [DiagnosticsPayload.Frame], images: [DiagnosticsPayload.Image]) -> [String]? {
        var names: [String] = []
        for frame in frames.prefix(64) where origin(of: frame, images: images) == .app {
            if let name = frame.function.flatMap(groupingName) { names.append(name) }
        }
        for start in 0...1 {
            for period in 1...16 where names.count >= start + 3 * period {
                guard (0..<(2 * period)).allSatisfy({ names[start + $0] == names[start + $0 + period] }) else { continue }
                let cycle = Array(names[start..<(start + period)])
                let rotations = (0..<period).map { Array(cycle[$0...] + cycle[..<$0]) }
                let least = rotations.min { $0.joined(separator: "\u{1}") < $1.joined(separator: "\u{1}") }!
                let kept = deduplicated(least)
                return kept.count > 1 && kept.first == kept.last ? Array(kept.dropLast()) : kept
            }
        }
        return nil
    }

    private static func deduplicated(_ names: [String]) -> [String] {
        // A partial-apply forwarder and the closure it calls are one frame of the source.
        var out: [String] = []
        for name in names where out.last != name { out.append(name) }
        return out
    }

    // MARK: The reason

    static let runtimeFailurePrefix = "Swift runtime failure: "

    /// How the report's message of a stack overflow begins (the symbolicator's reason).
    public static let stackOverflowPrefix = "Stack overflow: "

    /// What the Swift runtime said went wrong, the same in debug and -O builds: the inlined
    /// "Swift runtime failure: Index out of range" frame at an -O trap, else the fatal message
    /// ("Swift/ContiguousArrayBuffer.swift:692: Fatal error: Index out of range"); numbers in a
    /// message become <n> (ids in a fatalError text would split one bug). nil when there is none.
    public static func failureReason(frames: [DiagnosticsPayload.Frame], message: String) -> String? {
        if let top = frames.first?.index,
           let failure = frames.first(where: { $0.index == top && ($0.function ?? "").hasPrefix(runtimeFailurePrefix) })?.function {
            return clipped(String(failure.dropFirst(runtimeFailurePrefix.count)), to: 120)
        }
        let firstLine = message.split(separator: "\n", omittingEmptySubsequences: true).first.map(String.init) ?? ""
        if firstLine.hasPrefix(stackOverflowPrefix) { return "Stack overflow" }   // rule 4
        for marker in [runtimeFailurePrefix, "Fatal error: ", "Precondition failed: ", "Assertion failed: "] {
            guard firstLine.includes(marker), let range = firstLine.range(of: marker) else { continue }
            var text = String(firstLine[range.upperBound...])
            // The older layout: "Fatal error: Index out of range: file Swift/Array.swift, line 600".
            if let file = text.range(of: #": file [^,]+, line [0-9]+$"#, options: .regularExpression) { text.removeSubrange(file) }
            text = text.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { return marker.dropLast(2).description }
            // -O builds drop a precondition's message ("Swift runtime failure: precondition
            // failure"): the debug build's message would make the same bug another issue.
            if marker == "Precondition failed: " { return "precondition failure" }
            return clipped(stripNumbers(text), to: 120)
        }
        return nil
    }

    /// The crashed thread's frames; for senders that only fill stack_trace (seed 000's text
    /// frames, as an iOS app sends them), frames parsed from those lines.
    public static func crashedFrames(of report: DiagnosticsPayload.CrashReportEntry) -> [DiagnosticsPayload.Frame] {
        let thread = report.thread_info.first(where: \.crashed) ?? report.thread_info.first
        if let frames = thread?.frames, !frames.isEmpty { return frames }
        return report.stack_trace.enumerated().compactMap { parseStackLine($1, index: $0) }
    }

    /// "3 CrashDemo 0x000055d4c2a01234 main.crash() + 20 (main.swift:12)" → module and function.
    public static func parseStackLine(_ line: String, index: Int) -> DiagnosticsPayload.Frame? {
        var words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        if let first = words.first, first.hasPrefix("#") || Int(first) != nil { words.removeFirst() }
        guard words.count >= 2 else { return nil }
        let module = words.removeFirst()
        let address = words.first?.hasPrefix("0x") == true ? words.removeFirst() : "0x0"
        var function = words.joined(separator: " ")
        if let open = function.range(of: " (", options: .backwards), function.hasSuffix(")") {
            function = String(function[..<open.lowerBound])   // "(file:line)"
        }
        if let plus = function.range(of: " + ", options: .backwards) { function = String(function[..<plus.lowerBound]) }
        return .init(index: index, address: address, module: module, module_offset: nil, build_id: nil,
                     function: function.isEmpty || function.hasPrefix("0x") ? nil : function,
                     file: nil, line: nil, column: nil, inlined: false)
    }

    // MARK: Where a frame's code comes from

    public enum Origin: String, Sendable, Codable {
        /// The app's own code: what a signature is made of.
        case app
        /// The Swift standard library and runtime, Foundation, Dispatch, libc and other system libraries.
        case system
        /// This crash reporter (CCrashCapture, CrashReporting): linked into the app, never the bug.
        case reporter
    }

    /// Libraries that come with the system or the Swift runtime: never the app's code.
    public static let systemModulePrefixes = [
        "libc.so", "libc-", "libm.so", "libpthread", "ld-linux", "ld64.so", "libdl.so", "librt.so", "libstdc++", "libgcc_s",
        "libswift", "libFoundation", "lib_Foundation", "libdispatch", "libBlocksRuntime", "libicu", "libxml2", "libcurl",
        "libz.so", "libunwind", "linux-vdso", "libdw", "libelf", "libssl", "libcrypto", "libsystemd", "libatomic",
        "libnghttp", "libresolv", "libutil", "libsqlite3", "libXCTest", "libTesting", "libgio", "libglib",
        // Apple platforms, for payloads from an iOS sender.
        "libsystem_", "libdyld", "libobjc", "CoreFoundation", "UIKitCore", "Foundation", "GraphicsServices", "dyld",
    ]
    public static let systemDirectories = ["/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/libexec/", "/System/"]

    /// Swift modules of the toolchain and of Foundation and Dispatch.
    public static let systemSwiftModules: Set<String> = [
        "Swift", "_Concurrency", "_StringProcessing", "_RegexParser", "Synchronization", "Distributed", "Observation",
        "RegexBuilder", "Cxx", "CxxStdlib", "SwiftOnoneSupport", "_Differentiation", "_Volatile", "_Backtracing", "Runtime",
        "Foundation", "FoundationEssentials", "FoundationInternationalization", "FoundationNetworking", "FoundationXML",
        "_FoundationCShims", "_FoundationCollections", "_FoundationUnicode", "CoreFoundation", "Dispatch", "Glibc", "SwiftGlibc",
        "Musl", "XCTest", "Testing", "__C", "__C_Synthesized",
    ]
    /// This project's modules.
    public static let reporterSwiftModules: Set<String> = [
        "CrashReporting", "CrashReportModel", "CrashSymbolication", "CrashReportingLogging", "CCrashCapture",
    ]
    /// C and C++ names of the runtime, Dispatch, libc and the unwinder.
    static let systemSymbolPrefixes = [
        "swift_", "_swift", "__swift", "swift::", "$ss", "_$ss", "$sS", "_dispatch", "dispatch_", "__dispatch", "_os_",
        "__libc", "__GI_", "__pthread", "pthread_", "__restore_rt", "__sigaction", "__clone", "__cxa", "__gxx", "_Unwind",
        "_ULx86_64", "_Ux86_64", "_ULaarch64", "_Uaarch64", "std::", "__gnu_cxx", "__assert", "__fortify", "__stack_chk",
        "Swift runtime failure: ", "_CF", "__CF", "_NS",
    ]
    static let systemSymbols: Set<String> = ["_start", "start_thread", "clone", "clone3", "abort", "raise", "gsignal", "__abort"]
    static let reporterSymbols: Set<String> = ["start_with_altstack"]
    /// First folders of glibc's own source paths, as its DWARF has them ("nptl/pthread_create.c").
    static let glibcFolders: Set<String> = [
        "nptl", "sysdeps", "csu", "stdlib", "string", "libio", "malloc", "signal", "elf", "misc", "posix", "io", "assert",
        "dlfcn", "setjmp", "iconv", "locale", "stdio-common", "time", "wcsmbs", "resolv", "socket", "login", "debug", "gmon",
        "inet", "intl", "math", "rt", "dirent", "pwd", "grp", "termios", "libc",
    ]

    /// Where a payload frame's code comes from.
    public static func origin(of frame: DiagnosticsPayload.Frame, images: [DiagnosticsPayload.Image]) -> Origin {
        let path = frame.module.flatMap { module -> String? in
            let suffix = "/" + module
            return images.first(where: { $0.path == module || $0.path.hasSuffix(suffix) })?.path
        }
        return origin(function: frame.function, file: frame.file, module: frame.module, modulePath: path)
    }

    /// Where code comes from, by every clue there is: the reporter's if any clue says so, the
    /// system's if any says so, else the app's. `module` is the file name; `modulePath` where it was loaded from.
    public static func origin(function: String?, file: String?, module: String?, modulePath: String?) -> Origin {
        let key = OriginKey(function: function, file: file, module: module, modulePath: modulePath)
        return originMemo.value(for: key, size: key.size) {
            computedOrigin(function: function, file: file, module: module, modulePath: modulePath)
        }
    }

    /// `origin(function:file:module:modulePath:)` worked out, not remembered.
    static func computedOrigin(function: String?, file: String?, module: String?, modulePath: String?) -> Origin {
        let byFile = file.flatMap(origin(ofFile:))
        let byName = function.flatMap(origin(ofFunction:))
        if byFile == .reporter || byName == .reporter { return .reporter }
        if byFile == .system || byName == .system { return .system }
        guard let module, !module.isEmpty else { return byFile == .app || byName == .app ? .app : .system }
        if systemModulePrefixes.contains(where: { module.hasPrefix($0) }) { return .system }
        if let modulePath, systemDirectories.contains(where: { modulePath.hasPrefix($0) }) || modulePath.includes("/usr/lib/swift/") {
            return .system
        }
        return .app
    }

    /// The origin a source path tells, or nil ("<compiler-generated>").
    public static func origin(ofFile file: String) -> Origin? {
        let path = SourcePath.normalised(file)
        if path.isEmpty || path.hasPrefix("<") { return nil }
        for folder in ["CCrashCapture", "CrashReporting", "CrashReportModel", "CrashSymbolication", "CrashReportingLogging"] {
            if path.includes("/Sources/\(folder)/") || path.hasPrefix("Sources/\(folder)/") { return .reporter }
        }
        for marker in ["/swift/stdlib/", "/swift/include/swift/", "/swift-corelibs-", "/swift-foundation/",
                       "/swift-foundation-icu/", "/llvm-project/", "/usr/include/", "/glibc-", "/glibc/"] where path.includes(marker) {
            return .system
        }
        if path.hasPrefix("Swift/") { return .system }   // the runtime's own spelling in fatal messages
        if !path.hasPrefix("/"), let first = path.split(separator: "/").first, glibcFolders.contains(String(first)) { return .system }
        return .app
    }

    /// The origin a function name tells, or nil for a name that says nothing (a C function).
    public static func origin(ofFunction function: String) -> Origin? {
        let name = function.trimmingWhitespace()
        if name.hasPrefix("ccr_") || reporterSymbols.contains(name) || name.hasPrefix("$s14CrashReporting") { return .reporter }
        if systemSymbols.contains(name) || systemSymbolPrefixes.contains(where: { name.hasPrefix($0) }) { return .system }
        guard let module = swiftModule(of: name) else { return nil }
        if reporterSwiftModules.contains(module) { return .reporter }
        if systemSwiftModules.contains(module) { return .system }
        return .app
    }

    /// The module that owns a demangled Swift function: the outermost context's first name
    /// ("closure #1 in Swift.Array.forEach" → Swift; "(extension in App):Swift.Array.f" → App).
    public static func swiftModule(of demangled: String) -> String? {
        var text = SwiftNames.removingDiscriminators(demangled)
        if text.hasPrefix("("),
           let range = text.range(of: #"^\([0-9]+\) (suspend|await) resume partial function for "#, options: .regularExpression) {
            text.removeSubrange(range)
        }
        var stripping = true
        while stripping {
            stripping = false
            for word in ["merged ", "partial apply forwarder for ", "partial apply for ", "@objc ", "specialized ", "dispatch thunk of "]
            where text.hasPrefix(word) {
                text.removeFirst(word.count)
                stripping = true
            }
            for word in ["function signature specialization ", "generic specialization ", "generic partial specialization "]
            where text.hasPrefix(word) {
                var rest = Substring(text.dropFirst(word.count))
                if rest.hasPrefix("<") { rest = rest.dropFirst(SwiftNames.balancedLength(String(rest))) }
                if rest.hasPrefix(" of ") { text = String(rest.dropFirst(4)); stripping = true }
            }
        }
        guard !text.hasPrefix("thunk for ") && !text.hasPrefix("reabstraction thunk") else { return nil }
        var outer = SwiftNames.topLevelSplit(text, " in ").last ?? text
        for word in ["static ", "class "] where outer.hasPrefix(word) { outer.removeFirst(word.count) }
        if outer.hasPrefix("(extension in "), let close = outer.range(of: "):") {
            return String(outer[outer.index(outer.startIndex, offsetBy: 14)..<close.lowerBound])
        }
        let module = outer.prefix(while: { $0.isLetter || $0.isNumber || $0 == "_" })
        guard !module.isEmpty else { return nil }
        let after = outer.dropFirst(module.count)
        // "Module.name…", or a bare module as a top-level closure's context.
        return after.hasPrefix(".") || after.isEmpty && text != outer ? String(module) : nil
    }

    /// In-app: the app's own code (not the system's, the runtime's or the reporter's), wherever linked.
    public static func isInApp(_ frame: DiagnosticsPayload.Frame, images: [DiagnosticsPayload.Image]) -> Bool {
        origin(of: frame, images: images) == .app
    }

    public static func isReporterFunction(_ function: String) -> Bool {
        origin(ofFunction: function) == .reporter
    }

    // MARK: Names

    /// The name a person reads: `swift-demangle --simplified`'s form of a Swift name
    /// ("Pagination.pageItems(_:)"), other names as they are.
    public static func displayName(_ function: String) -> String {
        let simplified = SwiftNames.simplified(function)
        // swift-demangle prints a top-level closure's context as nothing ("closure #5 in "): name the module.
        guard simplified.hasSuffix(" in "), let module = swiftModule(of: function) else { return simplified }
        return simplified + module
    }

    /// The name that goes into a signature: the display name of the function a wrapper wraps
    /// (specialisations, partial applies, merged and outlined functions, async resume points),
    /// without what varies between builds (closure ordinals, generic parameters, offsets, "at
    /// file:line"); nil for glue that wraps no function of its own (thunks, witnesses, value
    /// operations) and for an address.
    public static func groupingName(_ name: String) -> String? {
        groupingNameMemo.value(for: ExactText(name), size: name.utf8.count) { computedGroupingName(name) }
    }

    /// `groupingName(_:)` worked out, not remembered.
    static func computedGroupingName(_ name: String) -> String? {
        var text = name.trimmingWhitespace()
        if text.includes(" + "), let plus = text.range(of: " + ", options: .backwards) { text = String(text[..<plus.lowerBound]) }
        // Each regular expression only behind the literal it cannot match without.
        if text.includes(" at ") { text = replacing(text, Patterns.location, with: "") }   // "at file:line"
        text = displayName(text)
        var stripping = true
        while stripping {
            stripping = false
            for word in ["specialized ", "partial apply for ", "@objc ", "merged "] where text.hasPrefix(word) {
                text.removeFirst(word.count)
                stripping = true
            }
        }
        for glue in ["thunk for ", "dispatch thunk of ", "protocol witness for ", "outlined ", "type metadata", "lazy protocol witness",
                     "base witness table", "associated type witness", "key path ", "default argument "] where text.hasPrefix(glue) {
            if glue == "outlined ", let of = text.range(of: #"^outlined variable #[0-9]+ of "#, options: .regularExpression) {
                text = String(text[of.upperBound...])
                break
            }
            return nil
        }
        if text.includes(" for "), text.range(of: #"^[A-Za-z]+ for "#, options: .regularExpression) != nil { return nil }   // value witnesses
        text = removingGenericArguments(text)
        if text.includes("implicit closure") { text = text.replacingOccurrences(of: "implicit closure", with: "closure") }
        if text.includes("#") { text = replacing(text, Patterns.ordinal, with: "") }    // closure #2 in → closure in
        if text.includes("0x") { text = replacing(text, Patterns.address, with: "") }
        text = text.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        if text.includes(" (") { text = text.replacingOccurrences(of: " (", with: "(") }   // "groups #1 (_:)" → "groups(_:)"
        return text.isEmpty ? nil : text
    }

    /// Array<Int>.subscript and Array<String>.subscript are one place in the code. Keeps "->" and
    /// comparison operators ("static Swift.Int.< infix") intact by requiring an identifier before "<".
    public static func removingGenericArguments(_ text: String) -> String {
        var result = ""
        var depth = 0
        var previous: Character = " "
        for character in text {
            if character == "<", depth > 0 || previous.isLetter || previous.isNumber || previous == "_" || previous == ">" {
                depth += 1
            } else if character == ">", depth > 0, previous != "-" {
                depth -= 1
            } else if depth == 0 {
                result.append(character)
            }
            previous = character
        }
        return result
    }

    // MARK: Remembered answers

    /// A string as a memo's key, compared and hashed by its UTF-8 bytes. Swift's `==` and hashing
    /// treat canonically equivalent spellings as one string ("\u{212A}" is "K"), but the grouping
    /// reads bytes and `groupingName` copies them: keyed by `String`, the first spelling seen
    /// would be every later equivalent one's answer, and another app's signature with it.
    struct ExactText: Hashable {
        var text: String?

        init(_ text: String?) { self.text = text }

        static func == (a: Self, b: Self) -> Bool {
            switch (a.text, b.text) {
            case (nil, nil): return true
            case (let x?, let y?): return x.utf8.elementsEqual(y.utf8)
            default: return false
            }
        }

        func hash(into hasher: inout Hasher) {
            guard var text else { return hasher.combine(-1) }
            hasher.combine(text.utf8.count)
            text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }
    }

    /// The four clues `origin(function:file:module:modulePath:)` reads.
    struct OriginKey: Hashable {
        var function: ExactText
        var file: ExactText
        var module: ExactText
        var modulePath: ExactText

        init(function: String?, file: String?, module: String?, modulePath: String?) {
            self.function = ExactText(function)
            self.file = ExactText(file)
            self.module = ExactText(module)
            self.modulePath = ExactText(modulePath)
        }

        var size: Int { [function, file, module, modulePath].reduce(0) { $0 + ($1.text?.utf8.count ?? 0) } }
    }

    /// Grouping runs for every report the collector receives, and the same crash sites come back
    /// in report after report: the names' and origins' answers are remembered. Each took string
    /// work per frame (demangled-name simplification, prefix lists): 7.6 % of the collector's CPU
    /// under tools/bench-collector (Decision 0054).
    static let originMemo = Memo<OriginKey, Origin>()
    static let groupingNameMemo = Memo<ExactText, String?>()

    /// Answers of a pure function, remembered: at most `capacity` of them, and only for inputs of
    /// at most `maximumSize` bytes, so that a sender of ever-new or huge names costs a bounded
    /// table and no more than the work itself. Full, it starts again empty (the crash sites in use
    /// come back at once).
    final class Memo<Key: Hashable, Value>: @unchecked Sendable {
        // @unchecked: `answers` is only touched under `lock`.
        let capacity: Int
        let maximumSize: Int
        private let lock = NSLock()
        private var answers: [Key: Value] = [:]

        init(capacity: Int = 4096, maximumSize: Int = 2048) {
            self.capacity = capacity
            self.maximumSize = maximumSize
        }

        var count: Int { lock.withLock { answers.count } }

        func value(for key: Key, size: Int, _ compute: () -> Value) -> Value {
            guard size <= maximumSize else { return compute() }
            if let known = lock.withLock({ answers[key] }) { return known }
            let value = compute()
            lock.withLock {
                if answers.count >= capacity { answers.removeAll(keepingCapacity: true) }
                answers[key] = value
            }
            return value
        }
    }

    /// Compiled once: grouping runs for every report the collector receives and every Sentry
    /// event sent, and compiling from the pattern text on each call was ~10 % of ingest (perf).
    private enum Patterns {
        static let location = compile(" at (0x[0-9a-fA-F]+|[^ ]+:[0-9]+(:[0-9]+)?)")
        static let ordinal = compile("#[0-9]+")
        static let address = compile("0x[0-9a-fA-F]+")
        static let number = compile("[0-9]+")

        private static func compile(_ pattern: String) -> NSRegularExpression? {
            try? NSRegularExpression(pattern: pattern)
        }
    }

    private static func replacing(_ text: String, _ expression: NSRegularExpression?, with replacement: String) -> String {
        guard let expression else { return text }
        return expression.stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text), withTemplate: replacement)
    }

    private static func stripNumbers(_ text: String) -> String {
        replacing(replacing(text, Patterns.address, with: "<addr>"), Patterns.number, with: "<n>")
    }

    private static func clipped(_ text: String, to length: Int = 200) -> String {
        text.count <= length ? text : String(text.prefix(length - 1)) + "…"
    }
}

extension CrashReport {
    /// The report as the grouping rule reads it: its kind, exception, the crashed thread's frames
    /// and the images, spelled as in an uploaded payload (what crashtool signs with the collector's rule).
    public var groupingEntry: DiagnosticsPayload.CrashReportEntry {
        let kind = nonFatalError != nil ? "non_fatal" : termination != nil ? "abnormal_termination" : hang != nil ? "hang" : "crash"
        let type = nonFatalError.map { "\($0.domain) \($0.code)" }
            ?? (termination != nil ? "abnormal_termination" : hang != nil ? "hang" : signal?.name ?? "unknown")
        let message = nonFatalError?.message ?? (reason.hasPrefix(type + ": ") ? String(reason.dropFirst(type.count + 2)) : reason)
        let frames = crashedThread.frames.map { frame in
            DiagnosticsPayload.Frame(index: frame.index, address: frame.address.description, module: frame.module.map(fileName(of:)),
                                     module_offset: frame.moduleOffset?.description, build_id: nil, function: frame.function,
                                     file: frame.file, line: frame.line, column: frame.column, inlined: frame.isInlined)
        }
        return .init(timestamp: "", exception_type: type, exception_message: message, stack_trace: [],
                     thread_info: [.init(id: Int(crashedThread.id), name: crashedThread.name, crashed: true, is_main: crashedThread.isMain,
                                         frames: frames)],
                     report_id: recordID, kind: kind, symbolicated: true, is_partial: isPartial,
                     images: images.map { .init(path: $0.path, build_id: $0.buildID.hex, start: $0.start.description,
                                                end: $0.end.description, bias: $0.bias.description) },
                     termination: termination.map { .init(kind: $0.kind) })
    }
}
