// Session beacons: one small record per launch, so that the collector counts the sessions that
// never crash too (crash-free sessions = sessions without a crash / all sessions). A launch spools
// beacons/<session>.json as the pipeline's thread starts (or at its first pass, if collection was
// off then); passes send the spool as one batch to
// `POST {endpoint}/api/v1/sessions` and delete what was accepted: along with other uploads, or
// on their own once enough are waiting or the oldest is old enough (Upload.beaconBatch,
// beaconMaxDelay). Only to the collector (no custom transports), and only when sending is
// allowed, like everything else.
import CrashReportModel
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc

extension Uploader {
    /// The most beacons kept waiting (the oldest go first) and sent per request.
    static let beaconLimit = 1000

    var beaconsFolder: String { directory.path + "/beacons" }

    /// This launch's beacon, written as the pipeline's thread starts, before the launch's first
    /// pass waits for the app's start-up (`Upload.firstPassDelay`): a launch that ends within
    /// that wait (a crash in its first 250 ms, a short-lived tool that exits) is counted too, by
    /// the next launch that sends the spool. Only when a pass could send it now.
    func spoolBeaconAtStart() {
        guard settings.isEnabled, settings.transports == nil, settings.sendsSessionBeacons else { return }
        spoolBeacon()
    }

    /// Collection turned off, or unsent reports deleted, during this launch: spooled beacons are
    /// withdrawn (`all`: every launch's, else this launch's only). This launch's is spooled again
    /// by a later pass that may send, if collection is allowed again; one already sent is not.
    func withdrawBeacons(all: Bool) {
        beaconLock.withLock { _ in
            let names = all ? directory.files(in: beaconsFolder, suffix: ".json") : [sessionID + ".json"]
            for name in names where unlink(beaconsFolder + "/" + name) == 0 && name == sessionID + ".json" {
                beaconSpooled.store(false, ordering: .relaxed)
            }
        }
    }

    /// Writes this launch's beacon, once: not again after it was sent (and its file deleted).
    /// Not while collection is off, unless `evenIfCollectionOff` (a pass `sendUnsentReports` forced).
    func spoolBeacon(evenIfCollectionOff: Bool = false) {
        beaconLock.withLock { _ in
            guard evenIfCollectionOff || access(directory.path + "/collection-disabled", F_OK) != 0 else { return }
            writeBeacon()
        }
    }

    private func writeBeacon() {
        guard beaconSpooled.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        let path = beaconsFolder + "/" + sessionID + ".json"
        ReportsDirectory.makeFolder(beaconsFolder)
        // compactJSON and plain system calls: JSONSerialization and Data.write were the first use
        // of much Foundation code in a quiet launch (the benchmark saw the beacon page in more of
        // Foundation than everything else the first pass does).
        let json = CrashReporter.compactJSON([
            "session_id": sessionID, "started_at": Timestamp.iso8601(startedAt), "bundle_id": app.bundle_id,
            "app_version": app.app_version, "build_number": app.build_number,
            "device_identifier": HostMetadata.deviceIdentifier(),
        ])
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return }
        let written = CrashReporter.writeAll(fd, json)
        close(fd)
        guard written, rename(temporary, path) == 0 else {
            unlink(temporary)
            return
        }
        // Bounded: a collector that never takes them must not fill the disk.
        let names = beaconNames()
        for name in names.prefix(max(0, names.count - Self.beaconLimit)) { unlink(beaconsFolder + "/" + name) }
    }

    /// Spooled beacons, oldest first (by modification time, then name).
    private func beaconNames() -> [String] { datedBeacons().map(\.name) }

    private func datedBeacons() -> [(name: String, seconds: Int, nanoseconds: Int)] {
        let names = directory.files(in: beaconsFolder, suffix: ".json")
        let dated = names.map { name -> (name: String, seconds: Int, nanoseconds: Int) in
            var info = stat()
            guard stat(beaconsFolder + "/" + name, &info) == 0 else { return (name, 0, 0) }
            return (name, info.st_mtim.tv_sec, info.st_mtim.tv_nsec)
        }
        return dated.sorted { ($0.seconds, $0.nanoseconds, $0.name) < ($1.seconds, $1.nanoseconds, $1.name) }
    }

    /// Whether spooled beacons go now, when the pass sends nothing else (`alongWithOthers` false).
    func beaconsAreDue(alongWithOthers: Bool, forced: Bool) -> Bool {
        let dated = datedBeacons()
        guard let oldest = dated.first else { return false }
        if alongWithOthers || forced || dated.count >= settings.beaconBatch { return true }
        let age = Double(time(nil) - oldest.seconds)
        return age >= Double(settings.beaconMaxDelay.components.seconds)
    }

    /// Sends the spooled beacons; false when the collector is down or refuses the token (they
    /// stay for a later pass). The user id, redacted as in payloads, is the one set when the beacon
    /// is sent (this launch's) and none for earlier launches' left-overs.
    @discardableResult
    func sendBeacons(memo: RedactionMemo) -> Bool {
        let names = Array(beaconNames().prefix(Self.beaconLimit))
        guard !names.isEmpty else { return true }
        var sessions: [[String: Any]] = []
        var sent: [String] = []
        for name in names {
            let path = beaconsFolder + "/" + name
            guard let data = FileManager.default.contents(atPath: path),
                  var beacon = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
                  beacon["session_id"] is String else {
                unlink(path)   // not ours to fix: a beacon is rewritten by nobody
                continue
            }
            if name == sessionID + ".json", let user = CrashReporter.currentUserID() {
                beacon["user_id"] = memo.redact(user)
            }
            sessions.append(beacon)
            sent.append(path)
        }
        guard !sessions.isEmpty, let json = try? JSONSerialization.data(withJSONObject: ["sessions": sessions], options: [.sortedKeys]),
              let outcome = postToCollector("api/v1/sessions", json: json) else { return true }
        switch outcome {
        case .delivered:
            for path in sent { unlink(path) }
            return true
        case .rejected(let status, let message):
            // Refused for good: kept aside with the reason, as records are.
            for path in sent {
                let target = directory.quarantineFolder + "/beacon-" + URL(fileURLWithPath: path).lastPathComponent
                rename(path, target)
                try? Data("HTTP \(status): \(message)\n".utf8).write(to: URL(fileURLWithPath: target + ".reason"))
            }
            CrashReporter.warn("the collector refused \(sent.count) session beacon(s): HTTP \(status): \(message)")
            let kept = ((try? FileManager.default.contentsOfDirectory(atPath: directory.quarantineFolder)) ?? [])
                .filter { $0.hasPrefix("beacon-") && $0.hasSuffix(".json") }.sorted()
            for name in kept.prefix(max(0, kept.count - Self.beaconLimit)) {
                unlink(directory.quarantineFolder + "/" + name)
                unlink(directory.quarantineFolder + "/" + name + ".reason")
            }
            return true
        case .tooLarge, .unauthorized, .retryLater, .unreachable:
            return false
        }
    }
}
