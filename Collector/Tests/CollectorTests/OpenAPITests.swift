// GET /openapi.json: served, names every route, and its payload schemas are the runtime's
// Schemas/diagnostics-payload.schema.json (what tools/collector-schemathesis generates its valid
// uploads from), but for test_run_id, which the collector accepts as any non-empty string.
import Foundation
import Testing

@Suite struct OpenAPITests {
    static let schemaURL = Fixtures.samplePayloadURL.deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Schemas/diagnostics-payload.schema.json")

    /// The root schema's $defs under the document's component names.
    static let componentNames = [
        "timestamp": "Timestamp", "hexAddress": "HexAddress", "buildID": "BuildID", "appMetadata": "AppMetadata",
        "deviceMetadata": "DeviceMetadata", "logEntry": "LogEntry", "networkError": "NetworkError", "crashReport": "CrashReport",
        "thread": "Thread", "frame": "Frame", "image": "Image", "signal": "Signal", "error": "ErrorInfo", "screenshot": "Screenshot",
    ]

    /// `$ref: #/$defs/x` → `#/components/schemas/X`, everywhere in `value`.
    static func rewritingRefs(_ value: Any) -> Any {
        if let object = value as? [String: Any] {
            var result: [String: Any] = [:]
            for (key, member) in object {
                if key == "$ref", let ref = member as? String, ref.hasPrefix("#/$defs/"),
                   let name = componentNames[String(ref.dropFirst("#/$defs/".count))] {
                    result[key] = "#/components/schemas/" + name
                } else {
                    result[key] = rewritingRefs(member)
                }
            }
            return result
        }
        if let array = value as? [Any] { return array.map(rewritingRefs) }
        return value
    }

    @Test func payloadSchemasAreTheRuntimes() async throws {
        try await TestCollector.with { collector in
            let document = try await collector.get("/openapi.json").json
            let components = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
            let schema = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: Self.schemaURL)) as? [String: Any])
            let definitions = try #require(schema["$defs"] as? [String: Any])

            #expect(Set(definitions.keys).subtracting(["uuid"]) == Set(Self.componentNames.keys),
                    "a $def of the runtime's schema has no component name here")
            for (definition, name) in Self.componentNames {
                let original = try #require(definitions[definition])
                let expected = try #require(Self.rewritingRefs(original) as? NSDictionary)
                let served = try #require(components[name] as? NSDictionary, "no component \(name)")
                #expect(served == expected, "component \(name) differs from the runtime's $defs/\(definition)")
            }

            var payload = try #require(Self.rewritingRefs(schema) as? [String: Any])
            let served = try #require(components["DiagnosticsPayload"] as? [String: Any])
            for key in ["$schema", "$id", "title", "$defs"] { payload[key] = nil }
            // Documented differences: its own description, and test_run_id any non-empty string.
            payload["description"] = served["description"]
            var properties = try #require(payload["properties"] as? [String: Any])
            let testRunID = try #require((served["properties"] as? [String: Any])?["test_run_id"] as? [String: Any])
            #expect(testRunID["type"] as? String == "string" && testRunID["minLength"] as? Int == 1)
            properties["test_run_id"] = testRunID
            payload["properties"] = properties
            #expect(served as NSDictionary == payload as NSDictionary, "DiagnosticsPayload differs from the runtime's schema")
        }
    }
}
