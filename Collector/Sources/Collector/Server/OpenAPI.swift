// The OpenAPI 3.1 document served at GET /openapi.json (Server/openapi.json): every endpoint, its
// credential and its answers. The upload's payload is not copied into it: DiagnosticsPayload is a
// $ref to the runtime's own Schemas/diagnostics-payload.schema.json, served beside it at
// GET /schemas/diagnostics-payload.schema.json (the document's relative $ref resolves there), so a
// fuzzer's valid payloads are the runtime's (tools/collector-schemathesis). Both files are compiled
// into the binary (SwiftPM's embedInCode; the schema through a symlink to Schemas/): a collector
// copied alone still serves them.
enum OpenAPI {
    static let document: [UInt8] = PackageResources.openapi_json
    static let payloadSchema: [UInt8] = PackageResources.diagnostics_payload_schema_json
    /// Where the payload schema is served; openapi.json refers to it relative to its own URL.
    static let payloadSchemaPath = "/schemas/diagnostics-payload.schema.json"
}
