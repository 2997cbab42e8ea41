// `crashtool symbolicate`: records (or Swift backtracer JSON files) → readable reports.
import ArgumentParser
import CrashReportModel
import CrashSymbolication
import Foundation
import Glibc

struct Symbolicate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "symbolicate",
        abstract: "Symbolicate crash records by build-id: function, file:line:column, inlined frames.",
        discussion: """
            Debug info is searched in order: the module at its recorded path (when its build-id \
            matches), each --debug-dir (plain and .build-id/xx/yyyy.debug trees), /usr/lib/debug, \
            then debuginfod when DEBUGINFOD_URLS is set. Also reads the JSON that Swift's own \
            backtracer writes (SWIFT_BACKTRACE=enable=yes,format=json).
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Argument(help: "Crash record files (.crash) or Swift backtracer JSON files.")
    var records: [String]

    @Option(name: .customLong("debug-dir"), help: "A folder with debug files or binaries (repeatable).")
    var debugDirectories: [String] = []

    @Option(help: "Output format.")
    var format: Format = .text

    @Flag(help: "Do not search /usr/lib/debug.")
    var noSystemDebug = false

    /// The usual form of the command, read without ArgumentParser; nil for anything else.
    static func parsedQuickly(_ arguments: [String]) -> Options? {
        guard arguments.first == "symbolicate" else { return nil }
        var records: [String] = [], directories: [String] = [], format = Format.text, noSystemDebug = false
        var index = 1
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--debug-dir" || argument == "--format" {
                guard index + 1 < arguments.count else { return nil }
                let value = arguments[index + 1]
                if argument == "--debug-dir" { directories.append(value) } else {
                    guard let parsed = Format(rawValue: value) else { return nil }
                    format = parsed
                }
                index += 2
                continue
            }
            if argument.hasPrefix("--debug-dir=") {
                directories.append(String(argument.dropFirst("--debug-dir=".count)))
            } else if argument.hasPrefix("--format="), let parsed = Format(rawValue: String(argument.dropFirst("--format=".count))) {
                format = parsed
            } else if argument == "--no-system-debug" {
                noSystemDebug = true
            } else if argument.hasPrefix("-") {
                return nil   // help, a typo, `--`: ArgumentParser explains
            } else {
                records.append(argument)
            }
            index += 1
        }
        guard !records.isEmpty else { return nil }
        return Options(records: records, debugDirectories: directories, format: format, noSystemDebug: noSystemDebug)
    }

    /// The command's inputs as plain values (building the ParsableCommand itself costs its
    /// property wrappers' setup).
    struct Options {
        var records: [String]
        var debugDirectories: [String]
        var format: Format
        var noSystemDebug: Bool
    }

    func run() throws {
        try Self.run(Options(records: records, debugDirectories: debugDirectories, format: format, noSystemDebug: noSystemDebug))
    }

    static func run(_ options: Options) throws {
        let (records, debugDirectories, format, noSystemDebug) = (options.records, options.debugDirectories, options.format, options.noSystemDebug)
        let symbolicator = Symbolicator(locator: DebugFileLocator(options: .init(
            debugDirectories: debugDirectories, useSystemDebugDirectory: !noSystemDebug)))
        let showProgress = records.count > 1 && isatty(STDERR_FILENO) == 1
        var failures = 0
        var reports: [CrashReport] = []
        for (index, path) in records.enumerated() {
            if showProgress {
                FileHandle.standardError.write(Data("\r\u{1B}[K[\(index + 1)/\(records.count)] \(fileName(of: path))".utf8))
            }
            do {
                let (record, note) = try SessionJoin.load(path)
                if let note { printError("\(path): \(note.replacingOccurrences(of: "Context:   ", with: "context "))") }
                let report = symbolicator.symbolicate(record)
                switch format {
                case .text:
                    if showProgress { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
                    print(report.text)
                case .json:
                    reports.append(report)
                }
            } catch let error as CrashRecordError {
                if showProgress { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
                printError("crashtool: \(error)")
                failures += 1
            }
        }
        if showProgress { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        if format == .json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            encoder.dateEncodingStrategy = Timestamp.encodingStrategy
            let data = try records.count == 1 && reports.count == 1 ? encoder.encode(reports[0]) : encoder.encode(reports)
            print(String(decoding: data, as: UTF8.self))
        }
        if failures > 0 { throw ExitCode(1) }
    }
}

/// Warm in-process symbolication time, for tools/bench-symbolicate (hidden).
struct BenchSymbolicate: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "bench-symbolicate", shouldDisplay: false)

    @Argument var record: String
    @Option var iterations = 200

    func run() throws {
        let loaded = try CrashRecord.load(contentsOf: URL(fileURLWithPath: record))
        let symbolicator = Symbolicator()
        let clock = ContinuousClock()
        let cold = clock.measure { _ = symbolicator.symbolicate(loaded) }
        var samples: [Duration] = []
        for _ in 0..<iterations {
            samples.append(clock.measure { _ = symbolicator.symbolicate(loaded) })
        }
        samples.sort()
        func microseconds(_ duration: Duration) -> Double {
            Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
        }
        print(String(format: "frames %d  first %.1f us  warm median %.1f us  warm p90 %.1f us",
                     loaded.frames.count, microseconds(cold), microseconds(samples[samples.count / 2]),
                     microseconds(samples[samples.count * 9 / 10])))
    }
}
