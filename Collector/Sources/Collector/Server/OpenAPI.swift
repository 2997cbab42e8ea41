// The OpenAPI 3.1 document served at GET /openapi.json: every endpoint, its credential and its
// answers. The payload's schemas (DiagnosticsPayload … Screenshot) are the runtime's
// Schemas/diagnostics-payload.schema.json with $refs into components, test_run_id relaxed to any
// non-empty string (OpenAPITests keeps them in step), so a fuzzer's valid payloads are ones the
// collector stores (tools/collector-schemathesis).
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
                           "max_size_bytes": {"const": 5242880},
                           "max_inflated_bytes": {"description": "Present when a gzip'd body inflates past the collector's cap.", "type": "integer"}}
          },
          "Accepted": {
            "type": "object", "required": ["diagnostics_id", "test_run_id", "received_at", "status"],
            "properties": {"diagnostics_id": {"type": "string", "pattern": "^diag_[0-9a-f]{16}$"},
                           "test_run_id": {"type": "string"}, "received_at": {"type": "string", "format": "date-time"},
                           "status": {"const": "accepted"}}
          },
          "DiagnosticsPayload": {
            "description": "Seed 000's payload with the Linux extensions: the runtime's Schemas/diagnostics-payload.schema.json, but for test_run_id (any non-empty string). The collector checks seed 000's required fields and what its model needs; fields it does not know are ignored.",
            "type": "object",
            "required": ["test_run_id", "app_metadata", "device_metadata", "timestamp_collected"],
            "additionalProperties": false,
            "properties": {
              "test_run_id": {
                "description": "The runtime's session id (a UUID); any non-empty string is accepted.",
                "type": "string",
                "minLength": 1
              },
              "app_metadata": {"$ref": "#/components/schemas/AppMetadata"},
              "device_metadata": {"$ref": "#/components/schemas/DeviceMetadata"},
              "timestamp_collected": {"$ref": "#/components/schemas/Timestamp"},
              "logs": {"type": "array", "maxItems": 500, "items": {"$ref": "#/components/schemas/LogEntry"}},
              "network_errors": {"type": "array", "maxItems": 100, "items": {"$ref": "#/components/schemas/NetworkError"}},
              "crash_reports": {"type": "array", "maxItems": 5, "items": {"$ref": "#/components/schemas/CrashReport"}},
              "screenshots": {"type": "array", "maxItems": 20, "items": {"$ref": "#/components/schemas/Screenshot"}},
              "custom_data": {
                "type": "object",
                "description": "Free-form; at most 100 KB serialized (seed 000), checked by the collector."
              },
              "user_id": {"description": "Extension.", "type": ["string", "null"]},
              "custom_keys": {
                "description": "Extension: CrashReporter.setCustomKey values.",
                "type": "object",
                "additionalProperties": {"type": ["string", "number", "boolean"]}
              },
              "reporter": {
                "description": "Extension: the uploading library.",
                "type": "object",
                "required": ["name", "version", "dropped_reports"],
                "additionalProperties": false,
                "properties": {
                  "name": {"type": "string", "minLength": 1},
                  "version": {"type": "string", "minLength": 1},
                  "dropped_reports": {"type": "integer", "minimum": 0}
                }
              }
            }
          },
          "Timestamp": {
            "description": "ISO 8601 / RFC 3339 date-time with a time zone, e.g. 2026-02-16T14:30:00.000Z.",
            "type": "string",
            "format": "date-time",
            "pattern": "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
          },
          "HexAddress": {"type": "string", "pattern": "^0x[0-9a-f]+$"},
          "BuildID": {
            "description": "Lower-case hex; empty when the module has none.",
            "type": "string",
            "pattern": "^[0-9a-f]*$"
          },
          "AppMetadata": {
            "type": "object",
            "required": ["app_name", "app_version", "build_number", "bundle_id", "environment"],
            "additionalProperties": false,
            "properties": {
              "app_name": {"type": "string"},
              "app_version": {"type": "string"},
              "build_number": {"type": "string"},
              "bundle_id": {"type": "string"},
              "environment": {
                "description": "Seed 000 names development, staging, production; any is accepted.",
                "type": "string",
                "minLength": 1
              }
            }
          },
          "DeviceMetadata": {
            "type": "object",
            "required": [
              "device_model",
              "device_identifier",
              "ios_version",
              "locale",
              "timezone",
              "is_simulator",
              "available_storage_mb",
              "total_memory_mb"
            ],
            "additionalProperties": false,
            "properties": {
              "device_model": {"type": "string"},
              "device_identifier": {"type": "string"},
              "ios_version": {"description": "On Linux: the OS and kernel.", "type": "string"},
              "locale": {"type": "string"},
              "timezone": {"type": "string"},
              "is_simulator": {"description": "On Linux: virtualised or in a container.", "type": "boolean"},
              "available_storage_mb": {"type": "integer", "minimum": 0},
              "total_memory_mb": {"type": "integer", "minimum": 0},
              "battery_level": {"type": "number", "minimum": 0, "maximum": 1},
              "battery_state": {"enum": ["unplugged", "charging", "full", "not_charging", "unknown"]},
              "cpu_model": {"description": "Extension.", "type": "string"},
              "cpu_count": {"description": "Extension; 0 when unknown.", "type": "integer", "minimum": 0},
              "hostname_hash": {"description": "Extension: SHA-256 of the host name, hex prefix.", "type": "string"},
              "virtualization": {"description": "Extension: none, a hypervisor name, or container.", "type": "string"}
            }
          },
          "LogEntry": {
            "type": "object",
            "required": ["timestamp", "level", "tag", "message"],
            "additionalProperties": false,
            "properties": {
              "timestamp": {"$ref": "#/components/schemas/Timestamp"},
              "level": {"enum": ["debug", "info", "warning", "error", "fatal"]},
              "tag": {"type": "string"},
              "message": {
                "description": "At most 1000 characters, counted as Unicode code points.",
                "type": "string",
                "maxLength": 1000
              },
              "metadata": {"type": "object"}
            }
          },
          "NetworkError": {
            "type": "object",
            "required": [
              "timestamp",
              "request_url",
              "request_method",
              "status_code",
              "error_type",
              "error_message",
              "request_duration_ms",
              "retry_count"
            ],
            "additionalProperties": false,
            "properties": {
              "timestamp": {"$ref": "#/components/schemas/Timestamp"},
              "request_url": {"type": "string"},
              "request_method": {"type": "string", "minLength": 1},
              "status_code": {
                "description": "null (present) when there was no response.",
                "type": ["integer", "null"],
                "minimum": 100,
                "maximum": 599
              },
              "error_type": {
                "enum": [
                  "timeout",
                  "network_unreachable",
                  "ssl_error",
                  "dns_failure",
                  "server_error",
                  "client_error",
                  "unknown"
                ]
              },
              "error_message": {"type": "string"},
              "request_duration_ms": {"type": "integer", "minimum": 0},
              "retry_count": {"type": "integer", "minimum": 0}
            }
          },
          "CrashReport": {
            "type": "object",
            "required": [
              "timestamp",
              "exception_type",
              "exception_message",
              "stack_trace",
              "thread_info",
              "report_id",
              "kind",
              "symbolicated",
              "is_partial",
              "images"
            ],
            "additionalProperties": false,
            "properties": {
              "timestamp": {"$ref": "#/components/schemas/Timestamp"},
              "exception_type": {"type": "string"},
              "exception_message": {"type": "string"},
              "stack_trace": {"type": "array", "maxItems": 50, "items": {"type": "string"}},
              "thread_info": {"type": "array", "items": {"$ref": "#/components/schemas/Thread"}},
              "report_id": {"description": "Extension.", "type": "string", "minLength": 1},
              "kind": {"description": "Extension. hang: a heartbeat (an event loop, the cooperative pool) stopped for longer than the threshold; thread_info[0] is the thread that last beat it.", "enum": ["crash", "non_fatal", "abnormal_termination", "diagnostics", "hang"]},
              "symbolicated": {"description": "Extension. False when the host could not name the app's own frames (a stripped binary, its debug info kept apart): frames then carry build_id and module_offset only, and a collector with symbols finishes the report.", "type": "boolean"},
              "is_partial": {"description": "Extension.", "type": "boolean"},
              "images": {
                "description": "Extension: loaded modules.",
                "type": "array",
                "items": {"$ref": "#/components/schemas/Image"}
              },
              "signal": {"description": "Extension.", "$ref": "#/components/schemas/Signal"},
              "error": {"description": "Extension: the non-fatal error.", "$ref": "#/components/schemas/ErrorInfo"},
              "termination": {
                "description": "Extension: an ending found by the next launch.",
                "type": "object",
                "required": ["kind"],
                "additionalProperties": false,
                "properties": {
                  "kind": {"description": "abnormal, oom_kill or crash_without_record.", "type": "string", "minLength": 1},
                  "memory": {
                    "description": "The process's memory before it ended (runtime's memory sampler): its memory cgroup, the cgroup's limit, and the last readings of RSS and the cgroup's usage, oldest first.",
                    "type": "object",
                    "required": ["samples"],
                    "additionalProperties": false,
                    "properties": {
                      "cgroup": {"type": ["string", "null"]},
                      "limit_bytes": {"type": ["integer", "null"], "minimum": 0},
                      "samples": {
                        "type": "array",
                        "maxItems": 60,
                        "items": {
                          "type": "object",
                          "required": ["timestamp"],
                          "additionalProperties": false,
                          "properties": {
                            "timestamp": {"$ref": "#/components/schemas/Timestamp"},
                            "rss_bytes": {"type": ["integer", "null"], "minimum": 0},
                            "cgroup_bytes": {"type": ["integer", "null"], "minimum": 0}
                          }
                        }
                      }
                    }
                  }
                }
              },
              "requests_in_flight": {
                "description": "Extension: the requests a server was serving at the crash (framework middleware), from fixed slots the signal handler reads.",
                "type": "array",
                "maxItems": 128,
                "items": {
                  "type": "object",
                  "required": ["method", "route", "thread_id", "age_ms", "crashed_thread"],
                  "additionalProperties": false,
                  "properties": {
                    "method": {"type": "string", "maxLength": 16},
                    "route": {"description": "The route pattern, e.g. /users/{id}.", "type": "string", "maxLength": 192},
                    "request_id": {"type": ["string", "null"], "maxLength": 64},
                    "trace_id": {"type": ["string", "null"], "maxLength": 64},
                    "thread_id": {"type": "integer"},
                    "age_ms": {"type": "integer", "minimum": 0},
                    "crashed_thread": {"description": "It started on the thread that crashed.", "type": "boolean"}
                  }
                }
              }
            }
          },
          "Thread": {
            "type": "object",
            "required": ["id", "name", "crashed", "is_main", "frames"],
            "additionalProperties": false,
            "properties": {
              "id": {"type": "integer"},
              "name": {"type": "string"},
              "crashed": {"type": "boolean"},
              "is_main": {"type": "boolean"},
              "frames": {"type": "array", "maxItems": 50, "items": {"$ref": "#/components/schemas/Frame"}},
              "state": {"description": "Extension: another thread's answer at the crash (answered, no_answer, blocked_signal, exited, crash_reporter, not_asked); absent for the crashed thread.", "type": "string"}
            }
          },
          "Frame": {
            "description": "Optional fields may be absent or null.",
            "type": "object",
            "required": ["index", "address", "inlined"],
            "additionalProperties": false,
            "properties": {
              "index": {"type": "integer", "minimum": 0},
              "address": {"$ref": "#/components/schemas/HexAddress"},
              "module": {"type": ["string", "null"]},
              "module_offset": {"anyOf": [{"$ref": "#/components/schemas/HexAddress"}, {"type": "null"}]},
              "build_id": {"anyOf": [{"$ref": "#/components/schemas/BuildID"}, {"type": "null"}]},
              "function": {"type": ["string", "null"]},
              "file": {"type": ["string", "null"]},
              "line": {"type": ["integer", "null"], "minimum": 0},
              "column": {"type": ["integer", "null"], "minimum": 0},
              "inlined": {"type": "boolean"},
              "async": {"type": "boolean", "description": "Linux extension: a Swift async caller (an awaiting function's resume point), listed after the synchronous frames"}
            }
          },
          "Image": {
            "type": "object",
            "required": ["path", "build_id", "start", "end", "bias"],
            "additionalProperties": false,
            "properties": {
              "path": {"type": "string"},
              "build_id": {"$ref": "#/components/schemas/BuildID"},
              "start": {"$ref": "#/components/schemas/HexAddress"},
              "end": {"$ref": "#/components/schemas/HexAddress"},
              "bias": {"$ref": "#/components/schemas/HexAddress"}
            }
          },
          "Signal": {
            "type": "object",
            "required": ["number", "name", "code", "code_name", "fault_address"],
            "additionalProperties": false,
            "properties": {
              "number": {"type": "integer", "minimum": 1},
              "name": {"type": "string", "minLength": 1},
              "code": {"type": "integer"},
              "code_name": {"type": "string"},
              "fault_address": {"$ref": "#/components/schemas/HexAddress"}
            }
          },
          "ErrorInfo": {
            "type": "object",
            "required": ["domain", "code", "message"],
            "additionalProperties": false,
            "properties": {
              "domain": {"type": "string"},
              "code": {"type": "integer"},
              "message": {"type": "string"},
              "user_info": {"type": "object"},
              "underlying": {
                "description": "Underlying errors, outermost first.",
                "type": "array",
                "items": {
                  "type": "object",
                  "required": ["domain", "code", "message"],
                  "additionalProperties": false,
                  "properties": {"domain": {"type": "string"}, "code": {"type": "integer"}, "message": {"type": "string"}}
                }
              }
            }
          },
          "Screenshot": {
            "type": "object",
            "required": ["id", "timestamp", "screen_name", "file_size_bytes"],
            "additionalProperties": false,
            "properties": {
              "id": {"type": "string"},
              "timestamp": {"$ref": "#/components/schemas/Timestamp"},
              "screen_name": {"type": "string"},
              "file_size_bytes": {"type": "integer", "minimum": 0}
            }
          },
          "BundleID": {
            "description": "An app's bundle id: dot-separated labels of letters, digits and hyphens (seed 002).",
            "type": "string", "minLength": 1, "maxLength": 155, "pattern": "^[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*$"
          },
          "ApiLogEvent": {
            "description": "Seed 003's api_log event.",
            "type": "object",
            "properties": {"type": {"const": "api_log"}, "appId": {"type": "string"}, "method": {"type": "string"},
                           "url": {"type": "string"}, "statusCode": {"type": "integer"}, "duration": {"type": "integer"},
                           "timestamp": {"type": "integer"}}
          },
          "SessionBeacon": {
            "description": "One session, sent when it starts: crash-free rates count it whether or not it ever uploads.",
            "type": "object",
            "required": ["session_id", "started_at", "bundle_id", "app_version", "build_number"],
            "properties": {
              "session_id": {"description": "The runtime's session id, the test_run_id of the session's uploads.",
                             "type": "string", "minLength": 1, "maxLength": 256},
              "started_at": {"$ref": "#/components/schemas/Timestamp"},
              "bundle_id": {"type": "string", "minLength": 1, "maxLength": 256},
              "app_version": {"type": "string", "maxLength": 256},
              "build_number": {"type": "string", "maxLength": 256},
              "user_id": {"type": ["string", "null"], "maxLength": 256},
              "device_identifier": {"type": ["string", "null"], "maxLength": 256}
            }
          },
          "Issue": {
            "type": "object",
            "properties": {"id": {"type": "integer"}, "bundle_id": {"type": "string"}, "signature": {"type": "string"},
                           "kind": {"type": "string"}, "title": {"type": "string"}, "subtitle": {"type": "string"},
                           "exception_type": {"type": "string"}, "event_count": {"type": "integer"},
                           "user_count": {"type": "integer"}, "first_seen": {"type": "string"},
                           "last_seen": {"type": "string"}, "versions": {"type": "array", "items": {"type": "string"}},
                           "trend": {"description": "Events received per UTC day over the last 14 days, oldest first.",
                                     "type": "array", "items": {"$ref": "#/components/schemas/TrendDay"}}}
          },
          "TrendDay": {
            "type": "object", "required": ["day", "events"],
            "properties": {"day": {"type": "string", "format": "date"}, "events": {"type": "integer", "minimum": 0}}
          },
          "RankedIssue": {
            "type": "object", "required": ["events", "issue"],
            "properties": {"events": {"description": "Events received in the window.", "type": "integer"},
                           "issue": {"$ref": "#/components/schemas/Issue"}}
          }
        },
        "responses": {
          "Unauthorized": {"description": "No valid credential.",
                           "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
          "TooLarge": {"description": "The body as sent is over 5 MiB (or inflates past the collector's cap).",
                       "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TooLarge"}}}},
          "Invalid": {"description": "validation_failed, with details.",
                      "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
          "RateLimited": {"description": "This token's requests are over the collector's rate limit (--rate-limit, --rate-burst; per collector process: rate_limited), or it has --uploads-per-token uploads in flight (too_many_uploads).",
                          "headers": {"Retry-After": {"description": "Seconds to wait.", "schema": {"type": "integer", "minimum": 1}}},
                          "content": {"application/json": {"schema": {
                            "type": "object", "required": ["error", "message", "retry_after"],
                            "properties": {"error": {"enum": ["rate_limited", "too_many_uploads"]}, "message": {"type": "string"},
                                           "retry_after": {"type": "integer", "minimum": 1}}}}}},
          "Busy": {"description": "The collector has --uploads-in-flight uploads in flight.",
                   "headers": {"Retry-After": {"description": "Seconds to wait.", "schema": {"type": "integer", "minimum": 1}}},
                   "content": {"application/json": {"schema": {
                     "type": "object", "required": ["error", "message", "retry_after"],
                     "properties": {"error": {"const": "overloaded"}, "message": {"type": "string"},
                                    "retry_after": {"type": "integer", "minimum": 1}}}}}},
          "Forbidden": {"description": "The token is bound to other apps (bundle ids) than the one written for.",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        }
      },
      "paths": {
        "/api/v1/qa/diagnostics": {
          "post": {
            "summary": "Upload one diagnostics payload (gzip or plain JSON).",
            "description": "With --symbols or --debuginfod, a crash report sent raw (symbolicated false; frames with build_id and module_offset but no file) is stored as sent and answered, then gets function, file and line from the symbol store (a worker, after the answer) and moves to the issue its function names sign; symbolicated becomes true when every in-app frame has a function. Addresses, offsets and build-ids are kept. A missing debug file is no error: the report is stored as sent.",
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
              "403": {"$ref": "#/components/responses/Forbidden"},
              "409": {"description": "This token already used the Idempotency-Key with another body.",
                      "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
              "413": {"$ref": "#/components/responses/TooLarge"},
              "429": {"$ref": "#/components/responses/RateLimited"},
              "500": {"description": "Storage failed; the sender retries later."},
              "503": {"$ref": "#/components/responses/Busy"}
            }
          }
        },
        "/api/v1/sessions": {
          "post": {
            "summary": "Session beacons: sessions counted by the crash-free rates even when they upload nothing. Idempotent per (bundle_id, session_id); a session already marked crashed stays crashed.",
            "security": [{"ingestToken": []}],
            "parameters": [{"name": "Content-Encoding", "in": "header", "schema": {"enum": ["gzip", "identity"]}}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {
              "type": "object", "required": ["sessions"],
              "properties": {"sessions": {"type": "array", "minItems": 1, "maxItems": 1000,
                                          "items": {"$ref": "#/components/schemas/SessionBeacon"}}}}}}},
            "responses": {
              "202": {"description": "Recorded.", "content": {"application/json": {"schema": {
                "type": "object", "required": ["accepted"], "properties": {"accepted": {"type": "integer"}}}}}},
              "400": {"$ref": "#/components/responses/Invalid"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "403": {"$ref": "#/components/responses/Forbidden"},
              "413": {"$ref": "#/components/responses/TooLarge"},
              "429": {"$ref": "#/components/responses/RateLimited"},
              "503": {"$ref": "#/components/responses/Busy"}
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
              "403": {"$ref": "#/components/responses/Forbidden"},
              "413": {"$ref": "#/components/responses/TooLarge"},
              "429": {"$ref": "#/components/responses/RateLimited"},
              "503": {"$ref": "#/components/responses/Busy"}
            }
          },
          "get": {
            "summary": "API logs, newest first, a page at a time (next_before, when present, asks for the next page).",
            "security": [{"dashboard": []}],
            "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000}},
                           {"name": "app_id", "in": "query", "schema": {"type": "string"}},
                           {"name": "before", "in": "query", "schema": {"type": "integer"}}],
            "responses": {"200": {"description": "{\"logs\": [...], \"next_before\"}"}, "401": {"$ref": "#/components/responses/Unauthorized"}}
          }
        },
        "/api/issues": {
          "get": {
            "summary": "Issues, most recently seen first.",
            "security": [{"dashboard": []}],
            "parameters": [{"name": "bundle_id", "in": "query", "schema": {"type": "string"}},
                           {"name": "kind", "in": "query", "schema": {"enum": ["crash", "non_fatal", "abnormal_termination", "hang"]}},
                           {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000}},
                           {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0, "maximum": 1000000}}],
            "responses": {
              "200": {"description": "The issues; next_offset, when present, asks for the next page.", "content": {"application/json": {"schema": {
                "type": "object", "properties": {"issues": {"type": "array", "items": {"$ref": "#/components/schemas/Issue"}},
                                                 "next_offset": {"type": "integer"}}}}}},
              "401": {"$ref": "#/components/responses/Unauthorized"}
            }
          }
        },
        "/api/issues/{id}": {
          "get": {
            "summary": "One issue, its latest event in full, and a page of its events (newest first; events_before = next_events_before for the next page); with event, that event of the issue in full too.",
            "security": [{"dashboard": []}],
            "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}},
                           {"name": "event", "in": "query", "schema": {"type": "integer"}},
                           {"name": "events", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 500}},
                           {"name": "events_before", "in": "query", "schema": {"type": "integer"}}],
            "responses": {"200": {"description": "{\"issue\", \"latest_event\", \"events\", \"next_events_before\", \"event\"}"},
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
        "/api/top-crashes": {
          "get": {
            "summary": "Issues ranked by events received in the last 24 hours and the last 7 days (most first), with their 14-day trends.",
            "security": [{"dashboard": []}],
            "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
                           {"name": "kind", "in": "query", "schema": {"enum": ["crash", "non_fatal", "abnormal_termination", "hang"]}}],
            "responses": {
              "200": {"description": "The rankings.", "content": {"application/json": {"schema": {
                "type": "object", "required": ["generated_at", "last_24h", "last_7d"],
                "properties": {"generated_at": {"type": "string", "format": "date-time"},
                               "last_24h": {"type": "array", "items": {"$ref": "#/components/schemas/RankedIssue"}},
                               "last_7d": {"type": "array", "items": {"$ref": "#/components/schemas/RankedIssue"}}}}}}},
              "401": {"$ref": "#/components/responses/Unauthorized"}
            }
          }
        },
        "/api/alerts": {
          "get": {
            "summary": "Velocity alerts: issues with at least `minimum` events in the last hour and at least `factor` times their hourly average over the 7 days before it (--alert-factor, --alert-minimum).",
            "security": [{"dashboard": []}],
            "responses": {
              "200": {"description": "The rule and the issues it fires for, the most events first.",
                      "content": {"application/json": {"schema": {
                "type": "object", "required": ["generated_at", "rule", "alerts"],
                "properties": {
                  "generated_at": {"type": "string", "format": "date-time"},
                  "rule": {"type": "object", "properties": {"factor": {"type": "number"}, "minimum": {"type": "integer"},
                                                            "window_hours": {"type": "integer"}, "baseline_days": {"type": "integer"}}},
                  "alerts": {"type": "array", "items": {"type": "object", "required": ["issue", "last_hour", "baseline_per_hour"],
                    "properties": {"issue": {"$ref": "#/components/schemas/Issue"}, "last_hour": {"type": "integer"},
                                   "baseline_per_hour": {"type": "number"}}}}}}}}},
              "401": {"$ref": "#/components/responses/Unauthorized"}
            }
          }
        },
        "/api/connect-link": {
          "get": {
            "summary": "Seed 002's deep link for an app's bundle id.",
            "security": [{"dashboard": []}],
            "parameters": [{"name": "app_id", "in": "query", "required": true, "schema": {"$ref": "#/components/schemas/BundleID"}}],
            "responses": {"200": {"description": "{\"deep_link\", \"server_ip\", \"server_port\", \"qr_svg\", …}"},
                          "400": {"description": "The app id is not a bundle id."},
                          "401": {"$ref": "#/components/responses/Unauthorized"}}
          }
        },
        "/connect/qr.svg": {
          "get": {
            "summary": "The QR code of seed 002's deep link, as SVG (the Connect App modal's image).",
            "security": [{"dashboard": []}],
            "parameters": [{"name": "app_id", "in": "query", "required": true, "schema": {"$ref": "#/components/schemas/BundleID"}},
                           {"name": "host", "in": "query", "description": "IPv4 address or host name; the detected one when left out.",
                            "schema": {"type": "string", "maxLength": 253,
                                       "pattern": "^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"}},
                           {"name": "port", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 65535},
                            "description": "The collector's port when left out."}],
            "responses": {"200": {"description": "The QR code.", "content": {"image/svg+xml": {"schema": {"type": "string"}}}},
                          "400": {"$ref": "#/components/responses/Invalid"},
                          "401": {"$ref": "#/components/responses/Unauthorized"}}
          }
        },
        "/metrics": {
          "get": {
            "summary": "Prometheus' text format: uploads by endpoint and status, their durations, refusals by the limit passed, uploads in flight, and arrival symbolication's queue and frame lookups.",
            "security": [{"dashboard": []}],
            "responses": {"200": {"description": "Text exposition format 0.0.4.", "content": {"text/plain": {"schema": {"type": "string"}}}},
                          "401": {"$ref": "#/components/responses/Unauthorized"}}
          }
        },
        "/health": {"get": {"summary": "Liveness.", "responses": {"200": {"description": "{\"status\": \"ok\"}"}}}},
        "/openapi.json": {"get": {"summary": "This document.", "responses": {"200": {"description": "OpenAPI 3.1."}}}}
      }
    }
    """#
}
