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
    ids = {key: gguf_edit.token_id(MODEL, text) for key, text in (
        ("tokenizer.ggml.fim_pre_token_id", "<issue_start>"),
        ("tokenizer.ggml.fim_suf_token_id", "<issue_comment>"),
        ("tokenizer.ggml.fim_mid_token_id", "<issue_closed>"))}
    gguf_edit.copy_with_uint32(MODEL, path, ids)
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
    # Without the suffix it is another prompt (llama-server's own
    # /v1/completions ignores a suffix: it would prompt this).
    plain = complete(fim, prompt=prefix, max_tokens=1)
    if prefix == LONG_FILE:
        assert plain["usage"]["prompt_tokens"] > 1536 + 300
        n_suffix = fim.post("/tokenize", json={"content": SUFFIX, "add_special": False}).json()
        # What every FIM prompt carries (the markers, and the repository and
        # file headers this vocabulary has tokens for): one with a one-token
        # prefix and no suffix, less that token.
        fixed = complete(fim, prompt="x", suffix="", max_tokens=1)["usage"]["prompt_tokens"] - 1
        assert ours["usage"]["prompt_tokens"] == fixed + 1536 + n_suffix["count"]
    elif suffix:
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
    assert "no fill-in-the-middle tokens" in err["message"], err
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
