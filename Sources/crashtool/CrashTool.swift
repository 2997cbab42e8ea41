// crashtool: symbolicates crash records offline by build-id, shows and lists them, and prepares
// separate debug files (the Linux analog of uploading dSYMs).
import ArgumentParser
import Foundation
import Glibc

@main
struct CrashTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crashtool",
        abstract: "Symbolicate, show and list crash records; split debug info out of binaries.",
        subcommands: [Symbolicate.self, Show.self, List.self, Requeue.self, SplitDebug.self, BenchSymbolicate.self]
    )

    /// `crashtool symbolicate <files> [--debug-dir D]… [--format F] [--no-system-debug]`, the
    /// command run in loops over many records, skips ArgumentParser: its parse (reflection over
    /// every subcommand, the completion-script check) was a quarter of a whole short run
    /// (perf, tools/bench-symbolicate). Anything else — help, errors, other commands — goes through it.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let options = Symbolicate.parsedQuickly(arguments) {
            do {
                try Symbolicate.run(options)
                Glibc.exit(0)
            } catch {
                exit(withError: error)
            }
        }
        main(arguments)
    }
}

/// Writes one line to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
