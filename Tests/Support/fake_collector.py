#!/usr/bin/python3
"""Fake diagnostics collector for the integration tests (seed 000's upload endpoint).

The Swift tests start it as a subprocess (Tests/CrashTestSupport/FakeCollector.swift):

    fake_collector.py --port-file F --schema PATH --token TOKEN [--log FILE]

It listens on 127.0.0.1 (a free port, written atomically to F), serves HTTP/1.1 and exits
cleanly on SIGTERM, or when its parent process dies. Standard library only, plus jsonschema
(Debian's python3-jsonschema).

  POST /api/v1/qa/diagnostics   the upload: Bearer token, optional gzip, 5 MiB limit (as sent),
                                JSON Schema validation, idempotency by Idempotency-Key
  POST /api/logs                seed 003's api_log events (one object or an array) -> api_logs
  POST /api/v1/sessions         session beacons {"sessions": [...]}: Bearer token, each entry
                                checked (session_id, started_at, bundle_id, app_version,
                                build_number strings; user_id and device_identifier optional
                                strings) -> sessions (400 for a bad batch, nothing stored)
  POST /logzio?token=&type=     Logz.io's JSON bulk upload (one object per line), each checked
                                against seed 004's shape (Linux names) -> elk, elk_errors
  POST /control/script          {"responses": [...]} queued answers for the next uploads:
                                {"status": 500|503|400|401|403|413|201, "message"?, "retry_after"?}
                                {"status": 307|308, "location": URL}   a redirect, nothing stored
                                {"delay_seconds": 5, "then": {...}}   {"store_then_hang": true}
                                {"close": true}          (201 or an empty queue: normal processing)
                                Each upload takes the next entry before any check; a status other
                                than 201 is answered as is, nothing stored; store_then_hang
                                processes normally, then never answers; a delay then goes on
                                (stores even if the client has given up).
  POST /control/strict          {"strict": true}: invalid uploads get 400 instead of being
                                stored as invalid
  POST /control/keep_alive      {"keep_alive": true}: keep upload connections open. Off by
                                default (uploads are answered with Connection: close): on Linux,
                                URLSession (libcurl) re-sends a request whose reused connection
                                closed unanswered, then never reports the answer, so "close"
                                would be neither seen nor deterministic.
  POST /control/reset           forget everything (requests, stored, script, modes, api_logs)
  GET  /control/state           requests, stored (payload and payload_text: the body as sent,
                                gunzipped), unique_keys, duplicate_requests, invalid_count,
                                api_logs, sessions, strict, keep_alive, script_pending
"""
import argparse
import collections
import datetime
import gzip
import json
import re
import urllib.parse
import os
import secrets
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jsonschema

DIAGNOSTICS = "/api/v1/qa/diagnostics"
MAX_BODY = 5 * 1024 * 1024
MAX_CUSTOM_DATA = 100 * 1024
SCRIPTED_STATUSES = {201, 307, 308, 400, 401, 403, 413, 500, 503}
ERRORS = {
    401: {"error": "unauthorized", "message": "Missing or invalid bearer token"},
    403: {"error": "forbidden", "message": "Token not allowed to upload diagnostics"},
    413: {"error": "payload_too_large", "message": "Payload exceeds 5MB limit", "max_size_bytes": MAX_BODY},
    500: {"error": "internal_error", "message": "Internal Server Error"},
    503: {"error": "service_unavailable", "message": "Service Unavailable"},
}


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def check_script_entry(entry):
    """Raises ValueError unless `entry` is one of the documented script entries."""
    if not isinstance(entry, dict):
        raise ValueError(f"script entry is not an object: {entry!r}")
    if "delay_seconds" in entry:
        if not isinstance(entry["delay_seconds"], (int, float)) or entry["delay_seconds"] < 0:
            raise ValueError(f"bad delay_seconds: {entry!r}")
        if "then" in entry:
            check_script_entry(entry["then"])
    elif entry.get("store_then_hang") is True or entry.get("close") is True:
        pass
    elif entry.get("status") in (307, 308) and not isinstance(entry.get("location"), str):
        raise ValueError(f"a redirect needs a location: {entry!r}")
    elif entry.get("status") not in SCRIPTED_STATUSES:
        raise ValueError(f"unknown script entry (status must be one of {sorted(SCRIPTED_STATUSES)}): {entry!r}")


