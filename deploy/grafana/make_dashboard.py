#!/usr/bin/env python3
"""Writes outpost-fleet.json, the Grafana dashboard for a fleet of Outpost boxes
(Prometheus data source; the metrics of docs/telemetry.md and the recording
rules of deploy/prometheus/outpost-recording.yml). Edit the panels here, run
it, commit both files; tests/integration/test_grafana.py runs every query in a
real Prometheus scraping a real Outpost.

Usage: deploy/grafana/make_dashboard.py [OUT]   (default: beside this script)
"""
import json
import os
import sys

I = 'instance=~"$instance"'
# Users' latency: a Batch API's lines wait and decode in the lowest class by design.
U = I + ',openai_response_service_tier!="batch"'
R = "$__rate_interval"

# (title, unit, kind, [(legend, expr)], width)
PANELS = [
    ("Fleet", None, "row", [], 24),
    ("Boxes up", "none", "stat", [("up", f'count(up{{job="outpost",{I}}} == 1)')], 4),
    ("Boxes down", "none", "stat", [("down", f'count(up{{job="outpost",{I}}} == 0) or vector(0)')], 4),
    ("Requests/s", "reqps", "stat", [("all", f"sum(rate(gen_ai_server_request_duration_seconds_count{{{I}}}[{R}]))")], 4),
    ("Failure rate", "percentunit", "stat",
     [("failed", f'(sum(rate(gen_ai_server_request_duration_seconds_count{{{I},error_type!~"|cancelled"}}[{R}])) '
                 f"or vector(0)) / sum(rate(gen_ai_server_request_duration_seconds_count{{{I}}}[{R}]))")], 4),
    ("Tokens/s generated", "none", "stat", [("all", f"sum(rate(outpost_completion_tokens_total{{{I}}}[{R}]))")], 4),
    ("Sessions in use", "percentunit", "stat",
     [("busy", f"sum(outpost_active_sequences{{{I}}}) / sum(outpost_max_sessions{{{I}}})")], 4),
    ("Serving", None, "row", [], 24),
    ("Time to first token p95 by box", "s", "timeseries",
     [("{{instance}}", f"histogram_quantile(0.95, sum by (le, instance) "
                       f"(rate(gen_ai_server_time_to_first_token_seconds_bucket{{{U}}}[{R}])))")], 12),
    ("Time per output token p50 by box", "s", "timeseries",
     [("{{instance}}", f"histogram_quantile(0.5, sum by (le, instance) "
                       f"(rate(gen_ai_server_time_per_output_token_seconds_bucket{{{U}}}[{R}])))")], 12),
    ("Tokens/s by box", "none", "timeseries",
     [("{{instance}}", f"sum by (instance) (rate(outpost_completion_tokens_total{{{I}}}[{R}]))")], 12),
    ("Queue by box", "none", "timeseries", [("{{instance}}", f"sum by (instance) (outpost_queue_depth{{{I}}})")], 12),
    ("Routes", "reqps", "timeseries",
     [("{{route}}", f"sum by (route) (rate(outpost_route_decisions_total{{{I}}}[{R}]))")], 12),
    ("Rejections by reason", "reqps", "timeseries",
     [("{{reason}}", f"sum by (reason) (rate(outpost_requests_rejected_total{{{I}}}[{R}]))")], 12),
    ("Finish reasons", "reqps", "timeseries",
     [("{{finish_reason}}", f"sum by (finish_reason) (rate(outpost_requests_finished_total{{{I}}}[{R}]))")], 12),
    ("Models loaded", "none", "table", [("{{instance}} {{model}}", f"outpost_model_loaded{{{I}}}")], 12),
    ("Hardware", None, "row", [], 24),
    ("Hottest sensor by box", "celsius", "timeseries",
     [("{{instance}}", f"max by (instance) (outpost_hw_temperature_celsius{{{I}}})")], 8),
    ("Power by box (largest rail)", "watt", "timeseries",
     [("{{instance}}", f"max by (instance) (outpost_hw_power_watts{{{I}}})")], 8),
    ("Energy per token", "J", "timeseries",
     [("{{instance}}", f"instance:outpost_energy_per_token_joules:rate5m{{{I}}}")], 8),
    ("Thermal throttling", "none", "timeseries",
     [("{{instance}} {{hw_id}}", f"increase(outpost_hw_throttle_events_total{{{I}}}[{R}])")], 8),
    ("Sensors absent", "none", "timeseries",
     [("{{instance}} {{source}}", f"outpost_sensor_up{{{I}}} == 0")], 8),
    ("Resident memory", "bytes", "timeseries",
     [("{{instance}}", f"process_resident_memory_bytes{{{I}}}")], 8),
    ("Uplink and audit", None, "row", [], 24),
    ("Since the last uplink success", "s", "timeseries",
     [("{{instance}}", f"time() - outpost_uplink_last_success_timestamp_seconds{{{I}}}")], 8),
    ("Spool fill", "percentunit", "timeseries",
     [("{{instance}}", f"outpost_spool_bytes{{{I}}} / outpost_spool_capacity_bytes{{{I}}}")], 8),
    ("Records dropped (gaps)", "none", "timeseries",
     [("{{instance}}", f"increase(outpost_spool_dropped_total{{{I}}}[{R}])")], 8),
    ("Uplink bytes/s", "Bps", "timeseries",
     [("{{instance}}", f"rate(outpost_uplink_sent_bytes_total{{{I}}}[{R}])")], 12),
    ("Audit records/s", "none", "timeseries",
     [("{{instance}}", f"rate(outpost_audit_records_total{{{I}}}[{R}])")], 12),
]


def build():
    panels, x, y, row_h, pid = [], 0, 0, 0, 1
    for title, unit, kind, targets, w in PANELS:
        h = 1 if kind == "row" else (4 if kind == "stat" else 8)
        if kind == "row" or x + w > 24:  # a new line of panels
            x, y, row_h = 0, y + row_h, 0
        p = {"id": pid, "type": kind, "title": title, "gridPos": {"x": x, "y": y, "w": w, "h": h}}
        if kind != "row":
            p["datasource"] = {"type": "prometheus", "uid": "${datasource}"}
            p["fieldConfig"] = {"defaults": {"unit": unit}, "overrides": []}
            p["targets"] = [{"refId": chr(65 + i), "expr": e, "legendFormat": leg,
                             "datasource": {"type": "prometheus", "uid": "${datasource}"}}
                            for i, (leg, e) in enumerate(targets)]
            if kind == "table":
                p["targets"][0]["format"] = "table"
                p["targets"][0]["instant"] = True
        else:
            p["collapsed"] = False
            p["panels"] = []
        panels.append(p)
        pid += 1
        row_h = max(row_h, h)
        x = 24 if kind == "row" else x + w
    return {
        "title": "Outpost fleet",
        "uid": "outpost-fleet",
        "description": "Every Outpost box: serving, hardware, uplink and audit (docs/telemetry.md).",
        "tags": ["outpost", "llm", "edge"],
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "30s",
        "templating": {"list": [
            {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"},
            {"name": "instance", "type": "query", "label": "Box", "multi": True, "includeAll": True,
             "allValue": ".*", "datasource": {"type": "prometheus", "uid": "${datasource}"},
             "query": {"query": 'label_values(up{job="outpost"}, instance)', "refId": "instance"},
             "refresh": 2, "current": {"text": "All", "value": "$__all"}},
        ]},
        "annotations": {"list": []},
        "panels": panels,
    }


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                            "outpost-fleet.json")
    with open(out, "w") as f:
        json.dump(build(), f, indent=2)
        f.write("\n")
    print(out)
