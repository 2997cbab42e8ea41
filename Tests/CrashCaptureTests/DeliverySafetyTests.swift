// Issue 14: a report is never lost and never leaked. Rolling restarts against a collector that is
// down, redirects, a reports directory others can write, planted state files and records, and
// connect URLs, each against real HTTP servers on loopback (Tests/Support/fake_collector.py).
import CrashReportModel
import CrashTestSupport
import Foundation
import Glibc
import Testing


private func mode(_ path: String) -> mode_t {
    var info = stat()
    return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
}

@Suite("Delivery safety", .serialized)
struct DeliverySafetyTests {
    /// The issue's reproduction: nothing listens at the endpoint, the app crashes once, then is
    /// restarted four times with SIGTERM while it retries. The record is never quarantined.
    @Test("SIGTERM while retrying an unreachable collector never counts: the crash arrives once the collector is up")
    func rollingRestartsKeepTheRecord() throws {
        let scenario = try UploadScenario("rolling")
        try scenario.run("context-then-crash", upload: false)
        try #require(scenario.files("pending").count == 1)
        for _ in 1...4 {
            var env = scenario.environment
            env["CRASH_FIXTURE_ENDPOINT"] = "http://127.0.0.1:9"   // refused
            env["CRASH_FIXTURE_ATTEMPTS"] = "1000"                  // still retrying when SIGTERM comes
            let (process, said) = try FixtureRun.startUntil("upload-then-wait-for-kill", line: "ready",
                                                            reportsDirectory: scenario.directory, environment: env)
            #expect(said == "ready\n")
            usleep(1_000_000)
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGTERM)
            #expect(scenario.files("quarantine").isEmpty)
        }
        let run = try scenario.run("upload-pass")
        let status = try uploadStatus(run)
        #expect(status["quarantined"] == "0", "\(run.standardError)")
        #expect(scenario.files("quarantine").isEmpty && scenario.files("pending").isEmpty && scenario.files("uploading").isEmpty)
        let kinds = try scenario.state().stored.compactMap { (($0.payload?["crash_reports"] as? [[String: Any]])?.first?["kind"]) as? String }
        #expect(kinds.filter { $0 == "crash" }.count == 1, "\(kinds)")
    }

    @Test("an unreachable collector is said once per launch, on stderr and in the upload status")
    func unreachableSaidOnce() throws {
        let scenario = try UploadScenario("down-once")
        try scenario.run("record-errors", upload: false, ["CRASH_FIXTURE_COUNT": "3"])
        let run = try scenario.run("upload-pass", ["CRASH_FIXTURE_ENDPOINT": "http://127.0.0.1:9"])
        let status = try uploadStatus(run)
        #expect(status["unreachable"] == "yes" && status["delivered"] == "0" && status["unsent"] == "3")
        let lines = run.standardError.split(separator: "\n").filter { $0.contains("is unreachable") }
        #expect(lines.count == 1, "\(run.standardError)")
        #expect(lines.first?.contains("127.0.0.1:9") == true && lines.first?.contains("3 report(s) kept") == true)
    }

    @Test("quarantined records go back to pending/ with crashtool requeue, and are delivered")
    func requeue() throws {
        let scenario = try UploadScenario("requeue")
        try scenario.run("record-errors", upload: false, ["CRASH_FIXTURE_COUNT": "2"])
        try scenario.collector.script([["status": 400], ["status": 400]])
        #expect(try uploadStatus(try scenario.run("upload-pass"))["quarantined"] == "2")
        let quarantined = scenario.files("quarantine")
        try #require(quarantined.count == 2)
        let one = String(quarantined[0].dropLast(".crash".count))
        let (status, output, errors) = try crashtool(["requeue", scenario.directory.path, one])
        #expect(status == 0 && output == "requeued \(one)\n", "\(errors)")
        #expect(scenario.files("pending") == [quarantined[0]] && scenario.files("quarantine") == [quarantined[1]])
        #expect(scenario.files("quarantine", suffix: ".reason").count == 1)
        #expect(try crashtool(["requeue", scenario.directory.path, "no-such-id"]).0 == 1)
        #expect(try crashtool(["requeue", scenario.directory.path]).1 == "requeued \(quarantined[1].dropLast(".crash".count))\n")
        #expect(try uploadStatus(try scenario.run("upload-pass"))["delivered"] == "2")
        #expect(scenario.files("quarantine").isEmpty && scenario.files("pending").isEmpty)
    }

    @Test("a 307 to another host is not followed: no token reaches it, the record is kept, the Location is shown")
    func redirectNotFollowed() throws {
        let scenario = try UploadScenario("redirect")
        let elsewhere = try FakeCollector.start(token: "test-token")   // only records whether anything arrived
        try scenario.run("record-errors", upload: false, ["CRASH_FIXTURE_COUNT": "1"])
        try scenario.collector.script([["status": 307, "location": elsewhere.uploadURL.absoluteString]])
        let run = try scenario.run("upload-pass")
        let status = try uploadStatus(run)
        #expect(status["delivered"] == "0" && status["config_error"] == "yes" && status["unsent"] == "1")
        #expect(run.standardError.contains("\"\(elsewhere.uploadURL.absoluteString)\""), "\(run.standardError)")
        #expect(try elsewhere.state().requests.isEmpty)
        #expect(try scenario.state().requests.count == 1)
        #expect(scenario.files("pending").count == 1 && scenario.files("quarantine").isEmpty)
        elsewhere.stop()
    }

    @Test("plain http to a host that is not loopback: start throws unless allowed; https and loopback start")
    func insecureEndpoint() throws {
        let directory = temporaryFolder("insecure")
        func start(_ endpoint: String, _ extra: [String: String] = [:]) throws -> String {
            let env = ["CRASH_FIXTURE_ENDPOINT": endpoint].merging(extra) { $1 }
            return try FixtureRun.run("start-only", .debug, reportsDirectory: directory, environment: env).standardOutput
        }
        let refused = try start("http://192.0.2.10:9090")
        #expect(refused.hasPrefix("start: invalidConfiguration: upload.endpoint: http://192.0.2.10:9090 is plain http"), "\(refused)")
        #expect(try start("http://192.0.2.10:9090", ["CRASH_FIXTURE_ALLOW_HTTP": "1"]) == "start: ok\n")
        #expect(try start("https://192.0.2.10:9090") == "start: ok\n")
        #expect(try start("http://127.0.0.1:9") == "start: ok\n")
    }

    @Test("the reports directory is created 0700, its state files 0600")
    func privateDirectory() throws {
        let directory = temporaryFolder("private")
        #expect(try FixtureRun.run("start-only", .debug, reportsDirectory: directory).standardOutput == "start: ok\n")
        for folder in ["", "/new", "/pending", "/sessions"] {
            #expect(mode(directory.path + folder) == 0o700, "\(folder)")
        }
        #expect(mode(directory.path + "/last-launch") == 0o600)
        // One made 0755 by an older version is narrowed.
        chmod(directory.path, 0o755)
        #expect(try FixtureRun.run("start-only", .debug, reportsDirectory: directory).standardOutput == "start: ok\n")
        #expect(mode(directory.path) == 0o700)
    }

    @Test("a reports directory writable by others, or owned by another user, makes start throw")
    func untrustedDirectory() throws {
        try #require(geteuid() == 0, "chown to nobody needs root")
        let open = temporaryFolder("world-writable")
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: true)
        chmod(open.path, 0o777)
        let run = try FixtureRun.run("start-only", .debug, reportsDirectory: open)
        #expect(run.standardOutput.hasPrefix("start: reportsDirectoryUnusable: \(open.path) is writable by group or others (mode 777)"),
                "\(run.standardOutput)")

        let foreign = temporaryFolder("foreign")
        try FileManager.default.createDirectory(at: foreign, withIntermediateDirectories: true)
        chmod(foreign.path, 0o700)
        #expect(chown(foreign.path, 65534, 65534) == 0)
        let refused = try FixtureRun.run("start-only", .debug, reportsDirectory: foreign)
        #expect(refused.standardOutput.hasPrefix("start: reportsDirectoryUnusable: \(foreign.path) is owned by uid 65534"), "\(refused.standardOutput)")
        #expect(!FileManager.default.fileExists(atPath: foreign.path + "/last-launch"))

        // A state folder inside that is a link is refused too.
        let linked = temporaryFolder("linked-pending")
        try FileManager.default.createDirectory(at: linked, withIntermediateDirectories: true)
        let elsewhere = temporaryFolder("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        symlink(elsewhere.path, linked.path + "/pending")
        let link = try FixtureRun.run("start-only", .debug, reportsDirectory: linked)
        #expect(link.standardOutput.hasPrefix("start: reportsDirectoryUnusable: \(linked.path)/pending is a symbolic link"), "\(link.standardOutput)")
    }

    @Test("a state file that is a symbolic link is refused and reported, its target untouched")
    func symlinkedStateFile() throws {
        let directory = temporaryFolder("symlinked-state")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let victim = temporaryFolder("victim")
        try Data("precious\n".utf8).write(to: victim)
        symlink(victim.path, directory.path + "/last-launch")
        symlink(victim.path, directory.path + "/dropped-count")
        let run = try FixtureRun.run("start-only", .debug, reportsDirectory: directory)
        #expect(run.standardOutput == "start: ok\n", "\(run.standardError)")
        #expect(try String(contentsOf: victim, encoding: .utf8) == "precious\n")
        #expect(run.standardError.contains("refusing \(directory.path)/last-launch: a symbolic link"), "\(run.standardError)")
    }

    @Test("a record in pending/ owned by another user is never sent under our token")
    func plantedRecordRefused() throws {
        try #require(geteuid() == 0, "chown to nobody needs root")
        let scenario = try UploadScenario("planted")
        try scenario.run("record-errors", upload: false, ["CRASH_FIXTURE_COUNT": "1"])
        let name = try #require(scenario.files("pending").first)
        let path = scenario.directory.path + "/pending/" + name
        #expect(chown(path, 65534, 65534) == 0)
        let run = try scenario.run("upload-pass")
        let status = try uploadStatus(run)
        #expect(status["delivered"] == "0" && status["quarantined"] == "1", "\(run.standardError)")
        #expect(try scenario.state().requests.isEmpty)
        #expect(scenario.files("quarantine") == [name])
        let reason = try String(contentsOfFile: scenario.directory.path + "/quarantine/" + name.dropLast(".crash".count) + ".reason", encoding: .utf8)
        #expect(reason.contains("owned by uid 65534"))
    }

    @Test("connect URLs: private hosts only, exact scheme, remembered only when the app opts in")
    func connectURLPolicy() throws {
        let scenario = try UploadScenario("connect")
        func handle(_ url: String, _ extra: [String: String] = [:]) throws -> String {
            let env = ["CRASH_FIXTURE_UPLOAD": "1", "CRASH_FIXTURE_URL": url].merging(extra) { $1 }
            return try scenario.run("handle-url", upload: false, env).standardOutput
        }
        let lan = "dev-see-com.example.crash-fixture://connect?server_ip=192.168.1.23&server_port=9090"
        #expect(try handle(lan).contains("endpoint=http://192.168.1.23:9090 source=connect URL"))
        // Not remembered: the next launch falls back.
        #expect(try handle("https://example.com").contains("endpoint=http://localhost:9090 source=fallback"))
        #expect(!FileManager.default.fileExists(atPath: scenario.directory.path + "/connect-endpoint"))
        // A planted connect-endpoint is not read either.
        try Data("http://203.0.113.7:80\n".utf8).write(to: scenario.directory.appendingPathComponent("connect-endpoint"))
        #expect(try handle("https://example.com").contains("source=fallback"))
        #expect(try handle("https://example.com", ["CRASH_FIXTURE_PERSIST_CONNECT": "1"]).contains("source=fallback"))   // host not allowed
        // Opted in: remembered.
        let persist = ["CRASH_FIXTURE_PERSIST_CONNECT": "1"]
        #expect(try handle(lan, persist).contains("source=connect URL"))
        #expect(try handle("https://example.com", persist).contains("endpoint=http://192.168.1.23:9090 source=connect URL"))
        #expect(mode(scenario.directory.path + "/connect-endpoint") == 0o600)

        let fresh = try UploadScenario("connect-refused")
        func handleFresh(_ url: String, _ extra: [String: String] = [:]) throws -> String {
            let env = ["CRASH_FIXTURE_UPLOAD": "1", "CRASH_FIXTURE_URL": url].merging(extra) { $1 }
            return try fresh.run("handle-url", upload: false, env).standardOutput
        }
        let public_ = try handleFresh("dev-see-com.example.crash-fixture://connect?server_ip=203.0.113.7&server_port=80")
        #expect(public_.contains("result=failed(reason: \"server_ip \\\"203.0.113.7\\\" is not allowed") && public_.contains("source=fallback"), "\(public_)")
        let name = try handleFresh("dev-see-com.example.crash-fixture://connect?server_ip=attacker.example&server_port=80")
        #expect(name.contains("result=failed") && name.contains("source=fallback"))
        let allowed = try handleFresh("dev-see-com.example.crash-fixture://connect?server_ip=qa-mac.local&server_port=80",
                                      ["CRASH_FIXTURE_CONNECT_HOSTS": "qa-mac.local"])
        #expect(allowed.contains("endpoint=http://qa-mac.local:80 source=connect URL"), "\(allowed)")
        let shouting = try handleFresh("DEV-SEE-com.example.crash-fixture://connect?server_ip=192.168.1.23&server_port=80")
        #expect(shouting.contains("result=failed") && shouting.contains("source=fallback"), "\(shouting)")
    }

    @Test("CRASH_REPORTING_ENDPOINT over plain http to a host that is not loopback is ignored, with a warning")
    func insecureEnvironmentEndpoint() throws {
        let scenario = try UploadScenario("environment")
        let insecure = try scenario.run("handle-url", upload: false, ["CRASH_FIXTURE_UPLOAD": "1", "CRASH_FIXTURE_URL": "https://example.com",
                                                                       "CRASH_REPORTING_ENDPOINT": "http://10.0.0.5:8080"])
        #expect(insecure.standardOutput.contains("source=fallback"), "\(insecure.standardOutput)")
        #expect(insecure.standardError.contains("CRASH_REPORTING_ENDPOINT ignored"))
        let secure = try scenario.run("handle-url", upload: false, ["CRASH_FIXTURE_UPLOAD": "1", "CRASH_FIXTURE_URL": "https://example.com",
                                                                     "CRASH_REPORTING_ENDPOINT": "https://10.0.0.5:8080"])
        #expect(secure.standardOutput.contains("endpoint=https://10.0.0.5:8080 source=environment"))
    }

    /// A relaunch that exits within milliseconds cuts the recovery of a killed session; the
    /// `.tmp` it leaves must not stop the next launch from reporting the session.
    @Test("a recovery cut short is redone by the next launch: the abnormal termination is reported, no .tmp is left")
    func cutRecoveryRedone() throws {
        let directory = temporaryFolder("cut-recovery")
        let (process, said) = try FixtureRun.startUntil("context-then-wait-for-kill", line: "ready", reportsDirectory: directory)
        #expect(said.hasSuffix("ready\n"))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let sessions = try FileManager.default.contentsOfDirectory(atPath: directory.path + "/sessions").filter { $0.hasSuffix(".session") }
        let id = String(try #require(sessions.first).dropLast(".session".count))
        // What a recovery cut mid-write leaves, and a leftover whose session is gone.
        let pending = directory.path + "/pending/"
        try Data(#"{"format":"swift-crash-reporting.crash-record","version":1,"id":"\#(id)","app_"#.utf8).write(to: URL(fileURLWithPath: pending + id + ".crash.tmp"))
        try Data("{\"format\":\"swift-crash".utf8).write(to: URL(fileURLWithPath: pending + "0badc0de.crash.tmp"))

        let next = try FixtureRun.run("relaunch", .debug, reportsDirectory: directory)
        #expect(next.standardOutput == "processed\n", "\(next.standardError)")
        let record = try next.onlyRecord()
        #expect(record.id == id && record.termination?.kind == "abnormal" && !record.isPartial)
        #expect(record.breadcrumbs.count == 500 && record.userID != nil)
        let left = try FileManager.default.contentsOfDirectory(atPath: pending).filter { $0.hasSuffix(".tmp") }
        #expect(left.isEmpty, "\(left)")
    }

    @Test("crashtool show and symbolicate join a pending record with its session file, and say when it is missing")
    func crashtoolJoinsSession() throws {
        let directory = temporaryFolder("join")
        let crash = try FixtureRun.run("context-then-crash", .debug, reportsDirectory: directory)
        #expect(crash.terminatedBySignal == SIGSEGV)
        let record = try #require(crash.pendingRecords.first)
        let session = directory.path + "/sessions/" + record.deletingPathExtension().lastPathComponent + ".session"
        try #require(FileManager.default.fileExists(atPath: session))

        let (status, shown, _) = try crashtool(["show", record.path])
        #expect(status == 0)
        #expect(shown.contains("User:      user-42") && shown.contains("breadcrumb #999"), "\(shown.suffix(800))")
        #expect(shown.contains("Context:   from \(session)"))
        let (symbolicated, text, notes) = try crashtool(["symbolicate", record.path])
        #expect(symbolicated == 0 && text.contains("breadcrumb #999") && notes.contains("context from \(session)"), "\(notes)")

        unlink(session)
        let (_, bare, _) = try crashtool(["show", record.path])
        #expect(!bare.contains("breadcrumb #999") && bare.contains("Context:   none in the record, and no \(session)"), "\(bare.suffix(400))")
    }
}
