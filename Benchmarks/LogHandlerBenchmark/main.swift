// What a swift-log record costs the logging thread: CrashReportingLogHandler (breadcrumbs only; and
// with a redactor on the caller's thread, as before redaction moved to the upload) beside a no-op
// handler and StreamLogHandler writing to /dev/null, in the same run. Prints figures and ratios;
// not a test. Usage: LogHandlerBenchmark <reports-directory> [records per round] [rounds]
import CrashReporting
import CrashReportingLogging
import Foundation
import Logging

struct NoOpHandler: LogHandler {
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {}
}

let arguments = CommandLine.arguments
let directory = arguments.count > 1 ? arguments[1] : NSTemporaryDirectory() + "log-handler-bench"
let perRound = arguments.count > 2 ? Int(arguments[2]) ?? 20_000 : 20_000
let rounds = arguments.count > 3 ? Int(arguments[3]) ?? 7 : 7
try CrashReporter.start(.init(appID: "com.example.bench", reportsDirectory: directory, upload: .disabled))

// /dev/null as a FILE*, for StreamLogHandler's text output.
nonisolated(unsafe) let devNull = fopen("/dev/null", "w")!
struct DevNullStream: TextOutputStream {
    mutating func write(_ string: String) { fputs(string, devNull) }
}

let handlers: [(String, (String) -> any LogHandler)] = [
    ("no-op handler", { _ in NoOpHandler() }),
    ("StreamLogHandler's format to /dev/null", { label in DevNullHandler(label: label) }),
    ("CrashReportingLogHandler", { label in CrashReportingLogHandler(label: label) }),
    ("CrashReportingLogHandler, redactor on the caller's thread", { label in CrashReportingLogHandler(label: label, redactor: .seed000) }),
]

/// StreamLogHandler's kind of work (merge metadata, format a line with a timestamp, write it),
/// to /dev/null: StreamLogHandler itself writes only to standard output or error.
struct DevNullHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        var stream = DevNullStream()
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        let text = merged.isEmpty ? "" : " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        stream.write("\(Date()) \(event.level) \(label):\(text) [\(event.source)] \(event.message)\n")
    }
}

func nanosecondsPerRecord(_ make: (String) -> any LogHandler) -> Double {
    let logger = Logger(label: "bench") { make($0) }
    var samples: [Double] = []
    for round in 0..<rounds {
        let start = ContinuousClock.now
        for n in 0..<perRound {
            logger.info("order \(n) shipped to the warehouse in round \(round)", metadata: ["order": "\(n)", "region": "eu-west-1"])
        }
        let elapsed = ContinuousClock.now - start
        samples.append((Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9) / Double(perRound))
    }
    return samples.sorted()[samples.count / 2]
}

print("one info record with 2 metadata values, \(perRound) records × \(rounds) rounds, median ns per record:")
var figures: [String: Double] = [:]
for (name, make) in handlers {
    let perRecord = nanosecondsPerRecord(make)
    figures[name] = perRecord
    print("  " + name.padding(toLength: 58, withPad: " ", startingAt: 0) + String(format: "%10.1f ns", perRecord))
}
let noOp = figures["no-op handler"]!
let ours = figures["CrashReportingLogHandler"]!
print(String(format: "CrashReportingLogHandler: %.2f µs per record (target ≤ 1 µs), %.2f× the no-op handler (target ≤ 2×), %.2f× StreamLogHandler's format to /dev/null",
             ours / 1000, ours / noOp, ours / figures["StreamLogHandler's format to /dev/null"]!))
print(String(format: "with a redactor on the caller's thread: %.1f µs per record (%.0f× without)",
             figures["CrashReportingLogHandler, redactor on the caller's thread"]! / 1000,
             figures["CrashReportingLogHandler, redactor on the caller's thread"]! / ours))
