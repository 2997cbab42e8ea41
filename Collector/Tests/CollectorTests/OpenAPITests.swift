// GET /openapi.json: served, and its upload payload is the runtime's own schema — a $ref to
// GET /schemas/diagnostics-payload.schema.json, which serves Schemas/diagnostics-payload.schema.json
// byte for byte (what tools/collector-schemathesis generates its valid uploads from). Every $ref in
// the document resolves, in the document or in that schema.
import Foundation
import Testing

@Suite struct OpenAPITests {
    static let schemaURL = Fixtures.samplePayloadURL.deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Schemas/diagnostics-payload.schema.json")
    static let schemaRef = "schemas/diagnostics-payload.schema.json"

    @Test func thePayloadIsTheRuntimesSchemaServedBeside() async throws {
        try await TestCollector.with { collector in
            let document = try await collector.get("/openapi.json")
            #expect(document.status == 200)
            let components = try #require((document.json["components"] as? [String: Any])?["schemas"] as? [String: Any])
            let payload = try #require(components["DiagnosticsPayload"] as? [String: Any])
            #expect(payload["$ref"] as? String == Self.schemaRef)

            // The relative $ref, resolved against the document's URL, is served: the runtime's file as it is.
            let schema = try await collector.get("/" + Self.schemaRef)
            #expect(schema.status == 200)
            #expect(schema.header("Content-Type") == "application/schema+json")
            #expect(schema.body == (try Data(contentsOf: Self.schemaURL)))
        }
    }

    @Test func everyReferenceResolves() async throws {
        try await TestCollector.with { collector in
            let document = try JSONSerialization.jsonObject(with: await collector.get("/openapi.json").body)
            let schema = try JSONSerialization.jsonObject(with: Data(contentsOf: Self.schemaURL))
            var refs: [String] = []
            func collect(_ value: Any) {
                if let object = value as? [String: Any] {
                    if let ref = object["$ref"] as? String { refs.append(ref) }
                    object.values.forEach(collect)
                } else if let array = value as? [Any] {
                    array.forEach(collect)
                }
            }
            collect(document)
            #expect(refs.count > 40, "\(refs.count) references")
            #expect(refs.contains { $0.hasPrefix(Self.schemaRef) })
            for ref in refs {
                let (file, pointer) = ref.firstIndex(of: "#").map { (String(ref[..<$0]), String(ref[ref.index(after: $0)...])) }
                    ?? (ref, "")
                #expect(file.isEmpty || file == Self.schemaRef, "\(ref) names another file")
                #expect(Self.resolve(pointer, in: file.isEmpty ? document : schema) != nil, "\(ref) does not resolve")
            }
        }
    }

    /// The value a JSON pointer ("/components/schemas/Issue"; "" for the whole) names, or nil.
    static func resolve(_ pointer: String, in root: Any) -> Any? {
        var value: Any? = root
        for token in pointer.split(separator: "/", omittingEmptySubsequences: true) {
            let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            if let object = value as? [String: Any] {
                value = object[key]
            } else if let array = value as? [Any], let index = Int(key), array.indices.contains(index) {
                value = array[index]
            } else {
                return nil
            }
        }
        return value
    }
}
