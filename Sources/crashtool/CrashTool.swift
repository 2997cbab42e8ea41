// crashtool: symbolicates crash records offline by build-id, shows and lists them, and prepares
// separate debug files (the Linux analog of uploading dSYMs).
import ArgumentParser
import Foundation

@main
struct CrashTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crashtool",
        abstract: "Symbolicate, show and list crash records; split debug info out of binaries.",
        subcommands: [Symbolicate.self, Show.self, List.self, SplitDebug.self, BenchSymbolicate.self]
    )
}

/// Writes one line to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
