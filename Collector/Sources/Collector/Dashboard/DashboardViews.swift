// What each dashboard template (Templates/*.mustache) reads: plain stored values, with an upload's
// text as it came (the templates escape it). Properties named `sparkline`, `charts`, `trend` and
// `script` hold markup this code made and are the only ones the templates insert unescaped.
//
// Mustache looks a name up in the innermost section's value first, then in the enclosing ones: an
// optional that is nil is looked for further out. So each optional here has a name no enclosing
// view uses, and the rows of a table have no optionals (a "—" instead).

/// The Connect App modal (connect-modal.mustache), on every page of the layout.
struct ConnectModalView {
    let hosts: [String]
    let port: Int
    let loopbackWarning: String?
    /// Dashboard.connectScript: a constant, inserted byte for byte (the CSP names its hash).
    let script: String
}

/// A name and a value of a `<dl>`.
struct Fact {
    let name: String
    let value: String
}

/// A table's rows and how many there are (or were, before a cut). nil when there are none: the
/// template then shows its "None" line.
struct Table<Row> {
    let count: Int
    let rows: [Row]

    init?(_ rows: [Row], count: Int? = nil) {
        guard !rows.isEmpty else { return nil }
        self.rows = rows
        self.count = count ?? rows.count
    }
}

/// alert-banner.mustache.
struct AlertBannerView {
    struct Entry {
        let id: Int64
        let title: String
        let bundleID: String
        let lastHour: Int
        let baselinePerHour: String
    }

    let minimum: Int
    let factor: String
    let entries: [Entry]
}

/// pages.mustache: "newest" / "older" links, joined by a middle dot.
struct PagesView {
    struct Link {
        let separated: Bool
        let href: String
        let label: String
    }

    let links: [Link]

    init?(_ links: [(href: String, label: String)]) {
        guard !links.isEmpty else { return nil }
        self.links = links.enumerated().map { Link(separated: $0.offset > 0, href: $0.element.href, label: $0.element.label) }
    }
}

/// issues.mustache.
struct IssuesPageView {
    struct CrashFree {
        struct Row {
            let day: String
            let bundleID: String
            let version: String
            let usersClass: String
            let crashFreeUsers: String
            let sessionsClass: String
            let crashFreeSessions: String
            let sessions: Int
        }

        /// Two CrashFreeChart SVGs.
        let charts: String
        let rows: [Row]
    }

    struct TopCrashes {
        struct Row {
            let rank: Int
            let id: Int64
            let title: String
            let kind: String
            let bundleID: String
            let events: Int
            let sparkline: String
        }

        let label: String
        let ranked: Table<Row>?
    }

    struct IssueRow {
        let id: Int64
        let title: String
        let spike: Bool
        let subtitle: String
        let kind: String
        let bundleID: String
        let events: Int
        let sparkline: String
        let users: Int
        let versions: String
        let firstSeen: String
        let lastSeen: String
    }

    let title = "Issues"
    let connect: ConnectModalView
    let alerts: AlertBannerView?
    let crashFree: CrashFree?
    let topCrashes: [TopCrashes]
    let issueTable: Table<IssueRow>?
}

/// issue.mustache.
struct IssuePageView {
    struct Listed {
        let current: Bool
        let occurred: String
        let received: String
        let version: String
        let host: String
        let user: String
        let href: String
    }

    let title: String
    let connect: ConnectModalView
    let spike: Bool
    let subtitle: String
    let eventCount: Int
    let userCount: Int
    let firstSeen: String
    let lastSeen: String
    let versions: String
    let bundleID: String
    let kind: String
    let signature: String
    let alerts: AlertBannerView?
    /// The 14-day sparkline.
    let trend: String
    let event: EventView?
    let eventsHeading: String
    let listedCount: Int
    let listed: [Listed]
    let pages: PagesView?
}

/// event.mustache: one event whole.
struct EventView {
    struct Request {
        let method: String
        let route: String
        let requestID: String
        let traceID: String
        let ageMilliseconds: Int
        let onCrashingThread: Bool
        let threadID: String
    }

    struct Frame {
        let rowClass: String
        let index: Int
        let module: String
        let fullFunction: String
        let function: String
        let location: String
        let place: String
    }

    struct Thread {
        let name: String
        let id: String
        /// One frame a line.
        let lines: String
    }

    struct Log {
        let level: String
        let timestamp: String
        let tag: String
        let message: String
        let hasMetadata: Bool
        let metadata: String
    }

    struct NetworkError {
        let timestamp: String
        let method: String
        let url: String
        let status: String
        let type: String
        let message: String
        let durationMilliseconds: Int
        let retries: Int
    }

    struct Image {
        let path: String
        let buildID: String
        let start: String
        let end: String
    }

    let heading: String
    let facts: [Fact]
    let requestTable: Table<Request>?
    let crashedThreadName: String?
    let frameTable: Table<Frame>?
    let threadTable: Table<Thread>?
    let logCount: Int
    let logTable: Table<Log>?
    let networkErrorCount: Int
    let networkErrorTable: Table<NetworkError>?
    let keyTable: Table<Fact>?
    let customData: String?
    let appFacts: [Fact]
    let hostFacts: [Fact]
    let imageTable: Table<Image>?
}

/// logs.mustache.
struct LogsPageView {
    struct Row {
        let time: String
        let app: String
        let method: String
        let url: String
        /// The event's pretty JSON, cut to Dashboard.shownLogEventCharacters.
        let event: String
        let cut: Bool
        let characters: Int
        /// `before` of the read API's page that holds only this log.
        let wholeBefore: Int64
        let statusClass: String
        let status: Int
        let duration: String
    }

    let title = "API logs"
    let connect: ConnectModalView
    let lead: String
    let limit: Int
    let logTable: Table<Row>?
    let pages: PagesView?
}

/// error.mustache.
struct ErrorPageView {
    let message: String
}
