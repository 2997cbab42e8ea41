// Crash signatures: which issue a report belongs to, for the collector (issues) and the Sentry
// transport (fingerprint) alike. Crashlytics-like: the top three in-app
// symbolicated frames of the crashed thread, with what varies between builds and runs stripped
// (addresses, offsets, line numbers, closure numbers, generic arguments). Reports without such
// frames fall back to the exception type and the top frame's module + offset, which is stable for
// one build (ASLR moves addresses, not offsets).
import Foundation

public enum CrashGrouping {
    /// What groups reports into one issue, and how the issue is titled.
    public struct IssueKey: Sendable, Equatable {
        public var signature: String
        public var title: String
        public var subtitle: String
        public var exceptionType: String

        public init(signature: String, title: String, subtitle: String, exceptionType: String) {
            self.signature = signature
            self.title = title
            self.subtitle = subtitle
            self.exceptionType = exceptionType
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
        let images = report.images
        let appFrames = frames.filter { isInApp($0, images: images) }
        let symbols = appFrames.compactMap { $0.function.flatMap(normalisedFunction) }
        // A non-fatal error's type (domain and code) is part of what went wrong at the same call site.
        let prefix = report.kind == "crash" ? "crash" : "\(report.kind)|\(report.exception_type)"
        if !symbols.isEmpty {
            let top = Array(symbols.prefix(framesInSignature))
            return IssueKey(signature: "\(prefix)|" + top.joined(separator: " < "), title: clipped(top[0]),
                            subtitle: subtitle, exceptionType: report.exception_type)
        }
        // Unsymbolicated: module + offset of the first in-app frame, else of the first frame that has one.
        if let frame = (appFrames + frames).first(where: { $0.module != nil && $0.module_offset != nil }),
           let module = frame.module, let offset = frame.module_offset {
            let place = "\(module) + \(offset)"
            return IssueKey(signature: "\(report.kind)|\(report.exception_type)|\(place)", title: place,
                            subtitle: subtitle, exceptionType: report.exception_type)
        }
        let message = stripNumbers(report.exception_message)
        return IssueKey(signature: "\(report.kind)|\(report.exception_type)|\(message)", title: clipped(report.exception_type),
                        subtitle: subtitle, exceptionType: report.exception_type)
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

    // MARK: In-app frames

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

    /// In-app: the frame's module is the program's own binary or one of its own libraries, and
    /// the function is not the crash reporter's (it is linked into the app, but never the bug).
    public static func isInApp(_ frame: DiagnosticsPayload.Frame, images: [DiagnosticsPayload.Image]) -> Bool {
        guard let module = frame.module, !module.isEmpty else { return false }
        if systemModulePrefixes.contains(where: { module.hasPrefix($0) }) { return false }
        if let image = images.first(where: { $0.path == module || $0.path.hasSuffix("/" + module) }),
           systemDirectories.contains(where: { image.path.hasPrefix($0) }) || image.path.contains("/usr/lib/swift/") {
            return false
        }
        if let function = frame.function, isReporterFunction(function) { return false }
        return true
    }

    public static func isReporterFunction(_ function: String) -> Bool {
        function.hasPrefix("ccr_") || function.contains("CrashReporting.") || function.hasPrefix("$s14CrashReporting")
    }

    // MARK: Normalising function names

    /// The function name without what changes between builds and runs; nil when nothing is left
    /// (an address is no name).
    public static func normalisedFunction(_ name: String) -> String? {
        var text = name.trimmingCharacters(in: .whitespaces)
        for prefix in ["generic specialization ", "specialized ", "partial apply for ", "merged ", "reabstraction thunk helper ",
                       "thunk for ", "outlined copy of ", "@objc "] {
            while text.hasPrefix(prefix) {
                text.removeFirst(prefix.count)
                if prefix == "generic specialization ", text.hasPrefix("<") {
                    text = String(text.dropFirst(balancedLength(text)))
                    if text.hasPrefix(" of ") { text.removeFirst(4) }
                }
            }
        }
        if let plus = text.range(of: " + ", options: .backwards) { text = String(text[..<plus.lowerBound]) }
        text = removingGenericArguments(text)
        text = replacing(text, Patterns.location, with: "")   // "at file:line"
        text = replacing(text, Patterns.ordinal, with: "")    // closure #2 in → closure in
        text = replacing(text, Patterns.address, with: "")
        text = text.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        return text.isEmpty ? nil : text
    }

    private static func balancedLength(_ text: String) -> Int {
        var depth = 0
        for (offset, character) in text.enumerated() {
            if character == "<" { depth += 1 }
            if character == ">" { depth -= 1; if depth == 0 { return offset + 1 } }
        }
        return text.count
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
