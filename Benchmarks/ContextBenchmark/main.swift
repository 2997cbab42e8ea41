// Benchmark of the context API's hot paths (prints figures; not a timed test). Run by
// tools/bench-context in a release build. Baseline in the same run: a Mutex<[String]> ring of 500.
import CrashReporting
import Foundation
import Synchronization

func residentBytes() -> Int {
    let fields = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8))?.split(separator: " ") ?? []
    return (fields.count > 1 ? Int(fields[1]) ?? 0 : 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// RssAnon, RssFile and RssShmem of /proc/self/status, in bytes: private memory apart from pages
/// of mapped files (shared library code touched for the first time, the session file).
func residentParts() -> (anonymous: Int, file: Int, shared: Int) {
    let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    func kilobytes(_ key: String) -> Int {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key + ":") }) else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }
    return (kilobytes("RssAnon"), kilobytes("RssFile"), kilobytes("RssShmem"))
}

/// Resident bytes per mapped file ("[anonymous]" for the rest) in a copy of /proc/PID/smaps:
/// which libraries' pages start() touches for the first time.
func residentByMapping(_ smaps: String) -> [String: Int] {
    let text = (try? String(contentsOfFile: smaps, encoding: .utf8)) ?? ""
    var result: [String: Int] = [:]
    var current = "[anonymous]"
    for line in text.split(separator: "\n") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard let first = fields.first else { continue }
        if first.contains("-"), first.allSatisfy({ $0.isHexDigit || $0 == "-" }) {
            current = fields.count >= 6 ? fields[5...].joined(separator: " ") : "[anonymous]"
        } else if first == "Rss:", fields.count >= 2, let kilobytes = Int(fields[1]) {
            result[current, default: 0] += kilobytes * 1024
        }
    }
    return result
}

/// Copies this process's /proc/self/smaps to a file with /bin/cat, spawned: parsing it here would
/// itself touch library pages and change what is measured. The arguments are made beforehand.
struct SmapsCopy: @unchecked Sendable {   // used on the main thread only
    let path: String
    let argv: [UnsafeMutablePointer<CChar>?]
    init(_ path: String) {
        self.path = path
        argv = [strdup("/bin/cat"), strdup("/proc/\(getpid())/smaps"), nil]
    }
    func take() {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var child = pid_t()
        if posix_spawn(&child, argv[0]!, &actions, nil, argv, environ) == 0 {
            var status: Int32 = 0
            waitpid(child, &status, 0)
        }
        posix_spawn_file_actions_destroy(&actions)
    }
}

func nanoseconds(_ body: () -> Void) -> Double {
    let start = ContinuousClock.now
    body()
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
}

/// The obvious alternative: a lock around an array used as a ring.
final class MutexRing: Sendable {
    struct Storage {
        var items = [String](repeating: "", count: 500)
        var next = 0
    }
    let storage = Mutex(Storage())
    func append(_ message: String) {
        storage.withLock {
            $0.items[$0.next % 500] = message
            $0.next += 1
        }
    }
}

/// Median of `rounds` runs of `operations` calls split over `threads` threads: ns per call.
func measure(threads: Int, operations: Int, rounds: Int = 7, _ body: @escaping @Sendable (Int) -> Void) -> Double {
    var samples: [Double] = []
    for _ in 0..<rounds {
        let perThread = operations / threads
        let total = nanoseconds {
            if threads == 1 {
                for index in 0..<perThread { body(index) }
            } else {
                let group = DispatchGroup()
                for _ in 0..<threads {
                    group.enter()
                    Thread.detachNewThread {
                        for index in 0..<perThread { body(index) }
                        group.leave()
                    }
                }
                group.wait()
            }
        }
        samples.append(total / Double(perThread * threads))
    }
    return samples.sorted()[samples.count / 2]
}

