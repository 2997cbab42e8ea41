// A swift-log LogHandler: log records at or above a chosen level become breadcrumbs (level, label
// as tag, metadata kept), and every record can also go on to another handler. No regular
// expression runs on the caller's thread: breadcrumbs stay in this host's session file as logged,
// and are redacted once, off-thread, when a payload is built for upload (`Upload.redactor`, which
// every destination's payload goes through), before anything leaves the process.
//
//     LoggingSystem.bootstrap { label in
//         CrashReportingLogHandler(label: label, forwardingTo: StreamLogHandler.standardError(label: label))
//     }
import CrashReporting
import Logging

public struct CrashReportingLogHandler: LogHandler {
    public let label: String
    /// Records at or above this level become breadcrumbs.
    public var breadcrumbLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    /// Applied to messages and metadata values on the caller's thread before they are kept, when
    /// set: only for text that must not reach even this host's reports directory unredacted. Costs
    /// ~85 µs a record (tools/bench-log-handler); nil (the default) leaves redaction to the upload.
    public var redactor: Redactor?
    private var forward: (any LogHandler)?

    /// The level Logger checks before calling `log`: low enough for the breadcrumbs and for the
    /// handler records are forwarded to.
    public var logLevel: Logger.Level {
        get { min(breadcrumbLevel, forward?.logLevel ?? breadcrumbLevel) }
        set {
            breadcrumbLevel = newValue
            forward?.logLevel = newValue
        }
    }

    public init(label: String, breadcrumbLevel: Logger.Level = .info, redactor: Redactor? = nil,
                metadataProvider: Logger.MetadataProvider? = nil, forwardingTo forward: (any LogHandler)? = nil) {
        self.label = label
        self.breadcrumbLevel = breadcrumbLevel
        self.redactor = redactor
        self.metadataProvider = metadataProvider
        self.forward = forward
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        // The common case — metadata only on the call, no provider, handler metadata, error or
        // redactor — writes the call's metadata straight into the breadcrumb: no dictionary is
        // built (tools/bench-log-handler).
        if event.level >= breadcrumbLevel, forward == nil, metadata.isEmpty, metadataProvider == nil,
           event.error == nil, redactor == nil {
            let message = event.message.description
            if let explicit = event.metadata, !explicit.isEmpty {
                CrashReporter.log(message, level: Self.level(event.level), tag: label,
                                  metadataPairs: explicit.lazy.map { (key: $0.key, value: Self.text($0.value)) })
            } else {
                CrashReporter.log(message, level: Self.level(event.level), tag: label, metadata: nil)
            }
            return
        }
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let explicit = event.metadata { merged.merge(explicit) { _, new in new } }
        if event.level >= breadcrumbLevel {
            var flat = merged.mapValues { $0.description }
            if let error = event.error { flat["error"] = String(describing: error) }
            var message = event.message.description
            if let redactor {
                flat = flat.mapValues(redactor.redact)
                message = redactor.redact(message)
            }
            CrashReporter.log(message, level: Self.level(event.level), tag: label, metadata: flat.isEmpty ? nil : flat)
        }
        if let forward, event.level >= forward.logLevel {
            var forwarded = event
            forwarded.metadata = merged
            forward.log(event: forwarded)
        }
    }

    static func text(_ value: Logger.Metadata.Value) -> String {
        if case .string(let text) = value { return text }
        return value.description
    }

    static func level(_ level: Logger.Level) -> CrashReporter.LogLevel {
        switch level {
        case .trace, .debug: return .debug
        case .info, .notice: return .info
        case .warning: return .warning
        case .error: return .error
        case .critical: return .fatal
        }
    }
}
