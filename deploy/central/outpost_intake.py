#!/usr/bin/env python3
"""outpost_intake — a central intake for Outpost uplinks: a strict OTLP/HTTP
JSON receiver with an exactly-once ledger, optionally forwarding each applied
summary into VictoriaMetrics. The uplink tests use it as "the centre"; a
central team can run it as is or read it as the recipe (docs/telemetry.md).

Run:  outpost_intake.py PORT LEDGER.db [--listen ADDR] [--delay-ms N] [--victoriametrics URL]
                        [--tls-cert PEM --tls-key PEM] [--token-file FILE]
Needs: python3 with opentelemetry-proto (pip) for the reference decoding.

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
- --tls-cert/--tls-key: HTTPS. --token-file: every POST must carry
  "Authorization: Bearer <the file's first line>", else 401.
- --victoriametrics URL: each summary applied is written to
  URL/api/v1/import/prometheus as samples at the summary's own time, labelled
  box and boot: counters and histograms cumulative (replays would be harmless,
  but the ledger sends each once), gauges with a `stat` label
  (last|min|max|mean), window latencies as quantiles. Old summaries from a
  backfill land at their own times (VictoriaMetrics accepts them; Prometheus's
  remote-write receiver would refuse samples older than its head block).
"""
import gzip
import json
import re
import sqlite3
import urllib.request
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
            return dup is None


def prom_name(name, unit):
    """OTel metric name to Prometheus: gen_ai.server.request.duration + s →
    gen_ai_server_request_duration_seconds; outpost_* names pass through."""
    n = re.sub(r"[^a-zA-Z0-9_]", "_", name)
    if unit == "s" and not n.endswith("_seconds"):
        n += "_seconds"
    return n


def labels_text(labels):
    esc = lambda v: str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return "{" + ",".join(f'{re.sub(r"[^a-zA-Z0-9_]", "_", k)}="{esc(v)}"' for k, v in sorted(labels.items())) + "}"


def to_prometheus_import(doc):
    """An OTLP ExportMetricsServiceRequest (JSON) as Prometheus text import
    lines with timestamps in ms."""
    rm = doc["resourceMetrics"][0]
    res = {a["key"]: attr_value(a["value"]) for a in rm["resource"]["attributes"]}
    base = {"box": res["outpost.box.id"], "boot": res["outpost.boot.id"]}
    out = []
    for m in rm["scopeMetrics"][0]["metrics"]:
        name = prom_name(m["name"], m.get("unit", ""))
        for kind in ("sum", "gauge", "histogram", "summary"):
            if kind not in m:
                continue
            for p in m[kind]["dataPoints"]:
                lab = dict(base)
                lab.update({a["key"]: attr_value(a["value"]) for a in p.get("attributes", [])})
                if "outpost.window.stat" in lab:
                    lab["stat"] = lab.pop("outpost.window.stat")
                ts = int(p["timeUnixNano"]) // 1_000_000
                if kind in ("sum", "gauge"):
                    v = p.get("asDouble", p.get("asInt", 0))
                    out.append(f"{name}{labels_text(lab)} {float(v)} {ts}")
                elif kind == "histogram":
                    cum = 0
                    for le, c in zip(p["explicitBounds"] + ["+Inf"], p["bucketCounts"]):
                        cum += int(c)
                        out.append(f"{name}_bucket{labels_text(dict(lab, le=le))} {cum} {ts}")
                    out.append(f"{name}_sum{labels_text(lab)} {float(p.get('sum', 0))} {ts}")
                    out.append(f"{name}_count{labels_text(lab)} {int(p['count'])} {ts}")
                else:
                    for q in p.get("quantileValues", []):
                        out.append(f"{name}{labels_text(dict(lab, quantile=q['quantile']))} {q['value']} {ts}")
                    out.append(f"{name}_count{labels_text(lab)} {int(p['count'])} {ts}")
    return "\n".join(out) + "\n"


def make_handler(ledger, delay_s, victoriametrics=None, token=None):
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
            if self.headers.get("Content-Encoding") == "gzip":
                try:
                    body = gzip.decompress(body)
                except OSError as e:
                    return self.refuse(f"bad gzip body: {e}")
            elif self.headers.get("Content-Encoding") not in (None, "identity"):
                return self.refuse("Content-Encoding " + self.headers.get("Content-Encoding"))
            if delay_s:
                time.sleep(delay_s)
            if token is not None and self.headers.get("Authorization") != "Bearer " + token:
                ledger.violation(self.path, "missing or wrong bearer token")
                return self.answer(401, {"code": 16, "message": "unauthenticated"})
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
            fresh = ledger.apply(box, seq, first, boot, kind, present, attrs, body.decode())
            if fresh and victoriametrics and kind == "summary":
                req = urllib.request.Request(victoriametrics + "/api/v1/import/prometheus",
                                             data=to_prometheus_import(doc).encode(), method="POST")
                try:
                    urllib.request.urlopen(req, timeout=10).read()
                except OSError as e:  # the ledger has it; a re-import tool could replay it
                    ledger.violation(self.path, f"forwarding seq {seq} to VictoriaMetrics failed: {e}")
            self.answer(200, {})

    return Handler


def main():
    port, path = int(sys.argv[1]), sys.argv[2]
    delay = 0.0
    if "--delay-ms" in sys.argv:
        delay = int(sys.argv[sys.argv.index("--delay-ms") + 1]) / 1000.0
    vm = None
    if "--victoriametrics" in sys.argv:
        vm = sys.argv[sys.argv.index("--victoriametrics") + 1].rstrip("/")
    host = "127.0.0.1"
    if "--listen" in sys.argv:
        host = sys.argv[sys.argv.index("--listen") + 1]
    token = None
    if "--token-file" in sys.argv:
        with open(sys.argv[sys.argv.index("--token-file") + 1]) as f:
            token = f.readline().strip()
    server = ThreadingHTTPServer((host, port), make_handler(Ledger(path), delay, vm, token))
    if "--tls-cert" in sys.argv:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[sys.argv.index("--tls-cert") + 1],
                            sys.argv[sys.argv.index("--tls-key") + 1])
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print(f"otlp receiver on {host}:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
