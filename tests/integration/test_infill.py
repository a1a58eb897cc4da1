"""Fill in the middle: `/v1/completions` with OpenAI's `suffix`, on a model
whose GGUF names fill-in-the-middle tokens, is prompted in llama-server's
/infill layout ([FIM_PRE] prefix [FIM_SUF] suffix [FIM_MID]), so both
servers, from the same pinned source, see the same prompt tokens and answer
alike. A model without such tokens refuses a suffix by name (it used to be
ignored: the answer then continued the prompt as if nothing came after it).

No code model is available offline here, so the FIM model is the default
model with three of its unused control tokens named as the FIM markers in a
copy of its GGUF: what it writes in the gap is not code a coder would, but
the prompt's layout, its bounds and the answer's path are exactly those a
Qwen2.5-Coder or StarCoder 2 GGUF gets."""
import gguf_edit
import httpx
import pytest
from outpost_harness import MODEL, llama_server, serve, stream_events

PREFIX = "def add(a, b):\n    c = "
SUFFIX = "\n    return c\n"


@pytest.fixture(scope="module")
def fim_model(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("fim") / "smollm2-fim.gguf")
    gguf_edit.copy_with_fim_markers(MODEL, path)
    return path


@pytest.fixture(scope="module")
def fim(fim_model):
    with serve("--parallel", "2", "--ctx-size", "4096", models=[fim_model]) as s:
        yield s


@pytest.fixture(scope="module")
def peer(fim_model):
    """llama-server on the same file: its /infill is the reference layout."""
    with llama_server("--ctx-size", "4096", "--parallel", "1", "--threads", "2",
                      model=fim_model) as base:
        yield base


def complete(server, **body):
    r = server.post("/v1/completions", json={"max_tokens": 24, "temperature": 0,
                                             "cache_prompt": False, **body})
    assert r.status_code == 200, r.text
    return r.json()


def infill(peer, prefix, suffix):
    r = httpx.post(peer + "/infill", timeout=120, json={
        "input_prefix": prefix, "input_suffix": suffix, "n_predict": 24, "temperature": 0,
        "cache_prompt": False})
    assert r.status_code == 200, r.text
    return r.json()


LONG_FILE = "".join(f"x{i} = {i} * {i}\n" for i in range(150))  # 1,920 tokens


@pytest.mark.parametrize("prefix,suffix", [
    (PREFIX, SUFFIX),
    ("", "}\n"),  # the cursor at the start of a file
    ("int main() {\n    return ", ""),  # at its end
    # A long file: both keep the prefix's last 1,536 tokens (3/4 of the
    # window) — the beginning is cut, the lines nearest the gap kept.
    (LONG_FILE, SUFFIX),
], ids=["middle", "file-start", "file-end", "long-file"])
def test_the_gap_is_prompted_as_llama_servers_infill(fim, peer, prefix, suffix):
    ours = complete(fim, prompt=prefix, suffix=suffix)
    theirs = infill(peer, prefix, suffix)
    assert ours["usage"]["prompt_tokens"] == theirs["tokens_evaluated"], (ours, theirs)
    assert ours["choices"][0]["text"] == theirs["content"], (ours, theirs)
    if not prefix:
        return
    if prefix == LONG_FILE:
        # The file is longer than what is kept of it (counted, not prompted:
        # its prefill is this file's longest step).
        n_file = fim.post("/tokenize", json={"content": LONG_FILE, "add_special": False}).json()
        assert n_file["count"] > 1536 + 300
        n_suffix = fim.post("/tokenize", json={"content": SUFFIX, "add_special": False}).json()
        # What every FIM prompt carries (the markers, and the repository and
        # file headers this vocabulary has tokens for): one with a one-token
        # prefix and no suffix, less that token.
        fixed = complete(fim, prompt="x", suffix="", max_tokens=1)["usage"]["prompt_tokens"] - 1
        assert ours["usage"]["prompt_tokens"] == fixed + 1536 + n_suffix["count"]
    elif suffix:
        # Without the suffix it is another prompt (llama-server's own
        # /v1/completions ignores a suffix: it would prompt this).
        plain = complete(fim, prompt=prefix, max_tokens=1)
        assert plain["usage"]["prompt_tokens"] < ours["usage"]["prompt_tokens"]


def test_a_stream_and_the_openai_client_give_the_same_middle(fim):
    whole = complete(fim, prompt=PREFIX, suffix=SUFFIX)["choices"][0]["text"]
    events, done = stream_events(fim, "/v1/completions", {
        "prompt": PREFIX, "suffix": SUFFIX, "max_tokens": 24, "temperature": 0,
        "cache_prompt": False, "stream": True})
    assert done
    assert "".join(c["text"] for e in events for c in e["choices"]) == whole
    import openai
    client = openai.OpenAI(base_url=fim.base + "/v1", api_key="unused", max_retries=0)
    got = client.completions.create(model=client.models.list().data[0].id, prompt=PREFIX,
                                    suffix=SUFFIX, max_tokens=24, temperature=0,
                                    extra_body={"cache_prompt": False})
    assert got.choices[0].text == whole


