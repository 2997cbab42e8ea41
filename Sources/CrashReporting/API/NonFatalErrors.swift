// Non-fatal errors (seed 001 §4.3, seed 004's ReportableError), with seed 004's known gaps fixed:
// userInfo holds arrays, dictionaries and nested Codable values; NSError and its underlying errors
// are read; reserved keys are refused; a payload without an error can be posted; and every call
// says whether the report was stored (a receipt) or why not (a thrown ReportingError). Each report
// is a record in pending/ carrying the current stack, the breadcrumbs, keys and user id.
import CCrashCapture
import CrashReportModel
import Foundation
import Glibc

/// A key of an error's userInfo. Keys that the report itself uses are reserved.
public struct ErrorPayloadKey: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }
    public var description: String { rawValue }

    /// Names used by the report (seed 004's payload and this project's record): refused as keys.
    public static let reserved: Set<String> = [
        "type", "code", "domain", "message", "environment", "reported_at", "platform", "mobile",
        "stack", "underlying", "user_info", "reportable",
    ]
}

/// A JSON value for userInfo: scalars, arrays, dictionaries, and any Encodable through `encoding`.
public typealias ErrorPayloadValue = JSONValue

extension JSONValue {
    /// Any Encodable value (a struct, an enum, a DecodingError's context…), through JSON.
    public static func encoding<T: Encodable>(_ value: T) throws -> JSONValue {
        let data = try JSONEncoder().encode(value)
        return try JSONDecoder().decode(JSONValue.self, from: data)
    }

    /// From whatever an NSError's userInfo holds.
    init(any value: Any, depth: Int = 0) {
        switch value {
        case let value as ErrorPayloadValue: self = value
        case let value as Bool: self = .bool(value)
        case let value as Int: self = .int(value)
        case let value as Double: self = .double(value)
        case let value as String: self = .string(value)
        case let value as URL: self = .string(value.absoluteString)
        case let value as [Any] where depth < 8: self = .array(value.map { ErrorPayloadValue(any: $0, depth: depth + 1) })
        case let value as [String: Any] where depth < 8:
            self = .object(value.mapValues { ErrorPayloadValue(any: $0, depth: depth + 1) })
        case let value as NSError: self = .object(["domain": .string(value.domain), "code": .int(value.code),
                                                   "message": .string(value.localizedDescription)])
        default: self = .string(String(describing: value))
        }
    }
}

/// An error that knows how it should be reported (seed 004).
public protocol ReportableError: Error {
    /// Reverse-DNS domain; one without a dot is qualified with the configured appID.
    static var domain: String { get }
    var code: Int { get }
    /// A developer-facing, non-localized description.
    var message: String { get }
    /// False for errors worth a breadcrumb but not a report (a cancelled request). Default true.
    var isReportable: Bool { get }
    var userInfo: [ErrorPayloadKey: ErrorPayloadValue] { get }
}

extension ReportableError {
    public var isReportable: Bool { true }
    public var userInfo: [ErrorPayloadKey: ErrorPayloadValue] { [:] }
}

/// Seed 001 §5.1's error domains. Reported as "<appID>.<name>".
public enum CrashDomain {
    public static let network = "network"
    public static let auth = "auth"
    public static let database = "database"
    public static let parsing = "parsing"
    public static let storage = "storage"
    public static let ui = "ui"
}

/// Seed 001 §5.2's error codes: 1000s network, 2000s auth, 3000s database, 4000s parsing,
/// 5000s storage.
public enum CrashErrorCode {
    public static let networkTimeout = 1001
    public static let networkUnreachable = 1002
    public static let networkUnauthorized = 1003
    public static let authInvalidToken = 2001
    public static let authExpiredSession = 2002
    public static let authInvalidCredentials = 2003
    public static let dbQueryFailed = 3001
    public static let dbInsertFailed = 3002
    public static let dbNotFound = 3003
    public static let parseDecodingFailed = 4001
    public static let parseInvalidFormat = 4002
    public static let storageUploadFailed = 5001
    public static let storageDownloadFailed = 5002
}

/// Proof that a non-fatal report was stored; it is uploaded with the crash reports.
public struct NonFatalReceipt: Sendable, Equatable {
    public var recordID: String
    public var path: String
}

/// Why a report was not stored.
public enum ReportingError: Error, Equatable, CustomStringConvertible {
    case notStarted
    case reservedKey(String)
    case storageFailed(String)
    case customDataTooLarge(bytes: Int)

    public var description: String {
        switch self {
        case .notStarted: return "CrashReporter.start has not been called"
        case .reservedKey(let key): return "userInfo key \"\(key)\" is reserved by the report format"
        case .storageFailed(let reason): return "the report could not be stored: \(reason)"
        case .customDataTooLarge(let bytes): return "custom data would be \(bytes) bytes of JSON; at most 102400 are kept"
        }
    }
}

