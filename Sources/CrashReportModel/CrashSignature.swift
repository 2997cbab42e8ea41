// What makes two crashes "the same": the top in-app symbolicated frames, with addresses, line
// numbers and closure ordinals stripped, so a rebuilt binary or a moved line groups with the old
// ones. Shared by the collector (issues) and the Sentry transport (fingerprint).
import Foundation

extension DiagnosticsPayload.Frame {
    /// Modules of the system and the toolchain: their frames are not the app's code.
    public static func isSystemModule(_ module: String) -> Bool {
        let name = module.split(separator: "/").last.map(String.init) ?? module
        if module.hasPrefix("/usr/") || module.hasPrefix("/lib") || module.hasPrefix("/opt/swift") { return true }
        let prefixes = ["libswift", "libFoundation", "lib_Foundation", "libdispatch", "libBlocksRuntime", "libc.so", "libc-",
                        "libm.so", "libstdc++", "libgcc", "ld-linux", "libpthread", "libdl.so", "librt.so", "libicu",
                        "libunwind", "libdw", "libelf", "libcurl", "libz.so", "libxml2", "linux-vdso"]
        return prefixes.contains { name.hasPrefix($0) }
    }

    public var isInApp: Bool { module.map { !Self.isSystemModule($0) } ?? false }
}

extension DiagnosticsPayload.CrashReportEntry {
    /// A stable group key: "SIGSEGV|level3()|level2()|level1()"; without symbols, the exception
    /// type and the innermost module + offset.
    public var signature: String {
        let frames = thread_info.first?.frames ?? []
        let named = frames.filter { $0.isInApp && $0.function != nil }.prefix(3).map { Self.normalized($0.function!) }
        let head = error.map { "\($0.domain) \($0.code)" } ?? exception_type
        if !named.isEmpty { return ([head] + named).joined(separator: "|") }
        if let first = frames.first(where: { $0.isInApp }) ?? frames.first {
            return "\(head)|\(first.module ?? "?")+\(first.module_offset ?? first.address)"
        }
        return head + "|" + kind
    }

    /// Function names without what changes between builds of the same code.
    static func normalized(_ function: String) -> String {
        var text = function
        for (pattern, replacement) in [(#"0x[0-9a-fA-F]+"#, "0x?"), (#"#\d+"#, "#?"), (#"\s+"#, " ")] {
            text = text.replacingOccurrences(of: pattern, with: replacement, options: .regularExpression)
        }
        return text
    }
}
