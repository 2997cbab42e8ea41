// What the collector checks of an upload by name, read from the payload schema compiled into the
// binary (Schemas/diagnostics-payload.schema.json, the runtime's contract, also what GET
// /openapi.json $refs and what the tests' fake collector validates with), not written again here.
//
// The collector checks seed 000's own rules from it: the required fields of the payload, of
// app_metadata and of device_metadata, with their kinds, and the kinds of the payload's other
// arrays and objects. It stays more lenient than the schema below that level, on purpose: a crash
// report without report_id, symbolicated or stack_trace gets the collector's defaults (seed 000's
// own example payload has none of them), and patterns (UUIDs, RFC 3339 times) are not enforced
// (decision 0036).
import Foundation

enum PayloadContract {
    typealias Fields = [(name: String, kind: PayloadDecoding.Kind)]

    /// The payload's required fields.
    static var root: Fields { parsed.root }
    static var appMetadata: Fields { parsed.appMetadata }
    static var deviceMetadata: Fields { parsed.deviceMetadata }
    /// The payload's optional arrays and objects (logs, crash_reports, custom_data…): when present
    /// and not null, of that kind.
    static var containers: Fields { parsed.containers }

    /// Reads the schema (once): called when the server starts, so that a schema it cannot read
    /// stops the collector there, not at the first upload that takes the checked way.
    static func check() { _ = parsed }

    private static let parsed: (root: Fields, appMetadata: Fields, deviceMetadata: Fields, containers: Fields) = {
        do {
            return try read(OpenAPI.payloadSchema)
        } catch {
            // Compiled in and read by the tests (PayloadContractTests): a schema this cannot read
            // never ships.
            preconditionFailure("the payload schema compiled into the collector cannot be read: \(error)")
        }
    }()

    struct SchemaError: Error, CustomStringConvertible {
        var description: String
    }

    /// The four lists from a JSON Schema document shaped like ours: an object whose required
    /// properties are plain types or $refs into $defs.
    static func read(_ bytes: [UInt8]) throws -> (root: Fields, appMetadata: Fields, deviceMetadata: Fields, containers: Fields) {
        guard let schema = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
            throw SchemaError(description: "not a JSON object")
        }
        let definitions = schema["$defs"] as? [String: Any] ?? [:]
        func resolved(_ node: Any?) throws -> [String: Any] {
            guard let node = node as? [String: Any] else { throw SchemaError(description: "a property that is not a schema") }
            guard let reference = node["$ref"] as? String else { return node }
            let prefix = "#/$defs/"
            guard reference.hasPrefix(prefix), let target = definitions[String(reference.dropFirst(prefix.count))] else {
                throw SchemaError(description: "unresolvable $ref \(reference)")
            }
            return try resolved(target)
        }
        func kind(_ property: [String: Any], _ name: String) throws -> PayloadDecoding.Kind {
            switch property["type"] as? String {
            case "string":
                // A string the schema cannot let be empty: a minimum length, or a pattern (ours
                // are UUIDs and times).
                let nonEmpty = (property["minLength"] as? Int ?? 0) >= 1 || property["pattern"] != nil
                return nonEmpty ? .nonEmptyString : .string
            case "boolean": return .bool
            case "integer": return .number
            case "object": return .object
            case "array": return .array
            default: throw SchemaError(description: "\(name): a type the collector does not check (\(property["type"] ?? "none"))")
            }
        }
        func required(_ object: [String: Any], _ path: String) throws -> Fields {
            let properties = object["properties"] as? [String: Any] ?? [:]
            return try (object["required"] as? [String] ?? []).map { name in
                (name, try kind(try resolved(properties[name]), path + name))
            }
        }
        let properties = schema["properties"] as? [String: Any] ?? [:]
        let requiredNames = Set(schema["required"] as? [String] ?? [])
        let containers = try properties.keys.sorted().filter { !requiredNames.contains($0) }.compactMap { name -> (String, PayloadDecoding.Kind)? in
            let property = try resolved(properties[name])
            let type = property["type"] as? String
            return type == "array" || type == "object" ? (name, try kind(property, name)) : nil
        }
        return (try required(schema, ""), try required(try resolved(properties["app_metadata"]), "app_metadata."),
                try required(try resolved(properties["device_metadata"]), "device_metadata."), containers)
    }
}