class Collector:
    """Everything the server remembers; every access holds `lock`."""

    def __init__(self, schema, token, log):
        self.validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
        self.token, self.log = token, log
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.reset()

    def reset(self):
        with self.lock:
            self.requests, self.stored, self.api_logs, self.sessions = [], [], [], []
            self.elk, self.elk_errors = [], []
            self.answers = {}  # Idempotency-Key -> the 201 body answered the first time
            self.duplicates = 0
            self.script = collections.deque()
            self.strict = False
            self.keep_alive = False

    def validate(self, payload):
        """Schema errors as "path: message" (at most 50), plus the custom_data size limit."""
        def describe(e):  # messages quote the instance: say which keyword failed when that is long
            message = e.message if len(e.message) <= 200 else f"fails {e.validator}: {json.dumps(e.validator_value)[:150]}"
            return f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {message}"
        errors = [describe(e) for e in sorted(self.validator.iter_errors(payload), key=lambda e: list(map(str, e.absolute_path)))][:50]
        if isinstance(payload, dict) and "custom_data" in payload:
            size = len(json.dumps(payload["custom_data"], separators=(",", ":"), ensure_ascii=False).encode())
            if size > MAX_CUSTOM_DATA:
                errors.append(f"custom_data: {size} bytes serialized, over the {MAX_CUSTOM_DATA} byte limit")
        return errors

    def state(self):
        with self.lock:
            return {
                "requests": self.requests, "stored": self.stored, "api_logs": self.api_logs, "sessions": self.sessions,
                "elk": self.elk, "elk_errors": self.elk_errors,
                "unique_keys": list(self.answers), "duplicate_requests": self.duplicates,
                "invalid_count": sum(not s["valid"] for s in self.stored),
                "strict": self.strict, "keep_alive": self.keep_alive, "script_pending": len(self.script),
            }


