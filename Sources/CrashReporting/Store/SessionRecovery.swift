// What the previous runs left in sessions/: a crashed session's breadcrumbs, keys and user id are
// appended to its crash record; a session whose process is gone without a clean end or a crash
// record becomes an "abnormal termination" record (SIGKILL, the OOM killer — told apart by the memory
// sampler's sidecar, see MemoryTimeline.swift —, power loss); a cleanly
// ended one is removed. Runs off the caller's thread after `start`. Each record is rewritten as a
// whole (temporary file, fsync, rename), so being killed half-way repeats the work, never corrupts:
// the session file is removed only after the rename, so a recovery cut short (a relaunch that
// exits within milliseconds) is redone from the start by the next launch, its `.tmp` truncated.
// One process at a time recovers a session (an exclusive lock on its file): two launches in quick
// succession never write the same `.tmp` at once.
import CCrashCapture
import CrashReportModel
import Foundation
import Glibc

struct SessionRecovery {
    let directory: ReportsDirectory
    let currentSessionID: String

    func run() {
        ccr_session_sync()   // first: get this session's file onto the disk (see ccr_session_sync)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.sessionsFolder) else { return }
        // A session's sidecars (<id>.session.custom.json, .memory, and a .tmp a kill left behind)
        // whose session file is gone: nothing to attach them to.
        let sessionFiles = Set(names.filter { $0.hasSuffix(".session") })
        for name in names where !name.hasSuffix(".session") && !name.hasSuffix(".unreadable") {
            guard let range = name.range(of: ".session.") else { continue }
            if !sessionFiles.contains(String(name[..<range.lowerBound]) + ".session") {
                unlink(directory.sessionsFolder + "/" + name)
            }
        }
        sweepTemporaries(sessions: Set(names))
        for name in names where name.hasSuffix(".session") {
            let path = directory.sessionsFolder + "/" + name
            var info = ccr_session_info()
            let status = ccr_session_inspect(path, &info)
            let id = String(name.dropLast(".session".count))
            guard id != currentSessionID else { continue }
            if status == -2 {   // not a session file we can read: keep it out of the way
                rename(path, path + ".unreadable")
                continue
            }
            guard status == 0, info.alive == 0 else { continue }
            // Ours to recover until this function moves on; another launch recovering it now
            // holds the lock (and its inspect saw "alive"), so this one leaves it.
            let lock = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard lock >= 0 else { continue }
            defer { close(lock) }
            guard flock(lock, LOCK_EX | LOCK_NB) == 0, access(path, F_OK) == 0 else { continue }
            let record = directory.pendingFolder + "/" + id + ".crash"
            switch info.state {
            case 1 where FileManager.default.fileExists(atPath: record), 3:
                // Crashed: attach the context to its record (moved to pending/ by start). Or
                // running, its process gone, and its crash record there: killed after the record
                // was durable and before the handler marked the session crashed, which it does
                // after the sync (Docs/Decisions/0046); attached alike.
                if FileManager.default.fileExists(atPath: record), !alreadyAttached(record) {
                    guard rewrite(record, prefix: try? Data(contentsOf: URL(fileURLWithPath: record)), session: path) else { continue }
                } else if !FileManager.default.fileExists(atPath: record) {
                    // Marked crashed, yet no record: the handler marks the session only once the
                    // record is durable, so something removed the record since (a crash-sender
                    // that delivered it without attaching this context). Still report the end.
                    guard rewrite(record, prefix: header(info, termination: "crash_without_record"), session: path) else { continue }
                }
            case 1:   // running, but its process is gone: killed without a chance to record
                if !FileManager.default.fileExists(atPath: record) {
                    // The memory sampler's sidecar tells an OOM kill from another SIGKILL.
                    let memory = MemoryVerdict.classify(sidecar: path + ".memory")
                    var prefix = header(info, termination: memory.kind, afterHang: unresolvedHang(ofSession: id))
                    prefix.append(Data(memory.lines.map { $0 + "\n" }.joined().utf8))
                    guard rewrite(record, prefix: prefix, session: path) else { continue }
                }
            default:
                break
            }
            unlink(path)
            for sidecar in [".custom.json", ".custom.json.tmp", ".memory", ".memory.tmp"] { unlink(path + sidecar) }
        }
    }

