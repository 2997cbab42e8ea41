// A small wrapper over the system's SQLite C API: a connection, prepared statements with typed
// binds and columns, and transactions. Not thread-safe on purpose: SQLiteStore owns one connection
// and serialises every use of it (SQLite allows one writer at a time anyway).
import CSQLite
import Foundation

struct SQLiteError: Error, CustomStringConvertible {
    var code: Int32
    var message: String
    var description: String { "SQLite error \(code): \(message)" }

    /// A UNIQUE or PRIMARY KEY constraint failed (extended result codes are on).
    var isConstraintViolation: Bool { code & 0xff == SQLITE_CONSTRAINT }
}

/// A value bound to a statement parameter.
enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
}

extension SQLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral {
    init(stringLiteral value: String) { self = .text(value) }
    init(integerLiteral value: Int64) { self = .integer(value) }
    init(nilLiteral: ()) { self = .null }

    static func optional(_ text: String?) -> SQLValue { text.map(SQLValue.text) ?? .null }
    static func int(_ value: Int) -> SQLValue { .integer(Int64(value)) }
    static func optionalInteger(_ value: Int64?) -> SQLValue { value.map(SQLValue.integer) ?? .null }
    static func bool(_ value: Bool) -> SQLValue { .integer(value ? 1 : 0) }
}

final class SQLiteConnection {
    private var handle: OpaquePointer?
    /// Prepared once, reused: the ingest path runs the same dozen statements for every upload.
    private var cache: [String: SQLiteStatement] = [:]

    /// Opens (creating) the file, turns on WAL (readers don't block the writer), foreign keys, and
    /// waits up to `busyTimeout` for a lock another process holds instead of failing at once.
    init(path: String, busyTimeout: Duration = .seconds(5)) throws {
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        // A new file is the owner's only (0600), whatever the umask: it holds every report and token
        // scope. SQLite gives its -wal and -shm files the database file's permissions.
        if path != ":memory:", !path.hasPrefix("file:") {
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 { close(fd) }
        }
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
            sqlite3_close(handle)
            throw SQLiteError(code: status, message: message)
        }
        sqlite3_extended_result_codes(handle, 1)
        let milliseconds = busyTimeout.components.seconds * 1000 + busyTimeout.components.attoseconds / 1_000_000_000_000_000
        sqlite3_busy_timeout(handle, Int32(clamping: milliseconds))
        if path != ":memory:" { try execute("PRAGMA journal_mode = WAL") }
        // NORMAL is durable across application crashes in WAL mode; only power loss can lose the last commits.
        try execute("PRAGMA synchronous = NORMAL")
        try execute("PRAGMA foreign_keys = ON")
    }

    deinit {
        cache.removeAll()   // statements are finalized before the connection closes
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements without parameters (schema, pragmas).
    func execute(_ sql: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &error)
        if status != SQLITE_OK {
            let message = error.map { String(cString: $0) } ?? "unknown"
            sqlite3_free(error)
            throw SQLiteError(code: status, message: message)
        }
    }

    /// A cached prepared statement, reset and with `values` bound to ?1, ?2…
    func prepare(_ sql: String, _ values: [SQLValue] = []) throws -> SQLiteStatement {
        let statement: SQLiteStatement
        if let cached = cache[sql] {
            statement = cached
            statement.reset()
        } else {
            var raw: OpaquePointer?
            let status = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
            guard status == SQLITE_OK, let raw else { throw lastError(status) }
            statement = SQLiteStatement(raw, connection: self)
            cache[sql] = statement
        }
        try statement.bind(values)
        return statement
    }

    /// Runs a statement that returns no rows; the number of rows changed.
    @discardableResult
    func run(_ sql: String, _ values: [SQLValue] = []) throws -> Int {
        let statement = try prepare(sql, values)
        while try statement.step() {}
        return Int(sqlite3_changes(handle))
    }

    /// Every row of a query, each read by `row`.
    func query<T>(_ sql: String, _ values: [SQLValue] = [], row: (SQLiteStatement) throws -> T) throws -> [T] {
        let statement = try prepare(sql, values)
        var rows: [T] = []
        while try statement.step() { rows.append(try row(statement)) }
        return rows
    }

    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// BEGIN IMMEDIATE takes the write lock up front, so a read-then-write transaction (idempotency
    /// check, then insert) cannot be overtaken by another writer between its read and its write.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    fileprivate func lastError(_ status: Int32) -> SQLiteError {
        SQLiteError(code: status, message: String(cString: sqlite3_errmsg(handle)))
    }
}

final class SQLiteStatement {
    private let raw: OpaquePointer
    private unowned let connection: SQLiteConnection

    fileprivate init(_ raw: OpaquePointer, connection: SQLiteConnection) {
        self.raw = raw
        self.connection = connection
    }

    deinit { sqlite3_finalize(raw) }

    fileprivate func reset() {
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
    }

    fileprivate func bind(_ values: [SQLValue]) throws {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32
            switch value {
            case .null: status = sqlite3_bind_null(raw, index)
            case .integer(let number): status = sqlite3_bind_int64(raw, index, number)
            case .real(let number): status = sqlite3_bind_double(raw, index, number)
            // Bound as a C string, U+0000 would cut the text short: U+FFFD, as PostgresStore stores it.
            case .text(let text): status = sqlite3_bind_text(raw, index, storableText(text), -1, csqlite_transient())
            }
            guard status == SQLITE_OK else { throw connection.lastError(status) }
        }
    }

    /// True when a row is ready, false when the statement is done.
    func step() throws -> Bool {
        switch sqlite3_step(raw) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let status: throw connection.lastError(status)
        }
    }

    func int(_ column: Int32) -> Int64 { sqlite3_column_int64(raw, column) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(raw, column) }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(raw, column) == SQLITE_NULL }

    func text(_ column: Int32) -> String {
        guard let bytes = sqlite3_column_text(raw, column) else { return "" }
        return String(cString: bytes)
    }

    func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }
    func optionalInt(_ column: Int32) -> Int64? { isNull(column) ? nil : int(column) }
}