def seed004_errors(document):
    """What a seed 004 document (Linux names: `linux`, `linux.metadata`) gets wrong; empty if nothing."""
    errors = []
    def need(key, kind, where=document, prefix=""):
        if key not in where:
            errors.append(f"{prefix}{key}: missing")
        elif not isinstance(where[key], kind) or (kind is int and isinstance(where[key], bool)):
            errors.append(f"{prefix}{key}: not {kind.__name__}")
    if not isinstance(document, dict):
        return ["not an object"]
    need("code", int); need("domain", str); need("message", str); need("environment", str); need("reported_at", str)
    if isinstance(document.get("domain"), str) and not document["domain"]:
        errors.append("domain: empty")
    if isinstance(document.get("reported_at"), str) and not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", document["reported_at"]):
        errors.append("reported_at: not ISO 8601 UTC")
    need("linux", dict); need("linux.metadata", dict)
    platform = document.get("linux")
    if isinstance(platform, dict):
        need("version", str, platform, "linux."); need("build_number", int, platform, "linux.")
        need("platform", str, platform, "linux."); need("development", bool, platform, "linux.")
        if platform.get("platform") != "linux":
            errors.append("linux.platform: not \"linux\"")
    for stray in ("mobile", "ios.metadata"):
        if stray in document:
            errors.append(f"{stray}: iOS name left in")
    return errors


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeCollector/1"
    # Headers and body go out in separate writes: without this, Nagle holds the body until the
    # client's delayed ACK, 40 ms per request.
    disable_nagle_algorithm = True
    collector: Collector  # set on the class by main()

    def log_message(self, format, *args):
        if self.collector.log:
            with self.collector.lock, open(self.collector.log, "a") as f:
                f.write(f"{now_iso()} {format % args}\n")

    def send_json(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
            self.close_connection = True

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while (size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)) > 0:
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def decompressed(self, raw):
        """The body gunzipped when Content-Encoding says gzip; raises ValueError."""
        if self.headers.get("Content-Encoding", "").lower() != "gzip":
            return raw
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError) as error:
            raise ValueError(f"invalid gzip body: {error}")

    def decoded_json(self, raw):
        """The body as JSON (gunzipped when Content-Encoding says gzip); raises ValueError."""
        raw = self.decompressed(raw)
        try:
            return json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"invalid JSON: {error}")

    def do_GET(self):
        if self.path == "/control/state":
            return self.send_json(200, self.collector.state())
        self.send_json(404, {"error": "not_found", "path": self.path})

    def logzio(self, raw):
        query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        if query.get("token") != [self.collector.token] or not query.get("type"):
            return self.send_json(401, {"error": "bad token or type"})
        try:
            text = (gzip.decompress(raw) if self.headers.get("Content-Encoding") == "gzip" else raw).decode()
            documents = [json.loads(line) for line in text.splitlines() if line.strip()]
        except (OSError, ValueError) as error:
            return self.send_json(400, {"malformedLines": 1, "error": str(error)})
        problems = [f"line {n + 1}: {e}" for n, d in enumerate(documents) for e in seed004_errors(d)]
        with self.collector.lock:
            self.collector.elk.extend(documents)
            self.collector.elk_errors.extend(problems)
        return self.send_json(200, {"successfulLines": len(documents), "malformedLines": 0, "oversizedLines": 0, "emptyLogLines": 0})

    def do_POST(self):
        raw = self.read_body()
        c = self.collector
        if self.path == DIAGNOSTICS:
            return self.diagnostics(raw)
        if self.path == "/api/logs":
            try:
                events = self.decoded_json(raw)
            except ValueError as error:
                return self.send_json(400, {"error": "validation_failed", "message": str(error), "details": []})
            events = events if isinstance(events, list) else [events]
            with c.lock:
                c.api_logs.extend(events)
            return self.send_json(201, {"accepted": len(events)})
        if self.path == "/api/v1/sessions":
            return self.session_beacons(raw)
        if self.path.startswith("/logzio"):
            return self.logzio(raw)
        if self.path.startswith("/control/"):
            try:
                body = json.loads(raw or b"{}")
                if self.path == "/control/reset":
                    c.reset()
                elif self.path == "/control/strict":
                    with c.lock:
                        c.strict = bool(body.get("strict", True))
                elif self.path == "/control/keep_alive":
                    with c.lock:
                        c.keep_alive = bool(body.get("keep_alive", True))
                elif self.path == "/control/script":
                    for entry in body["responses"]:
                        check_script_entry(entry)
                    with c.lock:
                        c.script.extend(body["responses"])
                else:
                    return self.send_json(404, {"error": "not_found", "path": self.path})
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                return self.send_json(400, {"error": "bad_control_request", "message": repr(error)})
            return self.send_json(200, {"ok": True})
        self.send_json(404, {"error": "not_found", "path": self.path})

    def session_beacons(self, raw):
        if self.headers.get("Authorization") != f"Bearer {self.collector.token}":
            return self.send_json(401, ERRORS[401])
        try:
            body = self.decoded_json(raw)
            sessions = body["sessions"]
            if not isinstance(sessions, list) or not 1 <= len(sessions) <= 1000:
                raise ValueError("sessions must be an array of 1 to 1000 entries")
            for entry in sessions:
                # As the collector (Collector/…/SessionBeacons.swift): app_version and build_number
                # may be empty (an app that sets no build number), the others may not.
                for key in ("session_id", "started_at", "bundle_id", "app_version", "build_number"):
                    if not isinstance(entry.get(key), str):
                        raise ValueError(f"{key} must be a string: {entry}")
                    if key not in ("app_version", "build_number") and not entry[key]:
                        raise ValueError(f"{key} must be a non-empty string: {entry}")
                datetime.datetime.fromisoformat(entry["started_at"].replace("Z", "+00:00"))
                for key in ("user_id", "device_identifier"):
                    if key in entry and entry[key] is not None and not isinstance(entry[key], str):
                        raise ValueError(f"{key} must be a string")
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            return self.send_json(400, {"error": "validation_failed", "message": str(error), "details": []})
        with self.collector.lock:
            self.collector.sessions.extend(sessions)
        return self.send_json(202, {"accepted": len(sessions)})

    def diagnostics(self, raw):
        c = self.collector
        record = {
            "time": now_iso(),
            "content_type": self.headers.get("Content-Type"),
            "content_encoding": self.headers.get("Content-Encoding"),
            "has_authorization": "Authorization" in self.headers,
            "test_run_id": self.headers.get("X-Test-Run-ID"),
            "app_version": self.headers.get("X-App-Version"),
            "idempotency_key": self.headers.get("Idempotency-Key"),
            "body_size": len(raw),
            "status": None,  # null until answered; stays null for "close" and "store_then_hang"
            "scripted": None,
        }
        with c.lock:
            c.requests.append(record)
            entry = c.script.popleft() if c.script else None
            record["scripted"] = entry
        while entry and "delay_seconds" in entry:
            time.sleep(entry["delay_seconds"])
            entry = entry.get("then")
        if entry and entry.get("close"):
            self.log_message("%s: closed without answering (scripted)", self.path)
            self.close_connection = True
            return
        if entry and entry.get("store_then_hang"):
            self.process(raw, record)
            self.log_message("%s: stored, hanging until the server stops (scripted)", self.path)
            c.stopping.wait()  # hold the connection until the server stops
            self.close_connection = True
            return
        status, body, headers = (self.scripted(entry) if entry and entry.get("status", 201) != 201
                                 else self.process(raw, record))
        with c.lock:
            record["status"] = status
        if not c.keep_alive:
            headers, self.close_connection = [*headers, ("Connection", "close")], True
        self.send_json(status, body, headers)

    def scripted(self, entry):
        status = entry["status"]
        if status == 400:
            message = entry.get("message", "Scripted validation failure")
            return 400, {"error": "validation_failed", "message": message, "details": [message]}, ()
        if status in (307, 308):
            return status, {"error": "moved", "location": entry["location"]}, [("Location", entry["location"])]
        headers = [("Retry-After", str(entry["retry_after"]))] if "retry_after" in entry else []
        return status, dict(ERRORS[status], **({"message": entry["message"]} if "message" in entry else {})), headers

    def process(self, raw, record):
        """Normal processing: auth, size, idempotency, validation, storage. -> (status, body, headers)"""
        c = self.collector
        if self.headers.get("Authorization") != f"Bearer {c.token}":
            return 401, ERRORS[401], ()
        if len(raw) > MAX_BODY:
            return 413, ERRORS[413], ()
        key = self.headers.get("Idempotency-Key")
        with c.lock:
            if key is not None and key in c.answers:
                c.duplicates += 1
                record["duplicate"] = True
                return 201, c.answers[key], ()
        payload, text = None, None
        try:
            text = self.decompressed(raw).decode("utf-8", "replace")
            payload = self.decoded_json(raw)
            errors = c.validate(payload)
        except ValueError as error:
            errors = [str(error)]
        if errors and c.strict:
            return 400, {"error": "validation_failed", "message": errors[0], "details": errors}, ()
        test_run_id = payload.get("test_run_id") if isinstance(payload, dict) else None
        body = {"diagnostics_id": f"diag_{secrets.token_hex(8)}", "test_run_id": test_run_id,
                "received_at": now_iso(), "status": "accepted"}
        with c.lock:
            if key is not None and key in c.answers:  # the same key raced in meanwhile
                c.duplicates += 1
                record["duplicate"] = True
                return 201, c.answers[key], ()
            if key is not None:
                c.answers[key] = body
            c.stored.append({"idempotency_key": key, "test_run_id": test_run_id, "diagnostics_id": body["diagnostics_id"],
                             "payload": payload, "payload_text": text,
                             "valid": not errors, "schema_errors": errors})
        return 201, body, ()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--schema", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--log")
    args = parser.parse_args()
    with open(args.schema) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    Handler.collector = collector = Collector(schema, args.token, args.log)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    temporary = f"{args.port_file}.tmp.{os.getpid()}"
    with open(temporary, "w") as f:
        f.write(f"{port}\n")
    os.replace(temporary, args.port_file)
    print(f"listening {port}", flush=True)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: collector.stopping.set())
    # A test runner may start us with these blocked (the mask is inherited): unblock, or SIGTERM
    # waits until the runner gives up and kills us.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    parent = os.getppid()
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    while not collector.stopping.wait(0.5):
        if os.getppid() != parent:  # the test process died without stopping us
            collector.stopping.set()
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
