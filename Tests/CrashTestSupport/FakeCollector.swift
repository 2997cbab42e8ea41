// Runs Tests/Support/fake_collector.py (a fake diagnostics collector on 127.0.0.1) as a subprocess
// and drives its control API, for the upload tests. Needs /usr/bin/python3 with python3-jsonschema.
// Self-contained (Foundation only) so that `swiftc -typecheck` can check this file alone.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc

public final class FakeCollector: @unchecked Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// GET /control/state. `raw` is the whole answer, for what is not mirrored (e.g. `apiLogs`).
    public struct State: Decodable {
        public var requests: [Request]
        public var stored: [Stored]
        public var uniqueKeys: [String]
        public var duplicateRequests: Int
        public var invalidCount: Int
        public var strict: Bool
        public var keepAlive: Bool
        public var scriptPending: Int
        public internal(set) var raw = Data()

        /// Seed 003's api_log events received by POST /api/logs.
        /// Session beacons received (POST /api/v1/sessions), in arrival order.
        public var sessions: [[String: Any]] {
            let object = (try? JSONSerialization.jsonObject(with: raw)) as? [String: Any]
            return object?["sessions"] as? [[String: Any]] ?? []
        }
        public var apiLogs: [[String: Any]] {
            let object = (try? JSONSerialization.jsonObject(with: raw)) as? [String: Any]
            return object?["api_logs"] as? [[String: Any]] ?? []
        }

        /// One POST /api/v1/qa/diagnostics, in arrival order.
        public struct Request: Decodable {
            public var time: String
            public var contentType: String?
            public var contentEncoding: String?
            public var hasAuthorization: Bool
            /// The X-Test-Run-ID and X-App-Version headers.
            public var testRunID: String?
            public var appVersion: String?
            public var idempotencyKey: String?
            /// As received (compressed when gzip'd).
            public var bodySize: Int
            /// nil while unanswered, and for scripted `close` / `store_then_hang`.
            public var status: Int?
            /// A repeated Idempotency-Key, answered with the first answer.
            public var duplicate: Bool?
            /// The script entry this request took, if any.
            public var scripted: ScriptEntry?

            enum CodingKeys: String, CodingKey {
                case time, status, duplicate, scripted
                case contentType = "content_type", contentEncoding = "content_encoding"
                case hasAuthorization = "has_authorization", testRunID = "test_run_id"
                case appVersion = "app_version", idempotencyKey = "idempotency_key", bodySize = "body_size"
            }
        }

        public struct ScriptEntry: Decodable {
            public var status: Int?
            public var message: String?
            public var delaySeconds: Double?
            public var close: Bool?
            public var storeThenHang: Bool?

            enum CodingKeys: String, CodingKey {
                case status, message, close
                case delaySeconds = "delay_seconds", storeThenHang = "store_then_hang"
            }
        }

        /// One stored upload (repeated keys are not stored again).
        public struct Stored: Decodable {
            public var idempotencyKey: String?
            /// From the payload.
            public var testRunID: String?
            public var diagnosticsID: String
            public var valid: Bool
            public var schemaErrors: [String]
            /// The body as sent, gunzipped; nil when it was not valid gzip.
            public var payloadText: String?

            public var payloadJSON: Data { Data((payloadText ?? "").utf8) }
            public var payload: [String: Any]? { (try? JSONSerialization.jsonObject(with: payloadJSON)) as? [String: Any] }
            public func decodePayload<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> T {
                try decoder.decode(type, from: payloadJSON)
            }

            enum CodingKeys: String, CodingKey {
                case valid
                case idempotencyKey = "idempotency_key", testRunID = "test_run_id", diagnosticsID = "diagnostics_id"
                case schemaErrors = "schema_errors", payloadText = "payload_text"
            }
        }

        enum CodingKeys: String, CodingKey {
            case requests, stored, strict
            case keepAlive = "keep_alive"
            case uniqueKeys = "unique_keys", duplicateRequests = "duplicate_requests"
            case invalidCount = "invalid_count", scriptPending = "script_pending"
        }
    }

    public let port: Int
    public var endpoint: String { "http://127.0.0.1:\(port)" }
    /// The diagnostics upload URL.
    public var uploadURL: URL { URL(string: endpoint + "/api/v1/qa/diagnostics")! }
    public let token: String

    private let process: Process
    private let folder: URL
    private let session: URLSession
    private let lock = NSLock()
    private var stopped = false

    static let python = "/usr/bin/python3"
    /// The repository root, from this file's path (Tests/CrashTestSupport/FakeCollector.swift).
    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    private init(process: Process, port: Int, folder: URL, token: String) {
        self.process = process
        self.port = port
        self.folder = folder
        self.token = token
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 10
        session = URLSession(configuration: configuration)
    }

    deinit { stop() }

    /// Starts a collector on a free loopback port; returns once it listens.
    public static func start(token: String = "test-token") throws -> FakeCollector {
        let root = repositoryRoot
        let script = root.appendingPathComponent("Tests/Support/fake_collector.py")
        let schema = root.appendingPathComponent("Schemas/diagnostics-payload.schema.json")
        for file in [script, schema] where !FileManager.default.fileExists(atPath: file.path) {
            throw Failure("FakeCollector: no \(file.path) (repository root taken from #filePath: \(root.path))")
        }
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw Failure("FakeCollector: no \(python); install python3 and python3-jsonschema")
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fake-collector-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let portFile = folder.appendingPathComponent("port")
        let errorFile = folder.appendingPathComponent("stderr.txt")
        _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [
            script.path, "--port-file", portFile.path, "--schema", schema.path, "--token", token,
            "--log", folder.appendingPathComponent("collector.log").path,
        ]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        do {
            process.standardError = try FileHandle(forWritingTo: errorFile)
            try process.run()
        } catch {
            try? FileManager.default.removeItem(at: folder)
            throw Failure("FakeCollector: cannot run \(python) \(script.path): \(error)")
        }

        func failure(_ what: String) -> Failure {
            let stderr = (try? String(contentsOf: errorFile, encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(at: folder)
            return Failure("FakeCollector: \(what); stderr:\n\(stderr)")
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if let text = try? String(contentsOf: portFile, encoding: .utf8),
               let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                return FakeCollector(process: process, port: port, folder: folder, token: token)
            }
            if !process.isRunning {
                process.waitUntilExit()
                throw failure("\(python) \(script.lastPathComponent) exited with status \(process.terminationStatus) before listening")
            }
            usleep(20_000)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw failure("no port file after 10 s")
    }

    /// Queues answers for the next uploads, e.g. `[["status": 500], ["delay_seconds": 5, "then": ["status": 201]],
    /// ["store_then_hang": true], ["close": true]]`.
    public func script(_ responses: [[String: Any]]) throws {
        try control("POST", "/control/script", ["responses": responses])
    }

    /// Forgets requests, stored payloads, the script, strict and keep-alive modes and api logs.
    public func reset() throws {
        try control("POST", "/control/reset", [:])
    }

    /// Strict: invalid uploads get 400 instead of being stored as invalid.
    public func setStrict(_ strict: Bool) throws {
        try control("POST", "/control/strict", ["strict": strict])
    }

    /// Keep upload connections open (off by default: uploads get `Connection: close`, because
    /// Linux URLSession silently re-sends a request whose reused connection closed unanswered).
    public func setKeepAlive(_ keepAlive: Bool) throws {
        try control("POST", "/control/keep_alive", ["keep_alive": keepAlive])
    }

    public func state() throws -> State {
        let data = try control("GET", "/control/state", nil)
        var state = try JSONDecoder().decode(State.self, from: data)
        state.raw = data
        return state
    }

    /// Polls the state until `condition` holds; throws after `timeout`.
    @discardableResult
    public func waitForState(timeout: Duration = .seconds(10), _ condition: (State) -> Bool) throws -> State {
        let deadline = ContinuousClock.now + timeout
        while true {
            let current = try state()
            if condition(current) { return current }
            if ContinuousClock.now > deadline {
                throw Failure("FakeCollector: condition not met after \(timeout); \(current.requests.count) requests, \(current.stored.count) stored")
            }
            usleep(20_000)
        }
    }

    /// The collector's request log so far (one line per answered request).
    public var logText: String {
        (try? String(contentsOf: folder.appendingPathComponent("collector.log"), encoding: .utf8)) ?? ""
    }

    /// SIGTERM, then waits (SIGKILL after 5 s); a hanging `store_then_hang` connection is closed.
    public func stop() {
        let alreadyStopped = lock.withLock { () -> Bool in
            defer { stopped = true }
            if !stopped { session.invalidateAndCancel() }
            return stopped
        }
        if alreadyStopped { return }
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            let deadline = ContinuousClock.now + .seconds(5)
            while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: folder)
    }

    /// A synchronous control call; throws unless the answer is 2xx.
    @discardableResult
    private func control(_ method: String, _ path: String, _ body: [String: Any]?) throws -> Data {
        var request = URLRequest(url: URL(string: endpoint + path)!, timeoutInterval: 10)
        request.httpMethod = method
        if let body {
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        final class Outcome: @unchecked Sendable {
            var data: Data?, status = 0, error: (any Error)?
        }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let task = try lock.withLock { () throws -> URLSessionDataTask in
            guard !stopped else { throw Failure("FakeCollector: \(method) \(path) after stop()") }
            return session.dataTask(with: request) { data, response, error in
                outcome.data = data
                outcome.status = (response as? HTTPURLResponse)?.statusCode ?? 0
                outcome.error = error
                done.signal()
            }
        }
        task.resume()
        if done.wait(timeout: .now() + 12) == .timedOut {
            throw Failure("FakeCollector: \(method) \(path) got no answer in 12 s")
        }
        if let error = outcome.error { throw Failure("FakeCollector: \(method) \(path): \(error)") }
        let data = outcome.data ?? Data()
        guard (200..<300).contains(outcome.status) else {
            throw Failure("FakeCollector: \(method) \(path) answered \(outcome.status): \(String(decoding: data, as: UTF8.self))")
        }
        return data
    }
}
