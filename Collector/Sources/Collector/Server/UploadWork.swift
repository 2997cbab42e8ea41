// Where an upload's work runs, and how many may wait for it. Inflating, scanning, decoding,
// symbolicating, grouping and storing run on a small pool of threads of their own (a task
// executor over NIOThreadPool), not on Swift's cooperative pool: the pages, the read API and
// /health keep their threads whatever the uploads cost. A gate admits a bounded number of uploads
// at once, overall and per token, before their bodies are read: past it, 503 (the collector is
// full) or 429 (this token has enough in flight), both with Retry-After.
import NIOCore
import NIOPosix
import Synchronization

/// Counts uploads in flight (admitted, body being read or work queued or running).
final class UploadGate: Sendable {
    enum Decision: Equatable {
        case admitted
        /// Every slot is taken: 503.
        case full
        /// This token holds its share: 429.
        case tokenFull
    }

    let overall: Int
    let perToken: Int
    private let state = Mutex<(total: Int, byToken: [String: Int])>((0, [:]))

    init(overall: Int, perToken: Int) {
        self.overall = max(1, overall)
        self.perToken = max(1, perToken)
    }

    /// Takes a slot for `token` (a key naming the credential; only accepted ones get here, so the
    /// table stays as small as the configured tokens). Every `.admitted` is followed by `leave`.
    func enter(_ token: String) -> Decision {
        state.withLock { state in
            if state.byToken[token, default: 0] >= perToken { return .tokenFull }
            if state.total >= overall { return .full }
            state.total += 1
            state.byToken[token, default: 0] += 1
            return .admitted
        }
    }

    func leave(_ token: String) {
        state.withLock { state in
            state.total -= 1
            let left = state.byToken[token, default: 1] - 1
            state.byToken[token] = left > 0 ? left : nil
        }
    }

    var inFlight: Int { state.withLock { $0.total } }

    /// Runs `body` holding a slot, or answers 503/429 at once.
    func admitting(_ token: String, _ body: () async throws -> APIAnswer) async rethrows -> APIAnswer {
        switch enter(token) {
        case .full:
            return .busy(retryAfter: 1, message: "The collector has \(overall) uploads in flight; retry after 1 s")
        case .tokenFull:
            return .tooManyInFlight(retryAfter: 1, message: "This token has \(perToken) uploads in flight; retry after 1 s")
        case .admitted:
            defer { leave(token) }
            return try await body()
        }
    }
}

/// A task executor on threads of its own: async code run with its preference (and the default
/// actors it calls) never takes a cooperative thread.
final class UploadExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: NIOThreadPool is thread-safe; it is not marked Sendable in every NIO version.
    private let pool: NIOThreadPool

    init(threads: Int) {
        pool = NIOThreadPool(numberOfThreads: max(1, threads))
        pool.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        pool.submit { _ in job.runSynchronously(on: executor) }
    }

    /// `body` with this executor preferred: its nonisolated async work runs on the pool.
    func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await withTaskExecutorPreference(self) { try await body() }
    }

    /// Shared by every collector in the process (tests start many): threads are not per server.
    static let shared = UploadExecutor(threads: max(2, System.coreCount))
}

struct BusyBody: Codable {
    var error: String
    var message: String
    var retry_after: Int
}

extension APIAnswer {
    static func busy(retryAfter: Int, message: String) -> APIAnswer {
        var answer = APIAnswer.json(503, BusyBody(error: "overloaded", message: message, retry_after: retryAfter))
        answer.retryAfter = retryAfter
        return answer
    }

    static func tooManyInFlight(retryAfter: Int, message: String) -> APIAnswer {
        var answer = APIAnswer.json(429, BusyBody(error: "too_many_uploads", message: message, retry_after: retryAfter))
        answer.retryAfter = retryAfter
        return answer
    }
}
