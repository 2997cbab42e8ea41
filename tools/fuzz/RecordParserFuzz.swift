// libFuzzer entry point for the crash record reader (built by tools/fuzz-record-parser together
// with Sources/CrashReportModel). Any trap or sanitizer report is a finding.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    if let record = try? CrashRecord(data: data, source: "fuzz") {
        _ = record.isPartial
        for frame in record.frames { _ = record.module(containing: frame.lookupAddress) }
    }
    if let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] {
        _ = try? CrashRecord(swiftBacktrace: object, source: "fuzz")
    }
    return 0
}
