// The collector's validation follows the payload schema (Schemas/diagnostics-payload.schema.json,
// compiled in): every field the schema requires of the payload, app_metadata and device_metadata
// is refused by name when missing and when of another kind, and the lists come from the schema
// itself, not from a second copy.
@testable import Collector
import CrashReportModel
import Foundation
import Testing

@Suite struct PayloadContractTests {
    static let schemaURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Schemas/diagnostics-payload.schema.json")

    @Test func theCompiledSchemaIsTheRepositorysOne() throws {
        #expect(OpenAPI.payloadSchema == [UInt8](try Data(contentsOf: Self.schemaURL)))
    }

    @Test func theRequiredFieldsAreTheSchemasOwn() throws {
        // Read here first, so that a schema it cannot read fails this test, not the whole run.
        _ = try PayloadContract.read(OpenAPI.payloadSchema)
        let schema = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: Self.schemaURL)) as? [String: Any])
        let definitions = try #require(schema["$defs"] as? [String: Any])
        func required(_ node: Any?) -> [String] { (node as? [String: Any])?["required"] as? [String] ?? [] }
        #expect(PayloadContract.root.map(\.name) == required(schema))
        #expect(PayloadContract.appMetadata.map(\.name) == required(definitions["appMetadata"]))
        #expect(PayloadContract.deviceMetadata.map(\.name) == required(definitions["deviceMetadata"]))
        #expect(Set(PayloadContract.containers.map(\.name)) ==
                ["logs", "network_errors", "crash_reports", "screenshots", "custom_data", "custom_keys", "reporter"])
        // The strings that may not be empty: the direct decode's list is the schema's.
        let nonEmpty = (PayloadContract.root.map { ($0.name, $0.kind) }
            + PayloadContract.appMetadata.map { ("app_metadata." + $0.name, $0.kind) }
            + PayloadContract.deviceMetadata.map { ("device_metadata." + $0.name, $0.kind) })
            .filter { $0.1 == .nonEmptyString }.map(\.0)
        #expect(Set(nonEmpty) == Set(PayloadDecoding.nonEmptyStrings.map(\.name)))
    }

    /// Each required field: missing → 400 naming it; another kind (or empty, where it may not be)
    /// → 400 naming it. Both decode paths end in the same refusal.
    @Test func eachRequiredFieldIsRefusedByName() throws {
        let levels: [(key: String?, fields: PayloadContract.Fields)] = [
            (nil, PayloadContract.root), ("app_metadata", PayloadContract.appMetadata), ("device_metadata", PayloadContract.deviceMetadata),
        ]
        var checked = 0
        for (key, fields) in levels {
            for (name, kind) in fields {
                let path = (key.map { $0 + "." } ?? "") + name
                func edited(_ change: @escaping (inout [String: Any]) -> Void) throws -> [UInt8] {
                    try PayloadDecodingTests.body { object in
                        if let key {
                            var inner = object[key] as? [String: Any] ?? [:]
                            change(&inner)
                            object[key] = inner
                        } else {
                            change(&object)
                        }
                    }
                }
                let missing = try edited { $0[name] = nil }
                let refusal = try #require(throws: ValidationFailure.self, "\(path) missing was accepted") { try PayloadDecoding.decode(missing) }
                #expect(refusal.details.contains("\(path) is required"), "\(path): \(refusal.details)")
                #expect(refusal.message == "Missing required field: \(path)")

                let wrong: Any = kind == .nonEmptyString ? "" : (kind == .string ? 7 : "seven")
                let mistyped = try edited { $0[name] = wrong }
                let second = try #require(throws: ValidationFailure.self, "\(path) = \(wrong) was accepted") { try PayloadDecoding.decode(mistyped) }
                #expect(second.details.contains("\(path) must be \(kind.name)"), "\(path): \(second.details)")
                checked += 1
            }
        }
        #expect(checked == 17)   // 4 + 5 + 8 in today's schema
    }

    @Test func theContractReaderRefusesWhatItCannotRead() {
        #expect(throws: PayloadContract.SchemaError.self) {
            try PayloadContract.read(Array(##"{"required":["a"],"properties":{"a":{"$ref":"#/$defs/none"}}}"##.utf8))
        }
        #expect(throws: PayloadContract.SchemaError.self) {
            try PayloadContract.read(Array(#"{"required":["a"],"properties":{"a":{"type":"number"}}}"#.utf8))
        }
    }
}
