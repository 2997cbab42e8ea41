// Dashboard access: failed logins throttled per client address with doubling backoff, security
// headers on every answer, JSON never cached, the SQLite file the owner's only, weak passwords and
// secrets from files at startup.
@testable import Collector
import Crypto
import Foundation
import Synchronization
import Testing

@Suite struct DashboardAccessTests {
    @Test func backoffStartsAfterFiveFailuresAndDoubles() {
        let now = Mutex(Duration.zero)
        let throttle = FailureThrottle(freeFailures: 5, base: .seconds(1), maximum: .seconds(8)) { now.withLock { $0 } }
        for _ in 0..<4 { #expect(throttle.failed("10.0.0.1") == nil) }
        #expect(throttle.check("10.0.0.1") == .allowed)
        #expect(throttle.failed("10.0.0.1") == .seconds(1))
        #expect(throttle.check("10.0.0.1") == .blocked(retryAfter: 1))
        #expect(throttle.check("10.0.0.2") == .allowed)   // per address
        now.withLock { $0 += .seconds(1) }
        #expect(throttle.check("10.0.0.1") == .allowed)
        #expect(throttle.failed("10.0.0.1") == .seconds(2))
        now.withLock { $0 += .seconds(2) }
        #expect(throttle.failed("10.0.0.1") == .seconds(4))
        #expect(throttle.check("10.0.0.1") == .blocked(retryAfter: 4))
        now.withLock { $0 += .seconds(4) }
        #expect(throttle.failed("10.0.0.1") == .seconds(8))
        now.withLock { $0 += .seconds(8) }
        #expect(throttle.failed("10.0.0.1") == .seconds(8))   // capped
        now.withLock { $0 += .seconds(8) }
        throttle.succeeded("10.0.0.1")
        for _ in 0..<4 { #expect(throttle.failed("10.0.0.1") == nil) }   // a success starts the count again
    }

    @Test func aQuietSpellForgetsFailuresWhenTheThrottleSaysSo() {
        let now = Mutex(Duration.zero)
        let throttle = FailureThrottle(freeFailures: 3, base: .seconds(1), maximum: .seconds(60),
                                       forgetAfter: .seconds(60)) { now.withLock { $0 } }
        #expect(throttle.failed("k") == nil)
        #expect(throttle.failed("k") == nil)
        now.withLock { $0 += .seconds(59) }
        #expect(throttle.failed("k") == .seconds(1))   // within the spell: the third counts
        now.withLock { $0 += .seconds(60) }
        #expect(throttle.check("k") == .allowed)
        #expect(throttle.failed("k") == nil)            // a minute after the last: counted from one again
        #expect(throttle.failed("k") == nil)
        #expect(throttle.failed("k") == .seconds(1))
        #expect(throttle.failed("k") == .seconds(2))    // and doubles from there
    }

    @Test func wrongPasswordsFromOneAddressAre429() async throws {
        // A long first block, so that the test does not depend on how fast it runs.
        try await TestCollector.with(configure: { $0.loginBackoff = .seconds(600) }) { collector in
            let wrong = "Basic " + Data("admin:not-the-password".utf8).base64EncodedString()
            for _ in 0..<5 {
                #expect(try await collector.get("/api/issues", headers: ["Authorization": wrong]).status == 401)
            }
            for path in ["/api/issues", "/"] {
                // Blocked, even with the right password: a guess that succeeds tells nothing now.
                // The answer is held back a second first (throttledAnswerHold; a sleep's least).
                let asked = ContinuousClock.now
                let blocked = try await collector.read(path)
                #expect(ContinuousClock.now - asked >= .seconds(1))
                #expect(blocked.status == 429)
                #expect(blocked.header("Retry-After").flatMap(Int.init).map { (500...600).contains($0) } == true)
                #expect(blocked.json["error"] as? String == "too_many_attempts")
            }
            // Uploads and the health check do not use the dashboard password.
            #expect(try await collector.get("/health").status == 200)
            #expect(try await collector.upload(try Fixtures.samplePayloadData()).status == 201)
        }
    }

    @Test func browsersFirstVisitIsNoFailure() async throws {
        try await TestCollector.with(configure: { $0.loginBackoff = .seconds(600) }) { (collector: TestCollector) async throws in
            for _ in 0..<8 { #expect(try await collector.read("/", authorized: false).status == 401) }
            #expect(try await collector.read("/").status == 200)
        }
    }

    @Test func everyAnswerCarriesSecurityHeaders() async throws {
        try await TestCollector.with { collector in
            let answers = [
                try await collector.read("/"), try await collector.read("/api/issues"), try await collector.read("/nope"),
                try await collector.read("/", authorized: false), try await collector.get("/health"),
                try await collector.upload(try Fixtures.samplePayloadData()),
                try await collector.read("/connect/qr.svg?app_id=com.example.app"),
            ]
            for answer in answers {
                let csp = try #require(answer.header("Content-Security-Policy"), "\(answer.status)")
                #expect(csp.contains("frame-ancestors 'none'"))
                #expect(csp.contains("object-src 'none'"))
                #expect(answer.header("X-Content-Type-Options") == "nosniff")
                #expect(answer.header("Referrer-Policy") == "no-referrer")
                #expect(answer.header("X-Frame-Options") == "DENY")
            }
            #expect(answers[0].header("Cache-Control") == "no-store")   // pages
            for answer in [answers[1], answers[4], answers[5]] {
                #expect(answer.header("Content-Type") == "application/json")
                #expect(answer.header("Cache-Control") == "no-store")
            }
            #expect(answers[6].header("Cache-Control") == "private, max-age=3600")   // the QR image keeps its own
        }
    }

    @Test func onlyTheDashboardsOwnScriptMayRun() async throws {
        try await TestCollector.with { collector in
            let page = try await collector.read("/")
            let csp = try #require(page.header("Content-Security-Policy"))
            let scriptSources = try #require(csp.split(separator: ";").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("script-src") })
            #expect(!scriptSources.contains("unsafe-inline"))
            // Every inline script of the page is allowed by its hash, and there is no inline handler.
            let html = page.text
            var scripts: [String] = []
            var rest = html[...]
            while let open = rest.range(of: "<script>"), let close = rest.range(of: "</script>", range: open.upperBound..<rest.endIndex) {
                scripts.append(String(rest[open.upperBound..<close.lowerBound]))
                rest = rest[close.upperBound...]
            }
            #expect(scripts.count == 1)
            for script in scripts {
                let hash = "'sha256-" + Data(SHA256.hash(data: Data(script.utf8))).base64EncodedString() + "'"
                #expect(scriptSources.contains(hash))
            }
            #expect(html.range(of: #"\son[a-z]+\s*="#, options: .regularExpression) == nil)
        }
    }

    @Test func sqliteFileIsCreatedOwnerOnly() async throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("collector-mode-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("collector.sqlite").path
        let previous = umask(0o022)
        defer { umask(previous) }
        let store = try SQLiteStore(path: path)
        _ = try await store.issues(IssueQuery())
        await store.close()
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode & 0o777 == 0o600)
    }

    @Test func weakPasswordsAreRefused() {
        for password in ["secret", "Password", "short-pw", "aaaaaaaaaaaaaaaa", "changeme"] {
            #expect(Secrets.weakness(ofPassword: password) != nil, "\(password)")
        }
        #expect(Secrets.weakness(ofPassword: "correct-horse-battery") == nil)
    }
}

extension CommandTests {
    /// Runs crash-collector with `arguments` until it exits; its status and standard error.
    static func exits(_ arguments: [String], environment extra: [String: String] = [:]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = ["--port", "0", "--database", ":memory:"] + arguments
        var environment = ProcessInfo.processInfo.environment
        for name in ["COLLECTOR_TOKENS", "COLLECTOR_DASHBOARD_PASSWORD", "COLLECTOR_TOKEN_FILE", "COLLECTOR_DASHBOARD_PASSWORD_FILE"] {
            environment[name] = nil
        }
        environment.merge(extra) { _, new in new }
        process.environment = environment
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = Pipe()
        try process.run()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
    }

    @Test func refusesAWeakDashboardPassword() throws {
        for arguments in [["--dashboard-password", "secret"], ["--dashboard-password", "short-pass"]] {
            let (status, errors) = try Self.exits(["--token", "t"] + arguments)
            #expect(status != 0)
            #expect(errors.contains("too easy to guess"), "\(errors)")
        }
        let (status, errors) = try Self.exits(["--token", "t"], environment: ["COLLECTOR_DASHBOARD_PASSWORD": "password"])
        #expect(status != 0)
        #expect(errors.contains("too easy to guess"), "\(errors)")
    }

    @Test func readsSecretsFromFiles() async throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("collector-secrets-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let tokens = directory.appendingPathComponent("tokens")
        try "# tenants\ncom.example.other:file-token-b\nfile-token-any\n".write(to: tokens, atomically: true, encoding: .utf8)
        let password = directory.appendingPathComponent("password")
        try "file-dashboard-pass\n".write(to: password, atomically: true, encoding: .utf8)
        let database = try await TestDatabase.make()
        defer { Task { await database.remove() } }

        let process = Process()
        process.executableURL = Self.executable
        process.arguments = ["--port", "0", "--log-level", "error", "--database", database.location,
                             "--token-file", tokens.path, "--dashboard-password-file", password.path]
        var environment = ProcessInfo.processInfo.environment
        environment["COLLECTOR_TOKENS"] = nil
        environment["COLLECTOR_DASHBOARD_PASSWORD"] = nil
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var text = ""
        while !text.contains("\n") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        let port = try #require(Int(text.split(separator: "\n").first?.split(separator: ":").last ?? ""))
        let body = try Fixtures.samplePayloadData()
        func upload(_ token: String) async throws -> Int {
            try await RawHTTP.request(port: port, method: "POST", path: "/api/v1/qa/diagnostics",
                                      headers: ["Authorization": "Bearer \(token)"], body: body).answer.status
        }
        #expect(try await upload("file-token-any") == 201)
        #expect(try await upload("file-token-b") == 403)   // bound to another app
        #expect(try await upload("nope") == 401)
        let credentials = Data("x:file-dashboard-pass".utf8).base64EncodedString()
        #expect(try await RawHTTP.request(port: port, method: "GET", path: "/api/issues",
                                          headers: ["Authorization": "Basic \(credentials)"]).status == 200)
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}
