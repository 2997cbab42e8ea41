// The schemas as the collector created them before they had versions (main at d86e4da, before
// decision 0032), copied verbatim: the databases that code made must open in today's stores.
enum UnversionedSchema {
    /// SQLite: the statements run at every start, then the grouping_rule column added when missing.
    static let sqlite = """
        CREATE TABLE IF NOT EXISTS uploads (
            id INTEGER PRIMARY KEY,
            diagnostics_id TEXT NOT NULL UNIQUE,
            idempotency_key TEXT UNIQUE,
            test_run_id TEXT NOT NULL,
            received_at INTEGER NOT NULL,
            answer TEXT NOT NULL,
            bundle_id TEXT NOT NULL,
            app_name TEXT NOT NULL,
            app_version TEXT NOT NULL,
            build_number TEXT NOT NULL,
            environment TEXT NOT NULL,
            user_id TEXT,
            user_key TEXT NOT NULL,
            payload TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS uploads_received ON uploads(received_at);
        CREATE TABLE IF NOT EXISTS issues (
            id INTEGER PRIMARY KEY,
            bundle_id TEXT NOT NULL,
            signature TEXT NOT NULL,
            kind TEXT NOT NULL,
            title TEXT NOT NULL,
            subtitle TEXT NOT NULL,
            exception_type TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            UNIQUE (bundle_id, signature)
        );
        CREATE TABLE IF NOT EXISTS reports (
            id INTEGER PRIMARY KEY,
            upload_id INTEGER NOT NULL REFERENCES uploads(id) ON DELETE CASCADE,
            issue_id INTEGER REFERENCES issues(id) ON DELETE SET NULL,
            report_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            occurred_at INTEGER NOT NULL,
            received_at INTEGER NOT NULL,
            exception_type TEXT NOT NULL,
            exception_message TEXT NOT NULL,
            symbolicated INTEGER NOT NULL,
            app_version TEXT NOT NULL,
            user_key TEXT NOT NULL,
            report TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS reports_issue ON reports(issue_id, occurred_at);
        CREATE INDEX IF NOT EXISTS reports_upload ON reports(upload_id);
        CREATE INDEX IF NOT EXISTS reports_received ON reports(received_at, issue_id);
        CREATE TABLE IF NOT EXISTS sessions (
            bundle_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            app_version TEXT NOT NULL,
            user_key TEXT NOT NULL,
            day TEXT NOT NULL,
            first_seen INTEGER NOT NULL,
            last_seen INTEGER NOT NULL,
            crashed INTEGER NOT NULL,
            PRIMARY KEY (bundle_id, session_id)
        );
        CREATE INDEX IF NOT EXISTS sessions_day ON sessions(day);
        CREATE TABLE IF NOT EXISTS api_logs (
            id INTEGER PRIMARY KEY,
            received_at INTEGER NOT NULL,
            app_id TEXT,
            method TEXT,
            url TEXT,
            status_code INTEGER,
            duration INTEGER,
            timestamp INTEGER,
            event TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS api_logs_received ON api_logs(received_at);
        """

    static let sqliteGroupingRule = "ALTER TABLE issues ADD COLUMN grouping_rule INTEGER NOT NULL DEFAULT 1"

    /// PostgreSQL: every statement, in order, under an advisory lock; the last one is the grouping_rule column.
    static let postgres: [String] = [
        """
        CREATE TABLE IF NOT EXISTS uploads (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            diagnostics_id TEXT NOT NULL UNIQUE,
            idempotency_key TEXT UNIQUE,
            test_run_id TEXT NOT NULL,
            received_at BIGINT NOT NULL,
            answer TEXT NOT NULL,
            bundle_id TEXT NOT NULL,
            app_name TEXT NOT NULL,
            app_version TEXT NOT NULL,
            build_number TEXT NOT NULL,
            environment TEXT NOT NULL,
            user_id TEXT,
            user_key TEXT NOT NULL,
            payload TEXT NOT NULL
        )
        """,
        "CREATE INDEX IF NOT EXISTS uploads_received ON uploads(received_at)",
        """
        CREATE TABLE IF NOT EXISTS issues (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            bundle_id TEXT NOT NULL,
            signature TEXT NOT NULL,
            kind TEXT NOT NULL,
            title TEXT NOT NULL,
            subtitle TEXT NOT NULL,
            exception_type TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            UNIQUE (bundle_id, signature)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS reports (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            upload_id BIGINT NOT NULL REFERENCES uploads(id) ON DELETE CASCADE,
            issue_id BIGINT REFERENCES issues(id) ON DELETE SET NULL,
            report_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            occurred_at BIGINT NOT NULL,
            received_at BIGINT NOT NULL,
            exception_type TEXT NOT NULL,
            exception_message TEXT NOT NULL,
            symbolicated BOOLEAN NOT NULL,
            app_version TEXT NOT NULL,
            user_key TEXT NOT NULL,
            report TEXT NOT NULL
        )
        """,
        "CREATE INDEX IF NOT EXISTS reports_issue ON reports(issue_id, occurred_at)",
        "CREATE INDEX IF NOT EXISTS reports_upload ON reports(upload_id)",
        "CREATE INDEX IF NOT EXISTS reports_received ON reports(received_at, issue_id)",
        """
        CREATE TABLE IF NOT EXISTS sessions (
            bundle_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            app_version TEXT NOT NULL,
            user_key TEXT NOT NULL,
            day TEXT NOT NULL,
            first_seen BIGINT NOT NULL,
            last_seen BIGINT NOT NULL,
            crashed BOOLEAN NOT NULL,
            PRIMARY KEY (bundle_id, session_id)
        )
        """,
        "CREATE INDEX IF NOT EXISTS sessions_day ON sessions(day)",
        """
        CREATE TABLE IF NOT EXISTS api_logs (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            received_at BIGINT NOT NULL,
            app_id TEXT,
            method TEXT,
            url TEXT,
            status_code BIGINT,
            duration BIGINT,
            timestamp BIGINT,
            event TEXT NOT NULL
        )
        """,
        "CREATE INDEX IF NOT EXISTS api_logs_received ON api_logs(received_at)",
        // Added with grouping rule 2: issues from before it were signed by rule 1.
        "ALTER TABLE issues ADD COLUMN IF NOT EXISTS grouping_rule INTEGER NOT NULL DEFAULT 1",
    ]
}
