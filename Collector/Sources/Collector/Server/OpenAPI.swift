// The OpenAPI 3.1 document served at GET /openapi.json: every endpoint, its credential and its
// answers. The full payload schema is the runtime's Schemas/diagnostics-payload.schema.json; here
// only what the collector itself requires (seed 000's required fields) is spelled out.
enum OpenAPI {
    static let document = #"""
    {
      "openapi": "3.1.0",
      "info": {
        "title": "crash-collector",
        "version": "1.0.0",
        "description": "Receives swift-crash-reporting uploads (seed 000), API logs (seed 003), and serves issues."
      },
      "components": {
        "securitySchemes": {
          "ingestToken": {"type": "http", "scheme": "bearer", "description": "An ingest token (--token)."},
          "dashboard": {"type": "http", "scheme": "basic", "description": "Any user name, the dashboard password."}
        },
        "schemas": {
          "Error": {
            "type": "object", "required": ["error", "message"],
            "properties": {"error": {"type": "string"}, "message": {"type": "string"},
                           "details": {"type": "array", "items": {"type": "string"}}}
          },
          "TooLarge": {
            "type": "object", "required": ["error", "message", "max_size_bytes"],
            "properties": {"error": {"const": "payload_too_large"}, "message": {"type": "string"},
                           "max_size_bytes": {"const": 5242880}}
          },
          "Accepted": {
            "type": "object", "required": ["diagnostics_id", "test_run_id", "received_at", "status"],
            "properties": {"diagnostics_id": {"type": "string", "pattern": "^diag_[0-9a-f]{16}$"},
                           "test_run_id": {"type": "string"}, "received_at": {"type": "string", "format": "date-time"},
                           "status": {"const": "accepted"}}
          },
          "DiagnosticsPayload": {
            "description": "Seed 000's payload; the full schema with the Linux extensions is Schemas/diagnostics-payload.schema.json.",
            "type": "object", "required": ["test_run_id", "app_metadata", "device_metadata", "timestamp_collected"],
            "properties": {
              "test_run_id": {"type": "string"},
              "app_metadata": {"type": "object",
                               "required": ["app_name", "app_version", "build_number", "bundle_id", "environment"]},
              "device_metadata": {"type": "object",
                                  "required": ["device_model", "device_identifier", "ios_version", "locale", "timezone",
                                               "is_simulator", "available_storage_mb", "total_memory_mb"]},
              "timestamp_collected": {"type": "string"},
              "logs": {"type": "array"}, "network_errors": {"type": "array"}, "crash_reports": {"type": "array"},
              "screenshots": {"type": "array"}, "custom_data": {"type": "object"}
            }
          },
          "ApiLogEvent": {
            "description": "Seed 003's api_log event.",
            "type": "object",
            "properties": {"type": {"const": "api_log"}, "appId": {"type": "string"}, "method": {"type": "string"},
                           "url": {"type": "string"}, "statusCode": {"type": "integer"}, "duration": {"type": "integer"},
                           "timestamp": {"type": "integer"}}
          },
          "Issue": {
            "type": "object",
            "properties": {"id": {"type": "integer"}, "bundle_id": {"type": "string"}, "signature": {"type": "string"},
                           "kind": {"type": "string"}, "title": {"type": "string"}, "subtitle": {"type": "string"},
                           "exception_type": {"type": "string"}, "event_count": {"type": "integer"},
                           "user_count": {"type": "integer"}, "first_seen": {"type": "string"},
                           "last_seen": {"type": "string"}, "versions": {"type": "array", "items": {"type": "string"}}}
          }
        },
        "responses": {
          "Unauthorized": {"description": "No valid credential.",
                           "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
          "TooLarge": {"description": "The body as sent is over 5 MiB (or inflates past the collector's cap).",
                       "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TooLarge"}}}},
          "Invalid": {"description": "validation_failed, with details.",
                      "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        }
      },
      "paths": {
        "/api/v1/qa/diagnostics": {
          "post": {
            "summary": "Upload one diagnostics payload (gzip or plain JSON).",
            "security": [{"ingestToken": []}],
            "parameters": [
              {"name": "Idempotency-Key", "in": "header", "schema": {"type": "string"},
               "description": "The record id: a repeat stores nothing and gets the first answer."},
              {"name": "Content-Encoding", "in": "header", "schema": {"enum": ["gzip", "identity"]}},
              {"name": "X-Test-Run-ID", "in": "header", "schema": {"type": "string"}},
              {"name": "X-App-Version", "in": "header", "schema": {"type": "string"}}
            ],
            "requestBody": {"required": true,
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DiagnosticsPayload"}}}},
            "responses": {
              "201": {"description": "Stored (or stored before, under the same key).",
                      "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Accepted"}}}},
              "400": {"$ref": "#/components/responses/Invalid"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "413": {"$ref": "#/components/responses/TooLarge"},
              "500": {"description": "Storage failed; the sender retries later."}
            }
          }
        },
        "/api/logs": {
          "post": {
            "summary": "Store seed 003 api_log events: one object or an array, gzip or not.",
            "security": [{"ingestToken": []}, {}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"oneOf": [
              {"$ref": "#/components/schemas/ApiLogEvent"},
              {"type": "array", "items": {"$ref": "#/components/schemas/ApiLogEvent"}}]}}}},
            "responses": {
              "201": {"description": "Stored.", "content": {"application/json": {"schema": {
                "type": "object", "required": ["accepted"], "properties": {"accepted": {"type": "integer"}}}}}},
              "400": {"$ref": "#/components/responses/Invalid"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "413": {"$ref": "#/components/responses/TooLarge"}
            }
          },
          "get": {
            "summary": "API logs, newest first.",
            "security": [{"dashboard": []}],
            "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000}},
                           {"name": "app_id", "in": "query", "schema": {"type": "string"}}],
            "responses": {"200": {"description": "{\"logs\": [...]}"}, "401": {"$ref": "#/components/responses/Unauthorized"}}
          }
        },
        "/api/issues": {
          "get": {
            "summary": "Issues, most recently seen first.",
            "security": [{"dashboard": []}],
            "parameters": [{"name": "bundle_id", "in": "query", "schema": {"type": "string"}},
                           {"name": "kind", "in": "query", "schema": {"enum": ["crash", "non_fatal", "abnormal_termination"]}},
                           {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000}}],
            "responses": {
              "200": {"description": "The issues.", "content": {"application/json": {"schema": {
                "type": "object", "properties": {"issues": {"type": "array", "items": {"$ref": "#/components/schemas/Issue"}}}}}}},
              "401": {"$ref": "#/components/responses/Unauthorized"}
            }
          }
        },
        "/api/issues/{id}": {
          "get": {
            "summary": "One issue, its latest event in full, and its recent events.",
            "security": [{"dashboard": []}],
            "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
            "responses": {"200": {"description": "{\"issue\", \"latest_event\", \"events\"}"},
                          "401": {"$ref": "#/components/responses/Unauthorized"},
                          "404": {"description": "No such issue."}}
          }
        },
        "/api/crash-free": {
          "get": {
            "summary": "Crash-free users and sessions per app, version and UTC day (seed 001's targets included).",
            "security": [{"dashboard": []}],
            "parameters": [{"name": "days", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 365}}],
            "responses": {"200": {"description": "{\"targets\", \"rows\"}"}, "401": {"$ref": "#/components/responses/Unauthorized"}}
          }
        },
        "/api/connect-link": {
          "get": {
            "summary": "Seed 002's deep link for an app's bundle id.",
            "security": [{"dashboard": []}],
            "parameters": [{"name": "app_id", "in": "query", "required": true, "schema": {"type": "string"}}],
            "responses": {"200": {"description": "{\"deep_link\", \"server_ip\", \"server_port\", …}"},
                          "400": {"description": "The app id is not a bundle id."},
                          "401": {"$ref": "#/components/responses/Unauthorized"}}
          }
        },
        "/health": {"get": {"summary": "Liveness.", "responses": {"200": {"description": "{\"status\": \"ok\"}"}}}},
        "/openapi.json": {"get": {"summary": "This document.", "responses": {"200": {"description": "OpenAPI 3.1."}}}}
      }
    }
    """#
}
