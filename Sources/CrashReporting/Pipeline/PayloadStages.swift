// The steps between a record's payload and its encoding, behind one protocol: the pass
// (Uploader.send) builds the payload, runs these in order, then encodes it for each destination.
// A stage that refuses the record says why, and the record is quarantined with that reason; a
// new step (a field policy, a size rule) is a new stage in `PayloadStages.standard`.
import CrashReportModel

/// Why a stage will not let a payload go: the record is quarantined with this reason.
struct StageRefusal: Error {
    var reason: String
}

protocol PayloadStage {
    /// Names the stage in logs and quarantine reasons.
    var name: String { get }
    func run(_ payload: inout DiagnosticsPayload) throws(StageRefusal)
}

/// Seed 000's limits (counts, lengths, custom data size).
struct LimitsStage: PayloadStage {
    var name: String { "limits" }
    func run(_ payload: inout DiagnosticsPayload) throws(StageRefusal) { PayloadLimits.apply(&payload) }
}

/// The redactor over every free text, remembering texts already seen in this pass.
struct RedactStage: PayloadStage {
    let memo: RedactionMemo
    var name: String { "redact" }
    func run(_ payload: inout DiagnosticsPayload) throws(StageRefusal) { memo.redactor.apply(to: &payload, noting: memo.redactNoting) }
}

/// The seed 000 verifier over the final payload: a payload it still flags is not sent.
struct VerifyStage: PayloadStage {
    let memo: RedactionMemo
    var name: String { "verify" }
    func run(_ payload: inout DiagnosticsPayload) throws(StageRefusal) {
        let findings = memo.findings(in: payload)
        guard findings.isEmpty else {
            throw StageRefusal(reason: "redaction check failed, not sent: " + findings.prefix(5).map { "\($0)" }.joined(separator: "; "))
        }
    }
}

enum PayloadStages {
    /// Limits first (no time spent redacting what is cut anyway), redaction, limits again (a
    /// replacement can be longer than what it replaced), then the check.
    static func standard(memo: RedactionMemo) -> [any PayloadStage] {
        [LimitsStage(), RedactStage(memo: memo), LimitsStage(), VerifyStage(memo: memo)]
    }

    /// Runs `stages` in order; the first refusal stops the run.
    static func run(_ stages: [any PayloadStage], on payload: inout DiagnosticsPayload) throws(StageRefusal) {
        for stage in stages { try stage.run(&payload) }
    }
}

/// The privacy stages as an upload pass runs them on a payload (one memo for the pass, the
/// default redactor and verifier): what `tools/bench-privacy` times.
@_spi(Benchmarks) public final class UploadPassPrivacy {
    private let memo: RedactionMemo

    /// `verifierHints` false: every check on every text, as before Decision 0040.
    public init(verifierHints: Bool = true) {
        memo = RedactionMemo(redactor: .seed000, verifier: RedactionVerifier(knownNames: [], usesHints: verifierHints))
    }

    /// `RedactStage`: the seed 000 redactor over every free text, each distinct text once.
    public func redact(_ payload: inout DiagnosticsPayload) { memo.redactor.apply(to: &payload, noting: memo.redactNoting) }

    /// The payload's JSON, as the verify stage encodes it and the send then reuses (the pass's
    /// memo keeps it): the benchmark times the stage without it too.
    public func encode(_ payload: DiagnosticsPayload) { _ = try? memo.json(payload) }

    /// `VerifyStage`'s check: how many findings it would refuse the payload for.
    /// `readingBytes` false: through Foundation's JSON tree, as before Decision 0040.
    public func verify(_ payload: DiagnosticsPayload, readingBytes: Bool = true) -> Int {
        memo.findings(in: payload, readingBytes: readingBytes).count
    }
}