def test_several_prompts_share_the_suffix(fim):
    one = complete(fim, prompt=PREFIX, suffix=SUFFIX)
    other = complete(fim, prompt="def mul(a, b):\n    c = ", suffix=SUFFIX)
    both = complete(fim, prompt=[PREFIX, "def mul(a, b):\n    c = "], suffix=SUFFIX)
    texts = [c["text"] for c in sorted(both["choices"], key=lambda c: c["index"])]
    assert texts == [one["choices"][0]["text"], other["choices"][0]["text"]]
    assert both["usage"]["prompt_tokens"] == (one["usage"]["prompt_tokens"]
                                              + other["usage"]["prompt_tokens"])


def test_a_model_without_fim_tokens_refuses_a_suffix(server):
    r = server.post("/v1/completions", json={"prompt": PREFIX, "suffix": SUFFIX, "max_tokens": 8})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == "suffix" and err["type"] == "invalid_request_error"
    assert "cannot fill in the middle" in err["message"], err
    # An empty suffix: nothing follows the gap, so a plain completion is
    # the same request.
    plain = complete(server, prompt=PREFIX)
    empty = complete(server, prompt=PREFIX, suffix="")
    assert empty["choices"][0]["text"] == plain["choices"][0]["text"]
    assert empty["usage"] == plain["usage"]


@pytest.mark.parametrize("body,param,says", [
    ({"prompt": PREFIX, "suffix": 5}, "suffix", "must be a string"),
    ({"prompt": [1, 2, 3], "suffix": SUFFIX}, "suffix", "needs the prompt as text"),
    ({"prompt": ["a", [1, 2]], "suffix": SUFFIX}, "suffix", "needs the prompt as text"),
    ({"prompt": PREFIX, "suffix": SUFFIX, "echo": True}, "echo", "cannot be combined"),
    ({"prompt": "", "suffix": ""}, "prompt", "must not be empty"),
])
def test_bad_suffix_requests_are_refused_by_name(fim, body, param, says):
    r = fim.post("/v1/completions", json={"max_tokens": 4, **body})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == param and says in err["message"], err
    # And the server serves on.
    assert complete(fim, prompt=PREFIX, suffix=SUFFIX, max_tokens=2)["choices"][0]["text"] is not None


# llama-server's own /infill, as code editors call it (llama.vscode,
# llama.vim): its fields, its native answer.
EDITOR_BODY = {
    "input_prefix": "import math\n\ndef area(r):\n",
    "prompt": "    return ",
    "input_suffix": "\n\nprint(area(2))\n",
    "input_extra": [{"filename": "shapes.py", "text": "def square(a):\n    return a * a\n"},
                    {"text": "PI = 3.14159\n"}],
    "n_predict": 24, "temperature": 0, "cache_prompt": False,
}


def test_infill_answers_as_llama_server_does(fim, peer):
    ours = fim.post("/infill", json=EDITOR_BODY)
    theirs = httpx.post(peer + "/infill", json=EDITOR_BODY, timeout=120)
    assert ours.status_code == 200 and theirs.status_code == 200, (ours.text, theirs.text)
    ours, theirs = ours.json(), theirs.json()
    # The other files, the cursor's text and the gap: the same prompt.
    assert ours["tokens_evaluated"] == theirs["tokens_evaluated"], (ours, theirs)
    assert ours["content"] == theirs["content"], (ours, theirs)
    assert ours["stop"] is True and ours["stop_type"] in ("eos", "limit")
    assert ours["stop_type"] == theirs["stop_type"] or theirs["stop_type"] == "word"
    assert set(theirs) - set(ours) <= {"generation_settings", "prompt", "id_slot"} | set(ours)
    for key in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "predicted_per_second"):
        assert key in ours["timings"], ours["timings"]
    assert ours["timings"]["prompt_n"] == ours["tokens_evaluated"]  # nothing cached
    # The same gap through /v1/completions: the files and the cursor's text
    # are /infill's own, so that prompt is shorter, but llama-server's layout
    # of what both carry is the same (test above).
    assert fim.get("/infill").status_code == 405


def test_infill_streams_its_content_then_the_whole_answer(fim):
    whole = fim.post("/infill", json=EDITOR_BODY).json()
    with httpx.stream("POST", fim.base + "/infill", json={**EDITOR_BODY, "stream": True},
                      timeout=120) as r:
        assert r.status_code == 200
        lines = [l[len("data: "):] for l in r.iter_lines() if l.startswith("data: ")]
    import json
    events = [json.loads(l) for l in lines]
    assert "[DONE]" not in lines  # llama-server's native stream has none
    assert all(e["stop"] is False for e in events[:-1]) and events[-1]["stop"] is True
    assert "".join(e["content"] for e in events) == whole["content"]
    assert events[-1]["tokens_predicted"] == whole["tokens_predicted"]