    /// The crash-sender's share of the recovery, for the one session whose process is waiting for
    /// it (and so still holds the session's lock): its context is appended to its crash record,
    /// then the session file goes, as `run` would do at the next launch. A record without a
    /// session (a forked child's) is left as it is.
    func attachToCrashRecord(id: String) {
        let path = directory.sessionsFolder + "/" + id + ".session"
        let record = directory.pendingFolder + "/" + id + ".crash"
        // The session is the record's own (same id: the handler marked it crashed and named it in
        // the record); its process holds the lock until the sender is done, so its state is not
        // asked for here.
        guard FileManager.default.fileExists(atPath: path), FileManager.default.fileExists(atPath: record) else { return }
        if !alreadyAttached(record) {
            guard rewrite(record, prefix: try? Data(contentsOf: URL(fileURLWithPath: record)), session: path) else { return }
        }
        unlink(path)
        for sidecar in [".custom.json", ".custom.json.tmp", ".memory", ".memory.tmp"] { unlink(path + sidecar) }
    }

    /// A `pending/<id>.crash.tmp` whose session file is gone was left by something other than a
    /// recovery in progress or to be redone (a recovery removes the session only after its rename):
    /// finished when it holds a whole record and no `.crash` exists, else removed. One whose
    /// session is still there is left for the recovery below, which truncates and redoes it.
    private func sweepTemporaries(sessions: Set<String>) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.pendingFolder) else { return }
        for name in names where name.hasSuffix(".crash.tmp") {
            let id = String(name.dropLast(".crash.tmp".count))
            guard !sessions.contains(id + ".session") else { continue }
            let temporary = directory.pendingFolder + "/" + name
            let record = directory.pendingFolder + "/" + id + ".crash"
            let whole = (try? String(contentsOfFile: temporary, encoding: .utf8)).map {
                $0.hasPrefix(#"{"format":"swift-crash-reporting.crash-record""#) && $0.hasSuffix("\n")
            } ?? false
            if whole && access(record, F_OK) != 0 {
                let fd = open(temporary, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
                if fd >= 0 { fsync(fd); close(fd) }
                rename(temporary, record)
            } else {
                unlink(temporary)
            }
        }
    }

    /// A record that already carries breadcrumbs or keys was attached by an earlier launch.
    private func alreadyAttached(_ record: String) -> Bool {
        guard let text = try? String(contentsOfFile: record, encoding: .utf8) else { return false }
        return [RecordLineType.breadcrumb, .custom_key, .user, .custom_data].contains { text.contains($0.linePrefixText) }
    }

    /// A hang report of this session that never got its end (the process died during the hang):
    /// its heartbeat's name and its id. Reads the first lines of each record in pending/.
    private func unresolvedHang(ofSession id: String) -> (name: String, reportID: String)? {
        let marker = #""session":"# + CrashReporter.quoted(id) + "}"
        for name in directory.records(in: directory.pendingFolder) {
            let path = directory.pendingFolder + "/" + name
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
            guard fd >= 0 else { continue }
            var head = [UInt8](repeating: 0, count: 2048)
            let count = read(fd, &head, head.count)
            close(fd)
            guard count > 0 else { continue }
            let text = String(decoding: head[0..<count], as: UTF8.self)
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(RecordLineType.hang.linePrefixText) && $0.hasSuffix(marker) }),
                  let whole = try? String(contentsOfFile: path, encoding: .utf8), !whole.contains(RecordLineType.hang_end.linePrefixText),
                  let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                  let hangName = object["name"] as? String else { continue }
            return (hangName, String(name.dropLast(".crash".count)))
        }
        return nil
    }

    private func header(_ info: ccr_session_info, termination: String, afterHang: (name: String, reportID: String)? = nil) -> Data {
        func text<T>(_ tuple: T) -> String {
            withUnsafeBytes(of: tuple) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        let line = RecordLine(.termination).string("kind", termination).unsigned("session_started_ns", info.started_ns)
            .unsigned("detected_ns", CrashReporter.wallClockNanoseconds())
        let lines = [
            CrashReporter.recordHeader(id: text(info.session_id), appID: text(info.app_id), appVersion: text(info.app_version),
                                       pid: info.pid, timestampNanoseconds: info.started_ns),
            afterHang.map { line.string("after_hang", $0.name).string("after_hang_report", $0.reportID) }.map(\.text) ?? line.text,
        ]
        return Data((lines.joined(separator: "\n") + "\n").utf8)
    }

    /// Writes prefix (blank prefill lines dropped) + the session's lines to `record` atomically.
    private func rewrite(_ record: String, prefix: Data?, session: String) -> Bool {
        guard var prefix else { return false }
        while prefix.last == UInt8(ascii: "\n") { prefix.removeLast() }
        prefix.append(UInt8(ascii: "\n"))
        let temporary = record + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return false }
        var exported = CrashReporter.writeAll(fd, prefix) && ccr_session_export(session, fd) == 0
        if exported, let data = try? String(contentsOfFile: session + ".custom.json", encoding: .utf8) {
            exported = CrashReporter.writeAll(fd, RecordLine(.custom_data).json("data", data).textLine)
        }
        let synced = exported && fsync(fd) == 0
        close(fd)
        guard synced, rename(temporary, record) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }
}
