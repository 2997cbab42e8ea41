// A record in a reports directory whose next launch has not run yet has no context: its
// breadcrumbs, keys and user id are still in the session file (sessions/<id>.session, written by
// the app while it ran). `show` and `symbolicate` join the two, read-only, and say which they did.
import CCrashCapture
import CrashReportModel
import Foundation
import Glibc

enum SessionJoin {
    /// The record at `path`, with its session's context appended when the record carries none and
    /// `<reports>/sessions/<session id>.session` exists beside its folder; `note` says what was done.
    static func load(_ path: String) throws -> (record: CrashRecord, note: String?) {
        let url = URL(fileURLWithPath: path)
        let record = try CrashRecord.load(contentsOf: url)
        // Only a record in a reports directory's state folder has a session folder beside it.
        let inReports = ["pending", "quarantine", "uploading", "new"].contains(url.deletingLastPathComponent().lastPathComponent)
        guard path.hasSuffix(".crash"), inReports,
              record.userID == nil && record.customKeys.isEmpty && record.breadcrumbs.isEmpty else { return (record, nil) }
        let reports = url.deletingLastPathComponent().deletingLastPathComponent()
        let session = reports.appendingPathComponent("sessions/\(record.sessionID ?? record.id).session").path
        guard FileManager.default.fileExists(atPath: session) else {
            return (record, "Context:   none in the record, and no \(session) (already attached and removed, or never written)")
        }
        guard let spool = tmpfile() else { return (record, "Context:   cannot read \(session): no temporary file") }
        defer { fclose(spool) }
        guard ccr_session_export(session, fileno(spool)) == 0 else {
            return (record, "Context:   \(session) is not a readable session file")
        }
        fflush(spool)
        var exported = Data()
        rewind(spool)
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = fread(&chunk, 1, chunk.count, spool)
            if count <= 0 { break }
            exported.append(contentsOf: chunk[0..<count])
        }
        var data = try Data(contentsOf: url)
        data.append(UInt8(ascii: "\n"))
        data.append(exported)
        if let custom = try? String(contentsOfFile: session + ".custom.json", encoding: .utf8) {
            data.append(Data(RecordLine(.custom_data).json("data", custom).textLine.utf8))
        }
        let joined = try CrashRecord(data: data, source: path)
        return (joined, "Context:   from \(session) (not attached to the record yet: the app's next launch does that)")
    }
}
