// The crash-reporting middleware's own work per request, without a server: RequestReporter.begin
// (screen view, slot in flight) and .end (slot freed, the "http" breadcrumb with its metadata) as
// CrashReportingHummingbird and CrashReportingVapor call them, on 1 and 2 threads, against a loop
// that only picks the same strings (the baseline measured in the same run). Run by
// tools/bench-middleware before the servers; release build. Usage: RequestReporterBenchmark
// <reports-directory> [requests per thread = 1_000_000]
import CrashReporting
import CrashReportingServerCore
import Foundation
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: RequestReporterBenchmark <reports-directory> [requests per thread]\n".utf8))
    exit(2)
}
let perThread = arguments.count > 2 ? Int(arguments[2]) ?? 1_000_000 : 1_000_000
var configuration = CrashReporter.Configuration(appID: "com.example.request-reporter-benchmark", reportsDirectory: arguments[1])
configuration.hangs = nil
configuration.upload.isEnabled = false   // nothing to send: the figures only
try CrashReporter.start(configuration)

let reporter = RequestReporter(options: RequestReportingOptions())
// Request ids as servers make them (36-character UUID strings), made before timing.
let ids = (0..<64).map { _ in UUID().uuidString }
let trace = TraceIdentity(traceID: "4bf92f3577b34da6a3ce929d0e0e4736", spanID: "00f067aa0ba902b7")
let sink = Atomic<Int>(0)

/// Nanoseconds per request over `threads` threads doing `perThread` requests each.
func measure(threads: Int, work: @escaping @Sendable (Int) -> Int) -> Double {
    let start = ContinuousClock.now
    let group = DispatchGroup()
    for _ in 0..<threads {
        DispatchQueue.global().async(group: group) {
            var local = 0
            for i in 0..<perThread { local &+= work(i) }
            sink.add(local, ordering: .relaxed)
        }
    }
    group.wait()
    let elapsed = ContinuousClock.now - start
    let ns = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
    return ns / Double(perThread)   // per request on each thread: what one request costs its thread
}

@Sendable func baseline(_ i: Int) -> Int { ids[i & 63].utf8.count }
@Sendable func withoutTrace(_ i: Int) -> Int {
    let reported = reporter.begin(method: "GET", route: "/users/:id", requestID: ids[i & 63], trace: nil)
    reporter.end(reported, status: 200, error: nil)
    return 1
}
@Sendable func withTrace(_ i: Int) -> Int {
    let reported = reporter.begin(method: "GET", route: "/users/:id", requestID: ids[i & 63], trace: trace)
    reporter.end(reported, status: 200, error: nil)
    return 1
}

_ = measure(threads: 1, work: withoutTrace)   // warm-up: rings chosen, code paged in
for threads in [1, 2] {
    let base = measure(threads: threads, work: baseline)
    let plain = measure(threads: threads, work: withoutTrace)
    let traced = measure(threads: threads, work: withTrace)
    print(String(format: "request bookkeeping, %d thread%@: begin + end %.0f ns a request (%.0f ns with a trace id); the loop alone %.0f ns",
                 threads, threads == 1 ? "" : "s", plain - base, traced - base, base))
}
_ = CrashReporter.shutdown()
