#!/usr/bin/env python3
"""A weights-dominated synthetic Llama 1.1B Q4_0 for speed benchmarks.

TinyLlama 1.1B's shapes (22 layers, 2048 wide, 32 query / 4 KV heads, 5632
FFN) with random weights, so its answers are noise and its speed is a 1.1B
Q4_0 model's: decode reads ~0.6 GB of weights per token, the regime where
batching sessions pays most. The tokenizer (and so the output head's width,
49,152) is copied from the default model, so prompts tokenise as they do for
it. Written as F16 with the gguf package of the pinned llama.cpp source, then
quantised by that source's llama-quantize (both from scripts/bootstrap).

  bench/synthetic_model.py [--out .deps/models/synthetic-1.1b-q4_0.gguf]

Nothing is downloaded. Takes about a minute and 2.3 GB of temporary disk.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

N_VOCAB_FROM = os.path.join(ROOT, ".deps/models/default.gguf")
SHAPE = {"n_layer": 22, "n_embd": 2048, "n_head": 32, "n_head_kv": 4, "n_ff": 5632, "n_ctx": 2048}


def log(msg):
    print(f"[synthetic-model] {msg}", file=sys.stderr, flush=True)


def import_gguf():
    """The gguf package from the pinned llama.cpp source that bootstrap unpacked."""
    try:
        import gguf  # noqa: F401  (already importable: the venv has it)
        return gguf
    except ImportError:
        pass
    roots = glob.glob(os.path.join(os.path.expanduser("~/.cache/outpost"), "**", "gguf-py"), recursive=True)
    roots += glob.glob(os.path.join(ROOT, ".deps", "**", "gguf-py"), recursive=True)
    for r in roots:
        if os.path.isdir(os.path.join(r, "gguf")):
            sys.path.insert(0, r)
            import gguf
            return gguf
    sys.exit("synthetic_model: no gguf-py found; run scripts/bootstrap first")


def copy_tokenizer(gguf, reader, writer):
    """Every tokenizer.* key of the default model, as it is there."""
    n_vocab = 0
    for name, field in reader.fields.items():
        if not name.startswith("tokenizer."):
            continue
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            sub = field.types[-1]
            if sub == gguf.GGUFValueType.STRING:
                val = [bytes(field.parts[i]).decode("utf-8", "surrogateescape") for i in field.data]
            else:
                val = [field.parts[i].tolist()[0] for i in field.data]
            writer.add_array(name, val)
            if name == "tokenizer.ggml.tokens":
                n_vocab = len(val)
        elif vtype == gguf.GGUFValueType.STRING:
            writer.add_string(name, bytes(field.parts[field.data[0]]).decode("utf-8"))
        else:
            writer.add_key_value(name, field.parts[field.data[0]].tolist()[0], vtype)
    return n_vocab


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, ".deps/models/synthetic-1.1b-q4_0.gguf"))
    ap.add_argument("--quantize", default=os.path.join(ROOT, ".deps/llama.cpp-build/bin/llama-quantize"))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if os.path.exists(args.out):
        log(f"{args.out} exists; nothing to do")
        return
    gguf = import_gguf()
    import numpy as np

    s = SHAPE
    reader = gguf.GGUFReader(N_VOCAB_FROM)
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(args.out))) as tmp:
        f16 = os.path.join(tmp, "synthetic-f16.gguf")
        w = gguf.GGUFWriter(f16, "llama")
        w.add_name("synthetic-llama-1.1b (random weights; speed only)")
        w.add_context_length(s["n_ctx"])
        w.add_embedding_length(s["n_embd"])
        w.add_block_count(s["n_layer"])
        w.add_feed_forward_length(s["n_ff"])
        w.add_head_count(s["n_head"])
        w.add_head_count_kv(s["n_head_kv"])
        w.add_rope_dimension_count(s["n_embd"] // s["n_head"])
        w.add_layer_norm_rms_eps(1e-5)
        w.add_rope_freq_base(10000.0)
        w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
        n_vocab = copy_tokenizer(gguf, reader, w)
        if n_vocab == 0:
            sys.exit(f"synthetic_model: {N_VOCAB_FROM} has no tokenizer.ggml.tokens")

        def mat(rows, cols):
            return (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(np.float16)

        e, kv = s["n_embd"], s["n_embd"] // s["n_head"] * s["n_head_kv"]
        ones = np.ones(e, dtype=np.float32)
        t0 = time.time()
        w.add_tensor("token_embd.weight", mat(n_vocab, e))
        for i in range(s["n_layer"]):
            log(f"layer {i + 1}/{s['n_layer']}")
            p = f"blk.{i}."
            w.add_tensor(p + "attn_norm.weight", ones)
            w.add_tensor(p + "attn_q.weight", mat(e, e))
            w.add_tensor(p + "attn_k.weight", mat(kv, e))
            w.add_tensor(p + "attn_v.weight", mat(kv, e))
            w.add_tensor(p + "attn_output.weight", mat(e, e))
            w.add_tensor(p + "ffn_norm.weight", ones)
            w.add_tensor(p + "ffn_gate.weight", mat(s["n_ff"], e))
            w.add_tensor(p + "ffn_up.weight", mat(s["n_ff"], e))
            w.add_tensor(p + "ffn_down.weight", mat(e, s["n_ff"]))
        w.add_tensor("output_norm.weight", ones)
        w.add_tensor("output.weight", mat(n_vocab, e))
        log(f"writing {f16} (F16, {n_vocab}-token vocabulary)")
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file(progress=False)
        w.close()
        log(f"F16 written in {time.time() - t0:.0f} s; quantising to Q4_0")
        tmp_out = os.path.join(tmp, "synthetic-q4_0.gguf")
        subprocess.run([args.quantize, f16, tmp_out, "Q4_0"], check=True, stdout=subprocess.DEVNULL)
        os.replace(tmp_out, args.out)
    log(f"{args.out}: {os.path.getsize(args.out) / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
