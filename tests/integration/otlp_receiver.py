#!/usr/bin/env python3
"""A strict OTLP/HTTP JSON receiver with an exactly-once ledger — the "centre"
for the uplink tests, and a sketch of what a central intake needs.

Run as its own process:  otlp_receiver.py PORT LEDGER.db [--delay-ms N]

- POST /v1/metrics and /v1/logs: the body must be JSON (Content-Type
  application/json) that the reference protos (opentelemetry-proto) decode
  with unknown fields refused; it must carry the record's key as resource
  attributes (outpost.box.id, outpost.boot.id, outpost.record.seq) and the
  same key in Idempotency-Key. Anything else: 400, and the violation is kept.
- Every arrival is written to `arrivals`; the first arrival of a key also to
  `applied`, in the same transaction (SQLite, synchronous=FULL), then 200 {}.
  A replay is answered 200 and applied no second time.
- --delay-ms: wait before answering (a slow link, so a test can kill the
  sender in the middle of a backfill).
"""
import json
import sqlite3
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2

SCHEMA = """
CREATE TABLE IF NOT EXISTS arrivals(n INTEGER PRIMARY KEY AUTOINCREMENT, box TEXT, seq INTEGER,
  kind TEXT, present INTEGER, duplicate INTEGER, at REAL);
CREATE TABLE IF NOT EXISTS applied(box TEXT, seq INTEGER, first_seq INTEGER, boot TEXT, kind TEXT,
  present INTEGER, arrival INTEGER, attrs TEXT, body TEXT, PRIMARY KEY(box, seq));
CREATE TABLE IF NOT EXISTS violations(at REAL, path TEXT, problem TEXT);
"""


def attr_value(v):
    for k in ("stringValue", "intValue", "boolValue", "doubleValue"):
        if k in v:
            return v[k]
    return None


class Ledger:
    def __init__(self, path):
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)
        self.lock = threading.Lock()

    def violation(self, path, problem):
        with self.lock:
            self.db.execute("INSERT INTO violations VALUES(?,?,?)", (time.time(), path, problem))

    def apply(self, box, seq, first_seq, boot, kind, present, attrs, body):
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            dup = self.db.execute("SELECT 1 FROM applied WHERE box=? AND seq=?", (box, seq)).fetchone()
            cur = self.db.execute(
                "INSERT INTO arrivals(box, seq, kind, present, duplicate, at) VALUES(?,?,?,?,?,?)",
                (box, seq, kind, int(present), int(dup is not None), time.time()))
            if dup is None:
                self.db.execute("INSERT INTO applied VALUES(?,?,?,?,?,?,?,?,?)",
                                (box, seq, first_seq, boot, kind, int(present), cur.lastrowid,
                                 json.dumps(attrs), body))
            self.db.execute("COMMIT")


def make_handler(ledger, delay_s):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def answer(self, status, obj):
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def refuse(self, problem):
            ledger.violation(self.path, problem)
            self.answer(400, {"code": 3, "message": problem})

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if delay_s:
                time.sleep(delay_s)
            if self.path not in ("/v1/metrics", "/v1/logs"):
                return self.refuse("unknown path " + self.path)
            if not self.headers.get("Content-Type", "").startswith("application/json"):
                return self.refuse("Content-Type " + self.headers.get("Content-Type", ""))
            msg = (metrics_service_pb2.ExportMetricsServiceRequest() if self.path == "/v1/metrics"
                   else logs_service_pb2.ExportLogsServiceRequest())
            try:
                json_format.Parse(body, msg, ignore_unknown_fields=False)
                doc = json.loads(body)
            except Exception as e:  # noqa: BLE001 — any decoding failure is the sender's bug
                return self.refuse(f"not OTLP JSON: {e}")
            top = "resourceMetrics" if self.path == "/v1/metrics" else "resourceLogs"
            if len(doc.get(top, [])) != 1:
                return self.refuse(f"expected one {top} entry")
            attrs = {a["key"]: attr_value(a["value"]) for a in doc[top][0]["resource"]["attributes"]}
            try:
                box, boot = attrs["outpost.box.id"], attrs["outpost.boot.id"]
                seq, first = int(attrs["outpost.record.seq"]), int(attrs["outpost.record.first_seq"])
                kind, present = attrs["outpost.record.kind"], bool(attrs["outpost.uplink.present"])
            except (KeyError, ValueError) as e:
                return self.refuse(f"record key missing: {e}")
            if self.headers.get("Idempotency-Key") != f"{box}:{seq}":
                return self.refuse("Idempotency-Key " + str(self.headers.get("Idempotency-Key")))
            if (kind == "summary") != (self.path == "/v1/metrics"):
                return self.refuse(f"kind {kind} on {self.path}")
            ledger.apply(box, seq, first, boot, kind, present, attrs, body.decode())
            self.answer(200, {})

    return Handler


def main():
    port, path = int(sys.argv[1]), sys.argv[2]
    delay = 0.0
    if "--delay-ms" in sys.argv:
        delay = int(sys.argv[sys.argv.index("--delay-ms") + 1]) / 1000.0
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(Ledger(path), delay))
    print(f"otlp receiver on 127.0.0.1:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
