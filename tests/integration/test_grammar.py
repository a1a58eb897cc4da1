"""llama-server's `grammar` field (GBNF) on the real default model: the answer
follows the grammar on chat and completions, streamed or not, token references
read with the model's vocabulary; a grammar llama.cpp cannot use is a 400 that
says what is wrong and where, without the grammar landing in the server's log
(llama.cpp's parser prints it to stderr)."""
import json
import re

import httpx
from outpost_harness import chat_body, serve

CHAT = "/v1/chat/completions"
COMP = "/v1/completions"


def post(server, path, body):
    r = server.post(path, json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_a_chat_answer_follows_the_grammar(server):
    grammar = 'root ::= ("yes" | "no") "." '
    answers = set()
    for seed in range(6):
        got = post(server, CHAT, chat_body("Is the sky blue? Answer yes or no.", grammar=grammar,
                                           temperature=1.0, seed=seed, max_tokens=10))
        content = got["choices"][0]["message"]["content"]
        assert content in ("yes.", "no."), content
        assert got["choices"][0]["finish_reason"] == "stop"
        answers.add(content)
    # Unconstrained, the same question is answered in words.
    free = post(server, CHAT, chat_body("Is the sky blue? Answer yes or no.", temperature=0,
                                        max_tokens=20))
    assert free["choices"][0]["message"]["content"] not in ("yes.", "no.")


def test_a_completion_follows_the_grammar_streamed_or_not(server):
    grammar = 'root ::= [0-9]{4} "-" [0-1] [0-9] "-" [0-3] [0-9]'
    body = {"prompt": "The first moon landing was on", "grammar": grammar, "max_tokens": 20,
            "temperature": 0}
    text = post(server, COMP, body)["choices"][0]["text"]
    assert re.fullmatch(r"[0-9]{4}-[01][0-9]-[0-3][0-9]", text), text
    pieces = []
    with httpx.stream("POST", server.base + COMP, json=dict(body, stream=True), timeout=120) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                pieces.append(json.loads(line[6:])["choices"][0]["text"])
    assert "".join(pieces) == text


def test_token_references_are_read_with_the_models_vocabulary(server):
    # A token by id (from /tokenize), and any token but that one.
    [paris] = server.post("/tokenize", json={"content": " Paris"}).json()["tokens"]
    body = {"prompt": "Tell me about France.", "max_tokens": 10, "temperature": 0.9, "seed": 3}
    got = post(server, COMP, dict(body, grammar=f'root ::= "The capital is" <[{paris}]> "."'))
    assert got["choices"][0]["text"] == "The capital is Paris."
    got = post(server, COMP, dict(body, grammar=f'root ::= "The capital is" !<[{paris}]> "."'))
    text = got["choices"][0]["text"]
    assert text.startswith("The capital is") and text.endswith(".") and "Paris" not in text
    # A control token by its text: one token, not shown in the content.
    got = post(server, CHAT, chat_body("What is the capital of France?",
                                       grammar='root ::= "Paris" <|im_start|>', max_tokens=10))
    assert got["choices"][0]["message"]["content"] == "Paris"
    assert got["usage"]["completion_tokens"] == 2
    assert got["choices"][0]["finish_reason"] == "stop"


def test_a_bad_grammar_says_where_and_stays_out_of_the_log(server):
    marker = "outpost-grammar-marker-7f3a"
    cases = [
        (f'root ::= "a" | (\n# {marker}\n', "expecting ')' at line 3, column 1"),
        (f"root ::= answer # {marker}", "the rule 'answer' is used but never defined"),
        (f'root ::= <not-a-token> # {marker}', "invalid token '<not-a-token>'"),
        # Left recursion llama.cpp's own check misses: its engine would grow
        # without end on this one.
        (f'root ::= e\ne ::= x | "a"\nx ::= ws e "z" # {marker}\nws ::= " "?',
         "is left-recursive"),
        (f'root ::= "a"{{5,2}} # {marker}', "at least 5 and at most 2"),
    ]
    for grammar, words in cases:
        for path, body in ((CHAT, chat_body(grammar=grammar)),
                           (COMP, {"prompt": "x", "grammar": grammar})):
            r = server.post(path, json=body)
            assert r.status_code == 400, r.text
            err = r.json()["error"]
            assert err["param"] == "grammar"
            assert words in err["message"], err
            assert marker not in err["message"]
    assert marker not in server.log()
    assert post(server, CHAT, chat_body(max_tokens=2))["choices"]


def _name(i):
    """a, b, ..., z, aa, ab, ...: the i-th rule name."""
    out = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        out = chr(ord("a") + r) + out
    return out


def _chain(n, alternative):
    """root, then n - 1 rules `rI ::= rJ | rJ <alternative>`, then `rN ::= "a"`."""
    rules = ["root ::= r1"]
    rules += [f"r{i} ::= r{i + 1} | r{i + 1}{alternative}" for i in range(1, n)]
    return "\n".join(rules + [f'r{n} ::= "a"']) + "\n"


def test_grammars_that_would_hold_the_engine_are_stopped_and_it_serves_on(server):
    """Each of these held the engine thread for good, or killed the server,
    before: an ambiguous grammar whose ways to go on double with every "x"
    (past 120 s at 16 tokens, every other session stalled), a chain of
    `r ::= s | s "b"` rules (2^n ways before any text), groups nested 20,000
    deep (the parser's recursion overflowed the stack) and 260,000 rules each
    starting with the next (llama.cpp's left-recursion check, the same)."""
    [x] = server.post("/tokenize", json={"content": "x"}).json()["tokens"]
    ambiguous = 'root ::= e\ne ::= "x" e "y" | "x" e "z" | "w"\n'
    for stream in (False, True):
        body = {"prompt": "x", "grammar": ambiguous, "max_tokens": 40, "temperature": 0,
                "logit_bias": {str(x): 100}, "stream": stream}
        r = server.post(COMP, json=body, timeout=60)
        if not stream:
            assert r.status_code == 400, r.text
            err = r.json()["error"]
        else:
            events = [json.loads(line[6:]) for line in r.text.splitlines()
                      if line.startswith("data: ") and line != "data: [DONE]"]
            err = events[-1]["error"]
            # What was generated before reached the client.
            assert "".join(e["choices"][0]["text"] for e in events[:-1] if e.get("choices"))
        assert "became too ambiguous to follow after 8 generated tokens" in err["message"], err
        assert "more than 1024 ways at once" in err["message"], err

    nested = "root ::= " + "(" * 20000 + '"a"' + ")" * 20000
    names = [_name(i) for i in range(260001)]  # short names: 3.6 MB, within the body limit
    long_chain = f"root ::= {names[0]}\n" + "".join(
        f"{a} ::= {b}\n" for a, b in zip(names, names[1:])) + f'{names[-1]} ::= "a"\n'
    cases = [
        (_chain(16, ' "b"'), "is too ambiguous to follow"),
        (_chain(60, ' "b"'), "more than 1024 ways to go on"),
        (nested, "nests groups `( ... )` more than 1000 deep"),
        (long_chain, "a chain of 260002 rules each starting with the next"),
    ]
    # The shared server takes bodies of 64 KiB; these need the default 4 MiB.
    with serve("--parallel", "2", "--ctx-size", "1024") as big:
        for grammar, words in cases:
            r = big.post(COMP, json={"prompt": "x", "grammar": grammar, "max_tokens": 4},
                         timeout=60)
            assert r.status_code == 400, r.text[:300]
            err = r.json()["error"]
            assert err["param"] == "grammar" and words in err["message"], err
        # The same shapes, unambiguous, are followed.
        assert post(big, COMP, {"prompt": "x", "grammar": _chain(60, ""), "max_tokens": 4,
                                "temperature": 0})["choices"][0]["text"] == "a"
        got = post(big, CHAT, chat_body("What is the capital of France? Answer in one word.",
                                        max_tokens=8, temperature=0))
        assert "Paris" in got["choices"][0]["message"]["content"]
