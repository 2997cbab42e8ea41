// The toolchain's llvm-symbolizer as an independent oracle: it turns a record's frames into
// function / file / line, inline frames included, with no code of this project involved.
import CrashReportModel
import Foundation

public struct SymbolizedLocation: Equatable {
    public var function: String
    /// The name as the binary has it (mangled for Swift).
    public var linkageName: String
    public var file: String
    public var line: Int
}

public struct SymbolizedFrame {
    public var index: Int
    public var module: String
    /// Innermost inline frame first; the last entry is the function that owns the address.
    public var locations: [SymbolizedLocation]

    public func mentions(_ name: String) -> Bool {
        locations.contains { $0.function.contains(name) } || module.hasSuffix("/" + name) || module.contains(name + ".so")
    }
}

public enum LLVMSymbolizer {
    public static var path: String? {
        let candidates = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/llvm-symbolizer" }
            + ["/opt/swift/usr/bin/llvm-symbolizer"]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    public static func symbolize(_ record: CrashRecord) throws -> [SymbolizedFrame] {
        guard let tool = path else { throw TestSupportError("llvm-symbolizer not found (it ships with the Swift toolchain)") }
        var input: [String] = []
        var modules: [String] = []
        for frame in record.frames {
            let lookup = frame.lookupAddress
            if let module = record.module(containing: lookup), FileManager.default.fileExists(atPath: module.path) {
                input.append("\"\(module.path)\" \(module.fileAddress(of: lookup))")
                modules.append(module.path)
            } else {
                input.append("\"/nonexistent\" 0x0")
                modules.append(record.module(containing: lookup)?.path ?? "?")
            }
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = ["--output-style=JSON", "--inlining", "--functions=linkage"]
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        let collector = OutputCollector(stdout.fileHandleForReading)
        stdin.fileHandleForWriting.write(Data(input.joined(separator: "\n").utf8))
        try stdin.fileHandleForWriting.close()
        process.waitUntilExit()
        let lines = collector.text().split(separator: "\n")
        guard lines.count == record.frames.count else {
            throw TestSupportError("llvm-symbolizer answered \(lines.count) lines for \(record.frames.count) frames")
        }
        let symbolized: [SymbolizedFrame] = try zip(record.frames, lines).enumerated().map { offset, pair in
            let object = try JSONSerialization.jsonObject(with: Data(pair.1.utf8)) as? [String: Any]
            let symbols = object?["Symbol"] as? [[String: Any]] ?? []
            let locations = symbols.map {
                SymbolizedLocation(function: $0["FunctionName"] as? String ?? "", linkageName: $0["FunctionName"] as? String ?? "",
                                   file: $0["FileName"] as? String ?? "",
                                   line: $0["Line"] as? Int ?? 0)
            }
            return SymbolizedFrame(index: pair.0.index, module: modules[offset], locations: locations)
        }
        return try demangled(symbolized)
    }

    /// Swift linkage names through the toolchain's swift-demangle (mangling compresses repeated
    /// words, so "forceCrash" is not a substring of its mangled name).
    public static func demangled(_ frames: [SymbolizedFrame]) throws -> [SymbolizedFrame] {
        let names = frames.flatMap { $0.locations.map(\.function) }
        guard !names.isEmpty else { return frames }
        guard let symbolizer = path else { throw TestSupportError("llvm-symbolizer not found") }
        let tool = URL(fileURLWithPath: symbolizer).deletingLastPathComponent().appendingPathComponent("swift-demangle")
        let process = Process()
        process.executableURL = FileManager.default.isExecutableFile(atPath: tool.path) ? tool : URL(fileURLWithPath: "/opt/swift/usr/bin/swift-demangle")
        process.arguments = ["--simplified"]
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        let collector = OutputCollector(stdout.fileHandleForReading)
        stdin.fileHandleForWriting.write(Data((names.joined(separator: "\n") + "\n").utf8))
        try stdin.fileHandleForWriting.close()
        process.waitUntilExit()
        var plain = collector.text().split(separator: "\n", omittingEmptySubsequences: false).map(String.init).makeIterator()
        return frames.map { frame in
            var frame = frame
            frame.locations = frame.locations.map { location in
                var location = location
                location.function = plain.next() ?? location.function
                return location
            }
            return frame
        }
    }
}
