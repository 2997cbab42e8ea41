// `crashtool split-debug`: keep a binary's debug info in a build-id store, ship it stripped.
// The store (`DIR/.build-id/xx/yyyy.debug`) is what `--debug-dir DIR` reads, what libdwfl finds,
// and what `debuginfod -F DIR` serves.
import ArgumentParser
import CrashReportModel
import Foundation

struct SplitDebug: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "split-debug",
        abstract: "Move a binary's debug info into DIR/.build-id/xx/yyyy.debug, strip the binary, add a debuglink.")

    @Argument(help: "The ELF binary (executable or shared library) to split; it is stripped in place.")
    var binary: String

    @Option(help: "The debug store folder.")
    var store: String

    @Flag(help: "Keep the symbol table in the binary (strip debug info only).")
    var keepSymbols = false

    func run() throws {
        guard let buildID = BuildID(elfFileAtPath: binary) else {
            printError("crashtool: \(binary): not an ELF file with a GNU build-id (link with -Wl,--build-id)")
            throw ExitCode(1)
        }
        let hex = buildID.hex
        let folder = URL(fileURLWithPath: store).appendingPathComponent(".build-id").appendingPathComponent(String(hex.prefix(2)))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let debugFile = folder.appendingPathComponent(String(hex.dropFirst(2)) + ".debug").path
        try tool("objcopy", ["--only-keep-debug", binary, debugFile])
        try tool("strip", [keepSymbols ? "--strip-debug" : "--strip-all", binary])
        try tool("objcopy", ["--add-gnu-debuglink=\(debugFile)", binary])
        guard BuildID(elfFileAtPath: debugFile) == buildID, BuildID(elfFileAtPath: binary) == buildID else {
            printError("crashtool: build-ids differ after splitting \(binary)")
            throw ExitCode(1)
        }
        print("build-id \(hex)")
        print("debug info: \(debugFile)")
        print("stripped:   \(binary)")
    }

    private func tool(_ name: String, _ arguments: [String]) throws {
        let candidates = ["/usr/bin/\(name)", "/opt/swift/usr/bin/llvm-\(name)"]
        guard let path = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            printError("crashtool: \(name) not found (install binutils)")
            throw ExitCode(1)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            printError("crashtool: \(name) \(arguments.joined(separator: " ")) failed with status \(process.terminationStatus)")
            throw ExitCode(1)
        }
    }
}
