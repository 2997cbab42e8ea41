// Seed 000's retention: diagnostics auto-deleted after 30 days (configurable). Runs once at start
// and then hourly, beside the HTTP server in the application's service group.
import Foundation
import Logging
import ServiceLifecycle

struct RetentionService: Service {
    let store: any Store
    let days: Int
    let logger: Logger
    var interval: Duration = .seconds(3600)

    func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            await purgeOnce()
            // Ends early (cancellation) on shutdown: a purge never holds the server up.
            let interval = interval
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }

    func purgeOnce(now: Date = Date()) async {
        do {
            let counts = try await store.purge(receivedBefore: now.addingTimeInterval(-Double(days) * 86_400))
            if counts.uploads + counts.apiLogs + counts.issues > 0 {
                logger.info("retention: deleted \(counts.uploads) uploads, \(counts.apiLogs) API logs, \(counts.issues) issues older than \(days) days")
            }
        } catch {
            logger.error("retention failed: \(error)")
        }
    }
}
