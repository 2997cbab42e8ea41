// `crashtool show` and `crashtool list`: a record as written, and the records in a reports folder.
import ArgumentParser
import CrashReportModel
import Foundation
import Glibc

struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show a crash record as the handler wrote it (no symbolication).")

    @Argument(help: "A crash record file.")
    var record: String

    func run() throws {
        let loaded: CrashRecord
        let note: String?
        do {
            (loaded, note) = try SessionJoin.load(record)
        } catch let error as CrashRecordError {
            printError("crashtool: \(error)")
            throw ExitCode(1)
        }
        print(Self.describe(loaded))
        if let note { print(note) }
    }

    static func describe(_ r: CrashRecord) -> String {
        var out: [String] = []
        out.append("Record:    \(r.id)  (format version \(r.version)\(r.isPartial ? ", PARTIAL" : ""))")
        out.append("App:       \(r.appID) \(r.appVersion)  pid \(r.processID)  \(r.architecture)")
        out.append("Time:      \(Timestamp.iso8601(r.timestamp))")
        if let s = r.signal {
            out.append("Signal:    \(s.name) (\(s.number)) code \(s.code) \(s.codeName)\(s.faultAddress.map { "  fault address \($0)" } ?? "")\(s.senderPID.map { "  sent by pid \($0)" } ?? "")")
        }
        if let t = r.thread { out.append("Thread:    \(t.id) \"\(t.name)\"\(t.isMain ? " (main)" : "")") }
        if let m = r.fatalMessage { out.append("Message:   \(m.trimmingCharacters(in: .whitespacesAndNewlines))") }
        if let d = r.foreignDescription { out.append("Described: \(d)") }
        if let n = r.nestedCrash { out.append("Nested:    signal \(n.signal) code \(n.code) at stage \(n.stage)") }
        if let w = r.watchdog { out.append("Watchdog:  finished the record at stage \(w.stage) after \(w.waitedMilliseconds) ms") }
        if let d = r.durableNanoseconds { out.append("Durable:   \(d / 1000) us after the signal") }
        for problem in r.problems { out.append("Problem:   \(problem)") }
        if let stack = r.stack {
            out.append("Stack:     \(r.frames.count) frames kept of \(stack.depth)\(stack.depthIsLowerBound ? "+" : "")\(stack.isTruncated ? " (truncated)" : ""), \(stack.unwinder)\(stack.unwindError.map { " (libunwind error \($0); frames after it from frame pointers)" } ?? "")")
        }
        for frame in r.frames {
            let module = r.module(containing: frame.lookupAddress)
            let place = module.map { "\(fileName(of: $0.path)) + \($0.fileAddress(of: frame.address))" } ?? "?"
            out.append("  #\(frame.index)".padding(toLength: 6, withPad: " ", startingAt: 0) + "\(frame.address)  \(place)  [\(frame.kind.rawValue)]")
        }
        if let user = r.userID { out.append("User:      \(user)") }
        for key in r.customKeys { out.append("Key:       \(key.key) = \(key.jsonValue)") }
        if !r.breadcrumbs.isEmpty {
            out.append("Breadcrumbs: \(r.breadcrumbs.count), oldest first")
            for crumb in r.breadcrumbs {
                out.append("  \(Timestamp.iso8601(crumb.timestamp))  \(crumb.level)  \(crumb.tag.isEmpty ? "" : "[\(crumb.tag)] ")\(crumb.message)")
            }
        }
        if !r.registers.isEmpty {
            out.append("Registers:")
            let names = r.registers.keys.sorted()
            for chunk in stride(from: 0, to: names.count, by: 4) {
                out.append("  " + names[chunk..<min(chunk + 4, names.count)].map { "\($0.padding(toLength: 6, withPad: " ", startingAt: 0)) \(r.registers[$0]!)" }
                    .map { $0.padding(toLength: 26, withPad: " ", startingAt: 0) }.joined())
            }
        }
        out.append("Modules:")
        for module in r.modules {
            out.append("  \(module.start)-\(module.end)  \(module.buildID.isEmpty ? "(no build-id)" : module.buildID.hex)  \(module.path)")
        }
        return out.joined(separator: "\n")
    }
}

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the records in a reports directory: pending, quarantined (with why), and in progress.")

    @Argument(help: "The reportsDirectory given to CrashReporter.start.")
    var reportsDirectory: String

    func run() throws {
        let root = URL(fileURLWithPath: reportsDirectory)
        guard FileManager.default.fileExists(atPath: root.path) else {
            printError("crashtool: \(reportsDirectory): no such directory")
            throw ExitCode(1)
        }
        var total = 0
        for state in ["pending", "quarantine", "new"] {
            let folder = root.appendingPathComponent(state)
            let files = ((try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? [])
                .filter { $0.pathExtension == "crash" }.sorted { $0.path < $1.path }
            for file in files {
                total += 1
                print("\(state.padding(toLength: 10, withPad: " ", startingAt: 0)) \(file.deletingPathExtension().lastPathComponent)  \(describe(file, state: state))")
            }
        }
        if total == 0 { print("no records in \(reportsDirectory)") }
    }

    private func describe(_ file: URL, state: String) -> String {
        if state == "new" {
            let fd = open(file.path, O_RDONLY | O_CLOEXEC)
            defer { if fd >= 0 { close(fd) } }
            if fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) != 0 { return "record file of a running process" }
            return "left by a process that ended without crashing or mid-write; the next start recovers it"
        }
        var text: String
        do {
            let record = try CrashRecord.load(contentsOf: file)
            let signal = record.signal.map { "\($0.name)" } ?? "?"
            text = "\(Timestamp.iso8601(record.timestamp))  \(signal)  \(record.appID) \(record.appVersion)"
            if record.isPartial { text += "  (partial)" }
        } catch {
            text = "unreadable: \(error)"
        }
        if state == "quarantine" {
            let why = file.deletingPathExtension().appendingPathExtension("reason")
            let reason = (try? String(contentsOf: why, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            text += "  — quarantined: \(reason ?? "no reason recorded")"
        }
        return text
    }
}