extension CrashReporter {
    /// Records a non-fatal error. ReportableError values report their own domain, code, message
    /// and userInfo; NSError (and any Swift error bridged to it) reports its domain, code,
    /// userInfo and chain of underlying errors. `userInfo` adds to (and overrides) the error's.
    /// Returns nil for a ReportableError whose isReportable is false (it only leaves a breadcrumb).
    @discardableResult
    public static func record(error: any Error, userInfo: [ErrorPayloadKey: ErrorPayloadValue] = [:]) throws -> NonFatalReceipt? {
        if let reportable = error as? any ReportableError {
            let merged = reportable.userInfo.merging(userInfo) { _, additional in additional }
            let domain = type(of: reportable).domain
            guard reportable.isReportable else {
                log("\(domain) \(reportable.code): \(reportable.message) (not reported)", level: .warning, tag: "error")
                return nil
            }
            return try store(domain: domain, code: reportable.code, message: reportable.message, userInfo: merged, underlying: [])
        }
        let nsError = error as NSError
        var info: [ErrorPayloadKey: ErrorPayloadValue] = [:]
        for (key, value) in nsError.userInfo where key != NSUnderlyingErrorKey && key != "NSMultipleUnderlyingErrorsKey" {
            info[ErrorPayloadKey(ErrorPayloadKey.reserved.contains(key) ? "ns_" + key : key)] = ErrorPayloadValue(any: value)
        }
        info.merge(userInfo) { _, additional in additional }
        // A real NSError has a description made for people; a Swift error describes itself best.
        let message = type(of: error) is NSError.Type ? nsError.localizedDescription : String(describing: error)
        return try store(domain: nsError.domain, code: nsError.code, message: message,
                         userInfo: info, underlying: underlyingChain(of: nsError))
    }

    /// Records a non-fatal error given by parts (seed 001 CRASH-FR-008).
    @discardableResult
    public static func record(domain: String, code: Int, message: String,
                              userInfo: [ErrorPayloadKey: ErrorPayloadValue] = [:]) throws -> NonFatalReceipt {
        try store(domain: domain, code: code, message: message, userInfo: userInfo, underlying: [])!
    }

    /// Posts a payload that is not an error (seed 004's missing `post(payload:)`): an event with
    /// the current stack and context, reported under the domain "<appID>.event".
    @discardableResult
    public static func post(payload: [ErrorPayloadKey: ErrorPayloadValue], message: String = "event") throws -> NonFatalReceipt {
        try store(domain: "event", code: 0, message: message, userInfo: payload, underlying: [])!
    }

    /// NSUnderlyingErrorKey and NSMultipleUnderlyingErrorsKey, outermost first, at most 8 deep.
    private static func underlyingChain(of error: NSError) -> [ErrorPayloadValue] {
        var chain: [ErrorPayloadValue] = []
        var queue: [NSError] = []
        if let next = error.userInfo[NSUnderlyingErrorKey] as? NSError { queue.append(next) }
        if let many = error.userInfo["NSMultipleUnderlyingErrorsKey"] as? [NSError] { queue.append(contentsOf: many) }
        while let next = queue.first, chain.count < 8 {
            queue.removeFirst()
            chain.append(["domain": .string(next.domain), "code": .int(next.code), "message": .string(next.localizedDescription)])
            if let deeper = next.userInfo[NSUnderlyingErrorKey] as? NSError { queue.append(deeper) }
        }
        return chain
    }

    private static func store(domain: String, code: Int, message: String, userInfo: [ErrorPayloadKey: ErrorPayloadValue],
                              underlying: [ErrorPayloadValue]) throws -> NonFatalReceipt? {
        if let reserved = userInfo.keys.first(where: { ErrorPayloadKey.reserved.contains($0.rawValue) }) {
            throw ReportingError.reservedKey(reserved.rawValue)
        }
        guard let context = reportingContext() else { throw ReportingError.notStarted }
        let qualified = domain.contains(".") ? domain : context.appID + "." + domain
        log("\(qualified) \(code): \(message)", level: .error, tag: "error")

        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let info = try encoder.encode(Dictionary(uniqueKeysWithValues: userInfo.map { ($0.key.rawValue, $0.value) }))
        let chain = try encoder.encode(underlying)
        // user_info last: readers keep it as raw JSON text.
        let errorLine = RecordLine(.error).string("domain", qualified).integer("code", code).string("message", message)
            .json("underlying", String(decoding: chain, as: UTF8.self)).json("user_info", String(decoding: info, as: UTF8.self)).text
        let (recordID, final) = try writeContextRecord(context, lines: [errorLine], includeStack: true)
        noteErrorForBurstTrigger()
        return NonFatalReceipt(recordID: recordID, path: final)
    }

    static var architecture: String {
        #if arch(x86_64)
        "x86_64"
        #elseif arch(arm64)
        "aarch64"
        #else
        "unknown"
        #endif
    }
}
