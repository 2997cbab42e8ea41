// `crashtool requeue`: quarantined records back to pending/, to be sent again by the next launch
// (after a fixed collector, a corrected endpoint, or a record that was judged too early).
import ArgumentParser
import Foundation
import Glibc

struct Requeue: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "requeue",
        abstract: "Move quarantined records back to pending/ (all of them, or the ids given); the next launch sends them.")

    @Argument(help: "The reportsDirectory given to CrashReporter.start.")
    var reportsDirectory: String

    @Argument(help: "Record ids (file names in quarantine/, with or without .crash); none: every quarantined record.")
    var ids: [String] = []

    func run() throws {
        let quarantine = reportsDirectory + "/quarantine"
        let pending = reportsDirectory + "/pending"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: quarantine) else {
            printError("crashtool: \(quarantine): no such directory")
            throw ExitCode(1)
        }
        let wanted = ids.map { $0.hasSuffix(".crash") ? String($0.dropLast(".crash".count)) : $0 }
        let available = Set(names.filter { $0.hasSuffix(".crash") }.map { String($0.dropLast(".crash".count)) })
        let chosen = wanted.isEmpty ? available.sorted() : wanted
        var failed = false
        for id in chosen {
            guard !id.contains("/"), available.contains(id) else {
                printError("crashtool: \(id): not in \(quarantine)")
                failed = true
                continue
            }
            let target = pending + "/" + id + ".crash"
            // link + unlink rather than rename: a record already back in pending/ is never overwritten.
            guard link(quarantine + "/" + id + ".crash", target) == 0 else {
                printError("crashtool: \(id): cannot move to \(pending): \(String(cString: strerror(errno)))")
                failed = true
                continue
            }
            unlink(quarantine + "/" + id + ".crash")
            unlink(quarantine + "/" + id + ".reason")
            print("requeued \(id)")
        }
        if chosen.isEmpty { print("nothing quarantined in \(reportsDirectory)") }
        if failed { throw ExitCode(1) }
    }
}
