"""Prompt and answer text leave the box through telemetry only for a tenant
whose routing-file entry says `telemetry_content: true`, never for restricted
data: a real `outpost serve` on the default model with the uplink to the real
receiver process (strict OTLP decoding), requests from an allowed tenant (chat
and streamed completion), the same tenant marked restricted, another tenant,
and no key at all."""
import json

import httpx

from outpost_harness import chat_body, free_port, serve
from test_uplink import Receiver, wait_for

EVENT = "gen_ai.client.inference.operation.details"


def content_events(rx):
    out = []
    for (body,) in rx.query("SELECT body FROM applied WHERE kind='event' ORDER BY arrival"):
        rec = json.loads(body)["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
        if rec["eventName"] == EVENT:
            attrs = {a["key"]: a["value"]["stringValue"] for a in rec["attributes"]}
            out.append((rec, attrs))
    return out


def test_content_leaves_only_for_a_tenant_that_allows_it(tmp_path):
    routing = tmp_path / "routing.yaml"
    routing.write_text("tenants:\n"
                       "  - {name: lab, api_key: key-lab, telemetry_content: true}\n"
                       "  - {name: office, api_key: key-office}\n")
    rx = Receiver(free_port(), str(tmp_path / "ledger.db"))
    try:
        with serve("--routing-file", str(routing), "--uplink-url", f"http://127.0.0.1:{rx.port}",
                   "--uplink-interval", "1s", "--state-dir", str(tmp_path / "state")) as s:
            assert "tenant 'lab'" in s.log() and "telemetry_content" in s.log()
            lab = {"Authorization": "Bearer key-lab"}
            r = s.post("/v1/chat/completions", headers=lab, json={
                "messages": [{"role": "system", "content": "You answer in one sentence."},
                             {"role": "user", "content": "What is the capital of France? (Albatross)"}],
                "temperature": 0, "max_tokens": 16})
            assert r.status_code == 200, r.text
            chat = r.json()
            with httpx.stream("POST", s.base + "/v1/completions", headers=lab, timeout=120, json={
                    "prompt": "The capital of France (Cormorant) is", "max_tokens": 8,
                    "temperature": 0, "stream": True}) as st:
                assert st.status_code == 200
                streamed = ""
                for line in st.iter_lines():
                    if line.startswith("data: ") and line != "data: [DONE]":
                        streamed += json.loads(line[6:])["choices"][0]["text"]
            # Not for restricted data, another tenant, or no tenant at all.
            for headers, word in [({**lab, "X-Data-Class": "restricted"}, "Pelican"),
                                  ({"Authorization": "Bearer key-office"}, "Heron"),
                                  ({}, "Puffin")]:
                r = s.post("/v1/chat/completions", headers=headers,
                           json=chat_body(f"Say hello to the {word}.", max_tokens=6))
                assert r.status_code == 200, r.text
            got = wait_for(lambda: (lambda e: e if len(e) >= 2 else None)(content_events(rx)), 30,
                           "two content events at the receiver")
            assert rx.query("SELECT * FROM violations") == []
        assert len(content_events(rx)) == 2
        # Arrival order is not event order: the uplink sends its newest record
        # ahead of a backlog, so the two are told apart by operation.
        by_op = {a["gen_ai.operation.name"]: (rec, a) for rec, a in got}
        assert sorted(by_op) == ["chat", "text_completion"], sorted(by_op)
        (rec1, a1), (rec2, a2) = by_op["chat"], by_op["text_completion"]
        assert int(rec1["timeUnixNano"]) <= int(rec2["timeUnixNano"])
        assert rec1["severityNumber"] == 5 and rec1["severityText"] == "DEBUG"
        # The chat: its messages and the very answer the client got.
        assert a1["gen_ai.operation.name"] == "chat" and a1["outpost.tenant"] == "lab"
        assert a1["gen_ai.response.id"] == chat["id"]
        assert json.loads(a1["gen_ai.system_instructions"]) == [
            {"type": "text", "content": "You answer in one sentence."}]
        assert json.loads(a1["gen_ai.input.messages"]) == [
            {"role": "user", "parts": [{"type": "text",
                                        "content": "What is the capital of France? (Albatross)"}]}]
        out = json.loads(a1["gen_ai.output.messages"])
        assert out == [{"role": "assistant", "finish_reason": chat["choices"][0]["finish_reason"],
                        "parts": [{"type": "text", "content": chat["choices"][0]["message"]["content"]}]}]
        assert "Paris" in chat["choices"][0]["message"]["content"]
        assert int(a1["gen_ai.usage.output_tokens"]) == chat["usage"]["completion_tokens"]
        # The streamed completion: the text as streamed.
        assert a2["gen_ai.operation.name"] == "text_completion"
        assert json.loads(a2["gen_ai.input.messages"])[0]["parts"][0]["content"].endswith("(Cormorant) is")
        assert json.loads(a2["gen_ai.output.messages"])[0]["parts"][0]["content"] == streamed
        # Nothing of the others anywhere in what reached the centre.
        for word in ("Pelican", "Heron", "Puffin"):
            assert rx.query("SELECT COUNT(*) FROM applied WHERE body LIKE ?", f"%{word}%") == [(0,)], word
    finally:
        rx.kill()
