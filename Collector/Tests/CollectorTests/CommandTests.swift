// The crash-collector executable as an operator runs it: flags and COLLECTOR_* fallbacks, the
// printed URL, a clean exit on SIGTERM.
import Foundation
import Testing

@Suite struct CommandTests {
    /// The executable SwiftPM built beside the test bundle.
    static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("crash-collector")
    }

    @Test func startsFromEnvironmentPrintsItsURLAndStopsOnSIGTERM() async throws {
        let database = try await TestDatabase.make()
        let process = Process()
        process.executableURL = Self.executable
        process.arguments = ["--port", "0", "--log-level", "error"]
        var environment = ProcessInfo.processInfo.environment
        environment["COLLECTOR_TOKENS"] = "env-token-1, env-token-2"
        environment["COLLECTOR_DATABASE"] = database.location
        environment["COLLECTOR_DASHBOARD_PASSWORD"] = "env-dashboard-pass"
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        try process.run()

        // The first line names the URL: read until it is complete.
        var text = ""
        while !text.contains("\n") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        let firstLine = text.split(separator: "\n").first.map(String.init) ?? ""
        #expect(firstLine.hasPrefix("crash-collector listening on http://127.0.0.1:"))
        let port = try #require(Int(firstLine.split(separator: ":").last ?? ""))

        let health = try await RawHTTP.request(port: port, method: "GET", path: "/health", headers: [:])
        #expect(health.status == 200)
        let upload = try await RawHTTP.request(
            port: port, method: "POST", path: "/api/v1/qa/diagnostics", headers: ["Authorization": "Bearer env-token-2"],
            body: try Fixtures.samplePayloadData())
        #expect(upload.answer.status == 201)
        let credentials = Data("x:env-dashboard-pass".utf8).base64EncodedString()
        let issues = try await RawHTTP.request(port: port, method: "GET", path: "/api/issues",
                                               headers: ["Authorization": "Basic \(credentials)"])
        #expect(issues.status == 200)
        #expect(issues.text.contains("crash() — SIGSEGV"))   // the short name and the reason

        process.terminate()   // SIGTERM: graceful shutdown
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        await database.remove()
    }

    @Test func refusesToStartWithoutAToken() throws {
        let process = Process()
        process.executableURL = Self.executable
        process.arguments = ["--port", "0", "--database", ":memory:"]
        var environment = ProcessInfo.processInfo.environment
        environment["COLLECTOR_TOKENS"] = nil
        process.environment = environment
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = Pipe()
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus != 0)
        #expect(String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).contains("token"))
    }

    @Test func refusesASymbolFolderThatIsNotOneAndABadDebuginfodURL() throws {
        for (arguments, message) in [(["--symbols", "/nonexistent/symbols"], "not a folder"),
                                     (["--debuginfod", "not a url"], "--debuginfod")] {
            let process = Process()
            process.executableURL = Self.executable
            process.arguments = ["--port", "0", "--database", ":memory:", "--token", "t"] + arguments
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = Pipe()
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationStatus != 0)
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(text.contains(message), "\(text)")
        }
    }

    @Test func namesItsSymbolSourcesWhenItStarts() async throws {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("collector-command-symbols-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let process = Process()
        process.executableURL = Self.executable
        process.arguments = ["--port", "0", "--database", ":memory:", "--token", "t", "--log-level", "error"]
        var environment = ProcessInfo.processInfo.environment
        environment["COLLECTOR_SYMBOLS"] = folder.path
        environment["DEBUGINFOD_URLS"] = nil
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var text = ""
        while !text.contains("database:") || !text.hasSuffix("\n") {   // the banner is one write
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        process.terminate()
        process.waitUntilExit()
        #expect(text.contains("  symbols:   \(folder.path) (reports sent raw are symbolicated after their upload is answered)"), "\(text)")
    }
}

extension CommandTests {
    @Test(arguments: [["--rate-limit", "-1"], ["--rate-limit", "x"], ["--rate-burst", "0"]])
    func refusesABadRateLimit(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = Self.executable
        process.arguments = ["--port", "0", "--database", ":memory:", "--token", "t"] + arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = Pipe()
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus != 0)
        #expect(String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).contains("rate"))
    }
}