let directory = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : NSTemporaryDirectory() + "/bench-context-\(getpid())"
let operations = 2_000_000
// `--app-warm`: first use Foundation the way any service has before it starts crash reporting
// (files, JSON, dates, the environment), so that start()'s figure is not the first touch of
// those library pages.
let appWarm = CommandLine.arguments.contains("--app-warm")
if appWarm {
    let scratch = NSTemporaryDirectory() + "/bench-context-warm-\(getpid())"
    try? FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
    let json = try JSONSerialization.data(withJSONObject: ["id": UUID().uuidString, "at": Date().timeIntervalSince1970, "env": ProcessInfo.processInfo.environment.count])
    FileManager.default.createFile(atPath: scratch + "/config.json", contents: json)
    _ = try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: scratch + "/config.json")))
    _ = try? FileManager.default.contentsOfDirectory(atPath: scratch)
    _ = String(format: "%.2f", 1.5) + ISO8601DateFormatter().string(from: Date())
    try? FileManager.default.removeItem(atPath: scratch)
}
_ = residentBytes()
_ = residentParts()
let smapsBefore = SmapsCopy(directory + ".smaps-before"), smapsAfter = SmapsCopy(directory + ".smaps-after")
smapsBefore.take()
let before = residentBytes()
let partsBefore = residentParts()
try CrashReporter.start(.init(appID: "com.example.bench", reportsDirectory: directory))
let afterStart = residentBytes()
let partsAfterStart = residentParts()
smapsAfter.take()
// start() returns before its background work (recovery, the first upload pass) is over.
_ = CrashReporter.waitForBackgroundWork(timeout: .seconds(30))
let afterBackground = residentBytes()
let partsAfterBackground = residentParts()
func memoryLines() {
    print(String(format: "resident memory added by start()%@: %.2f MiB (target <= 2 MiB): %.2f MiB anonymous, %.2f MiB file pages, %.2f MiB shmem",
                 appWarm ? " in a process that already used Foundation" : "",
                 Double(afterStart - before) / 1048576, Double(partsAfterStart.anonymous - partsBefore.anonymous) / 1048576,
                 Double(partsAfterStart.file - partsBefore.file) / 1048576, Double(partsAfterStart.shared - partsBefore.shared) / 1048576))
    let mappingsBefore = residentByMapping(smapsBefore.path), mappingsAfterStart = residentByMapping(smapsAfter.path)
    unlink(smapsBefore.path)
    unlink(smapsAfter.path)
    let added = mappingsAfterStart.map { ($0.key, $0.value - (mappingsBefore[$0.key] ?? 0)) }.filter { $0.1 >= 16384 }.sorted { $0.1 > $1.1 }
    print("  by mapping: " + added.prefix(8).map { String(format: "%@ %.2f", ($0.0 as NSString).lastPathComponent, Double($0.1) / 1048576) }.joined(separator: ", ") + " MiB")
    print(String(format: "  and once start()'s background work is over: %.2f MiB: %.2f MiB anonymous, %.2f MiB file pages",
                 Double(afterBackground - before) / 1048576, Double(partsAfterBackground.anonymous - partsBefore.anonymous) / 1048576,
                 Double(partsAfterBackground.file - partsBefore.file) / 1048576))
}
if CommandLine.arguments.contains("--memory-only") {
    memoryLines()
    CrashReporter.endSession()
    exit(0)
}
for index in 0..<1000 { CrashReporter.log("warm-up breadcrumb \(index) with a typical length of text") }
let afterRing = residentBytes()

let existing = "GET /api/v1/orders 200 in 12 ms"
let ring = MutexRing()
let ours1 = measure(threads: 1, operations: operations) { _ in CrashReporter.log(existing) }
let ours1Interpolated = measure(threads: 1, operations: operations) { index in CrashReporter.log("GET /api/v1/orders/\(index) 200") }
nonisolated(unsafe) var lengths = 0
let interpolationAlone = measure(threads: 1, operations: operations) { index in lengths &+= "GET /api/v1/orders/\(index) 200".utf8.count }
let mutex1 = measure(threads: 1, operations: operations) { _ in ring.append(existing) }
let ours2 = measure(threads: 2, operations: operations) { _ in CrashReporter.log(existing) }
let ours2Interpolated = measure(threads: 2, operations: operations) { index in CrashReporter.log("GET /api/v1/orders/\(index) 200") }
let mutex2 = measure(threads: 2, operations: operations) { _ in ring.append(existing) }
let mutex2Interpolated = measure(threads: 2, operations: operations) { index in ring.append("GET /api/v1/orders/\(index) 200") }
let keys = measure(threads: 1, operations: 200_000) { index in CrashReporter.setCustomValue("value", forKey: "key-\(index & 63)") }
let keysInt = measure(threads: 1, operations: 200_000) { index in CrashReporter.setCustomValue(index, forKey: "counter") }

func row(_ name: String, _ value: Double, _ note: String = "") {
    print(name.padding(toLength: 62, withPad: " ", startingAt: 0) + String(format: "%8.1f ns", value) + (note.isEmpty ? "" : "   " + note))
}
let realtime = sched_getscheduler(0) == SCHED_FIFO
print("context benchmark, release build, \(operations) appends per case, median of 7 rounds" + (realtime ? ", SCHED_FIFO (other load kept off these threads)" : ""))
row("breadcrumb, existing String, 1 thread", ours1, "(target <= 25 ns)")
row("breadcrumb, interpolated String, 1 thread", ours1Interpolated)
row("  of which building the interpolated String (no breadcrumb)", interpolationAlone)
row("Mutex<[String]> ring, existing String, 1 thread", mutex1)
row("breadcrumb, existing String, 2 threads (per append)", ours2)
row("Mutex<[String]> ring, existing String, 2 threads (per append)", mutex2, String(format: "ratio %.1fx (target >= 3x)", mutex2 / ours2))
row("breadcrumb, interpolated String, 2 threads (per append)", ours2Interpolated)
row("Mutex<[String]> ring, interpolated String, 2 threads", mutex2Interpolated, String(format: "ratio %.1fx", mutex2Interpolated / ours2Interpolated))
row("setCustomValue(String) over 64 keys", keys)
row("setCustomValue(Int), one key", keysInt)
memoryLines()
print(String(format: "after 1000 breadcrumbs on one thread: %.2f MiB more than before start()", Double(afterRing - before) / 1048576))
CrashReporter.endSession()
try? FileManager.default.removeItem(atPath: directory)