def test_infill_response_fields_pick_paths(fim):
    r = fim.post("/infill", json={**EDITOR_BODY, "response_fields": [
        "content", "timings/prompt_n", "tokens_cached", "no/such"]})
    assert r.status_code == 200, r.text
    got = r.json()
    assert set(got) == {"content", "timings/prompt_n", "tokens_cached"}, got


@pytest.mark.parametrize("body,param", [
    ({"input_suffix": ""}, "input_prefix"),
    ({"input_prefix": "", "input_suffix": 3}, "input_suffix"),
    ({"input_prefix": "", "input_suffix": "", "input_extra": [{"filename": "a"}]},
     "input_extra[0].text"),
    ({"input_prefix": "", "input_suffix": "", "input_extra": [{"text": "", "filename": 1}]},
     "input_extra[0].filename"),
    ({"input_prefix": "", "input_suffix": "", "n_predict": 0}, "n_predict"),
    ({"input_prefix": "", "input_suffix": "", "repeat_penalty": -1}, "repeat_penalty"),
    # Past the session context: the limit named where the text came from.
    ({"input_prefix": "x", "input_suffix": "", "n_predict": 5000}, "n_predict"),
])
def test_bad_infill_bodies_are_refused_by_name(fim, body, param):
    r = fim.post("/infill", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == param, r.text
    assert fim.post("/infill", json={**EDITOR_BODY, "n_predict": 2}).status_code == 200


def test_infill_on_a_model_without_fim_tokens_is_refused(server):
    r = server.post("/infill", json={"input_prefix": "a", "input_suffix": "b"})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == "input_suffix" and "cannot fill in the middle" in err["message"], err


def test_t_max_predict_ms_ends_the_answer_once_a_line_is_complete(fim):
    # An editor's time limit: past it, once a line is complete, the answer
    # ends where it is (llama-server's rule). ignore_eos keeps the model
    # writing, so only the limit or n_predict can end it.
    body = {**EDITOR_BODY, "n_predict": 400, "ignore_eos": True, "temperature": 1.0,
            "seed": 7, "t_max_predict_ms": 1}
    got = fim.post("/infill", json=body).json()
    assert got["stop_type"] == "limit" and "\n" in got["content"], got
    assert got["tokens_predicted"] < 400, got
    # The limit cuts at the first piece past it that completes a line, or
    # later: the content does not run on after a line once it has passed.
    assert got["content"].count("\n") <= 2, got["content"]
    # Without the limit the same request runs to n_predict.
    full = fim.post("/infill", json={**body, "t_max_predict_ms": 0}).json()
    assert full["tokens_predicted"] == 400 and full["stop_type"] == "limit", full
    # Streamed, the chunks add up to the content and end with the answer.
    with httpx.stream("POST", fim.base + "/infill", json={**body, "stream": True},
                      timeout=120) as r:
        import json
        events = [json.loads(l[6:]) for l in r.iter_lines() if l.startswith("data: ")]
    assert events[-1]["stop"] is True and events[-1]["stop_type"] == "limit"
    assert "".join(e["content"] for e in events) == got["content"]


def test_n_indent_ends_the_answer_at_a_line_left_of_the_cursor(fim, peer):
    # An editor sends the cursor line's indentation: a suggestion inside a
    # method ends where a line would start further left (here the model's
    # second line, "The …", at indentation 0), cut as llama-server cuts it.
    body = {"input_prefix": "class Point:\n    def __init__(self, x, y):\n", "prompt": "        ",
            "input_suffix": "\n", "n_predict": 24, "temperature": 0, "cache_prompt": False,
            "n_indent": 4}
    ours = fim.post("/infill", json=body).json()
    theirs = httpx.post(peer + "/infill", json=body, timeout=120).json()
    assert ours["content"] == theirs["content"] == "assistant\n", (ours, theirs)
    assert ours["stop_type"] == theirs["stop_type"] == "limit", (ours, theirs)
    assert ours["tokens_predicted"] < 24, ours
    # Without it the answer runs on past that line.
    free = fim.post("/infill", json={**body, "n_indent": 0}).json()
    assert free["content"].startswith("assistant\nThe"), free
    assert free["tokens_predicted"] == 24, free
    # Streamed, the dropped line's first text is never sent (llama-server
    # sends the piece that ends it before cutting).
    with httpx.stream("POST", fim.base + "/infill", json={**body, "stream": True},
                      timeout=120) as r:
        import json
        events = [json.loads(l[6:]) for l in r.iter_lines() if l.startswith("data: ")]
    assert "".join(e["content"] for e in events) == "assistant\n", events
    assert events[-1]["stop"] is True and events[-1]["stop_type"] == "limit", events[-1]
    # A bad value is refused by name.
    bad = fim.post("/infill", json={**body, "n_indent": -2})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "n_indent", bad.text
