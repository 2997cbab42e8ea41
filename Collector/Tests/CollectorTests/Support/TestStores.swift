// The store under test: a fresh SQLite file by default; with COLLECTOR_TEST_POSTGRES_URL set (an
// admin URL, as tools/test-collector sets it), a fresh PostgreSQL database per test on that server.
// The same suite thus runs against both stores.
import Collector
import Foundation
import Logging
import PostgresNIO

struct TestDatabase: Sendable {
    /// The URL or path a store opens; a second store may open it too (two collectors, one database).
    let location: String
    let isPostgres: Bool
    private let drop: @Sendable () async -> Void

    static var postgresAdminURL: String? {
        ProcessInfo.processInfo.environment["COLLECTOR_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    static var logger: Logger {
        var logger = Logger(label: "collector-test-store")
        logger.logLevel = .error
        return logger
    }

    /// Creates an empty database; `remove()` deletes it.
    static func make() async throws -> TestDatabase {
        let name = "collector_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        guard let admin = postgresAdminURL else {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            return TestDatabase(location: directory.appendingPathComponent("collector.sqlite").path, isPostgres: false) {
                try? FileManager.default.removeItem(at: directory)
            }
        }
        try await withAdmin(admin) { client in
            try await client.query("CREATE DATABASE \(unescaped: name)", logger: logger)
        }
        var url = URLComponents(string: admin)!
        url.path = "/" + name
        return TestDatabase(location: url.string!, isPostgres: true) {
            try? await withAdmin(admin) { client in
                try await client.query("DROP DATABASE IF EXISTS \(unescaped: name) WITH (FORCE)", logger: logger)
            }
        }
    }

    func open() async throws -> any Store {
        isPostgres ? try await PostgresStore(url: location, logger: Self.logger) : try SQLiteStore(path: location)
    }

    func remove() async { await drop() }

    private static func withAdmin(_ url: String, _ body: @escaping @Sendable (PostgresClient) async throws -> Void) async throws {
        let parts = URLComponents(string: url)!
        let client = PostgresClient(configuration: .init(
            host: parts.host ?? "127.0.0.1", port: parts.port ?? 5432, username: parts.user ?? "postgres",
            password: parts.password, database: String(parts.path.dropFirst()).isEmpty ? "postgres" : String(parts.path.dropFirst()),
            tls: .disable), backgroundLogger: logger)
        let runner = Task { await client.run() }
        defer { runner.cancel() }
        try await body(client)
    }
}
