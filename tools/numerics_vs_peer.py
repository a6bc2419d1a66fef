#!/usr/bin/env python3
"""The numerics of ringlm's activation modes, and of llama.cpp on the same GGUF, against one
float64 reference (issue #32): KL(ref || path) per position, cosine and argmax agreement.

    tools/numerics_vs_peer.py --hf /work/models/e2b-hf --model /work/models/e2b.gguf \\
        [--modes int8x2,int8,f32] [--positions 200] [--seed 1] [--ringlm build/ringlm] \\
        [--llama-perplexity /work/peers/llama.cpp/build/bin/llama-perplexity [--llama-args "-fa off -ctk f32"]] \\
        [--json out.json]

The float64 side is tools/q4_argmax_check.py's: tests/model/reference_forward.py over --hf
with every linear layer and the LM head seen through q4_0 (and, when --model is a .gguf, the
two embedding tables too, as a ringlm-written GGUF stores them in q4_0). So every path is
measured against exactly the weights it reads, and what it adds on top is its own: activation
rounding, the f16 KV cache, float32 sums.

Positions: without a peer, BOS and positions-1 random ids; the first half goes through chunked
prefill and the rest through single-token decode, and all are scored. With a llama.cpp build,
llama-perplexity (no code of it compiled here) tokenizes a seeded random-word text with
--kl-divergence-base, which writes its own log-probabilities (16-bit, step <= 16/65535 nat)
for the second half of one window of 2*positions+2 tokens. Those tokens are read back from
the file and fed to the reference and to ringlm (BOS first, as llama-perplexity does), and
only the positions llama.cpp scores are compared: half of them ringlm prefills, half it
decodes. llama.cpp evaluates all of them as one prefill batch.

Cosine is of the centred logits (each row minus its mean), because llama-perplexity keeps
log-probabilities, which are logits up to a per-row constant; for ringlm the plain cosine is
printed too. Minutes on a full-size E2B (the float64 forward); seconds on the test models.

--reference gguf (a .gguf --model; --hf not needed): the float64 side runs over the file's own
weights, every tensor decoded from its blocks by the numpy restatement of ggml's layouts
(tools/gguf_reference.py), for files ringlm did not write (llama-quantize's K-quant and IQ
presets), where the q4_0 restatement of the checkpoint is not what the file holds.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "model"))
import gguf_reference  # noqa: E402
import logits_cli  # noqa: E402
import q4_argmax_check  # noqa: E402
import reference_forward as ref  # noqa: E402

BOS = 2
MODES = ("int8x2", "int8", "f32")


def log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def compare(label, got, want, logprobs=False):
    """Per-row statistics of `got` (logits, or log-probabilities) against float64 `want` logits."""
    lp_ref, lp_got = log_softmax(want), log_softmax(got)
    kl = (np.exp(lp_ref) * (lp_ref - lp_got)).sum(axis=-1)
    centred = lambda a: a - a.mean(axis=-1, keepdims=True)  # noqa: E731
    cos_c, agree = logits_cli.cosine_and_argmax(centred(got), centred(want))
    row = {"path": label, "positions": int(len(want)), "argmax": float(agree.mean()),
           "cosine_centred_min": float(cos_c.min()), "cosine_centred_mean": float(cos_c.mean()),
           "kl_mean": float(kl.mean()), "kl_max": float(kl.max())}
    if not logprobs:
        cos, _ = logits_cli.cosine_and_argmax(got, want)
        row["cosine_min"], row["cosine_mean"] = float(cos.min()), float(cos.mean())
    return row


def random_words(path, n_words, seed):
    """A text of seeded random lowercase words (llama-perplexity wants text, not ids)."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("etaoinshrdlucmfwypvbgkjqxz"))
    words = ["".join(rng.choice(letters, size=int(rng.integers(2, 9)))) for _ in range(n_words)]
    with open(path, "w") as f:
        f.write(" ".join(words) + "\n")


def read_kl_base(path):
    """llama-perplexity's --kl-divergence-base file: (n_ctx, tokens, log-probs [rows, vocab] of chunk 1)."""
    data = open(path, "rb").read()
    if data[:8] != b"_logits_":
        raise SystemExit(f"{path}: offset 0: no '_logits_' magic; not a llama-perplexity logits file")
    n_ctx, n_vocab, n_chunk = struct.unpack_from("<iii", data, 8)
    off = 20
    tokens = np.frombuffer(data, "<i4", n_chunk * n_ctx, off)
    off += 4 * n_chunk * n_ctx
    nv = 2 * ((n_vocab + 1) // 2) + 4
    rows = n_ctx - 1 - n_ctx // 2
    need = off + 2 * nv * rows
    if len(data) < need:
        raise SystemExit(f"{path}: {len(data)} bytes, the first chunk's {rows} rows of {n_vocab} log-probs need {need}")
    block = np.frombuffer(data, "<u2", nv * rows, off).reshape(rows, nv)
    head = block[:, :4].copy().view("<f4")  # scale, smallest log-prob
    q = block[:, 4:4 + n_vocab].astype(np.float64)
    return n_ctx, tokens[:n_ctx].copy(), head[:, 1:2].astype(np.float64) + head[:, 0:1].astype(np.float64) * q


def llama_log_probs(perplexity, gguf, positions, seed, threads, extra, tmp):
    """Runs llama-perplexity; returns (ids with BOS first, first scored position, log-probs)."""
    n_ctx = 2 * positions + 2
    text, base = os.path.join(tmp, "words.txt"), os.path.join(tmp, "kl_base.bin")
    random_words(text, 4 * n_ctx, seed)
    cmd = [perplexity, "-m", gguf, "-f", text, "-c", str(n_ctx), "-b", str(n_ctx), "--chunks", "1",
           "-t", str(threads), "--kl-divergence-base", base, *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(base):
        raise SystemExit(f"llama-perplexity failed ({' '.join(cmd)}):\n{r.stderr[-2000:]}")
    got_ctx, tokens, lp = read_kl_base(base)
    if got_ctx != n_ctx or len(lp) != positions:
        raise SystemExit(f"{base}: n_ctx {got_ctx}, {len(lp)} scored rows; expected {n_ctx} and {positions}")
    ids = [BOS] + [int(t) for t in tokens[1:n_ctx - 1]]  # the last token is never an input
    return ids, n_ctx // 2, lp


def measure(hf, model, modes=MODES, positions=200, seed=1, ringlm=None, perplexity=None, llama_args=(),
            threads=2, q4_embeddings=None, ringlm_args=(), reference="q4_0"):
    """Rows of statistics, one per path, over the same scored positions."""
    ringlm = ringlm or os.environ.get("RINGLM", os.path.join(HERE, "..", "build", "ringlm"))
    types = None
    if reference == "gguf":
        c, W, types = gguf_reference.checkpoint(ringlm, model)
        q4_embeddings = False
    else:
        if q4_embeddings is None:
            q4_embeddings = model.endswith(".gguf")
        c, W = q4_argmax_check.quantized_checkpoint(hf, q4_embeddings=q4_embeddings)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if perplexity:
            ids, first, llama_lp = llama_log_probs(perplexity, model, positions, seed, threads, llama_args, tmp)
        else:
            rng = np.random.default_rng(seed)
            ids, first, llama_lp = [BOS] + [int(i) for i in rng.integers(0, c["vocab_size"], size=positions - 1)], 0, None
        scored = slice(first, first + positions)
        decode_from = first + positions // 2
        want = ref.forward((c, W), ids)[scored]
        for mode in modes:
            got = logits_cli.run_logits(ringlm, tmp, model, ids, decode_from, "--threads", str(threads),
                                        "--activations", mode, *ringlm_args)
            rows.append(compare(f"ringlm --activations {mode}", got[scored], want))
        if llama_lp is not None:
            label = f"llama.cpp ({os.path.basename(perplexity)} {' '.join(llama_args)})".replace(" )", ")")
            rows.append(compare(label, llama_lp, want[:len(llama_lp)], logprobs=True))
    meta = {"model": model, "hf": hf, "positions": positions, "first_scored": first, "decode_from": decode_from,
            "seed": seed, "q4_embeddings": bool(q4_embeddings), "vocab": int(want.shape[1]), "reference": reference,
            "tensor_types": types}
    return meta, rows


def print_table(meta, rows):
    if meta.get("reference") == "gguf":
        what = f"float64 over the file's own dequantized weights (tensor types {meta['tensor_types']})"
    else:
        what = f"float64 over the q4_0 weights (embeddings {'q4_0' if meta['q4_embeddings'] else 'stored'})"
    print(f"{meta['model']}: {what}, "
          f"{meta['positions']} scored positions from {meta['first_scored']}, ringlm decodes from {meta['decode_from']}")
    print("| path | argmax | cosine min (centred) | cosine min | KL(ref ‖ path) mean | KL max |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        cos = f"{r['cosine_min']:.6f}" if "cosine_min" in r else "—"
        print(f"| {r['path']} | {r['argmax']:.3f} | {r['cosine_centred_min']:.6f} | {cos} | "
              f"{r['kl_mean']:.3g} | {r['kl_max']:.3g} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hf", help="Hugging Face checkpoint directory the weights came from (float side; not with --reference gguf)")
    ap.add_argument("--reference", choices=("q4_0", "gguf"), default="q4_0",
                    help="float64 over the checkpoint seen through q4_0 (default), or over the .gguf's own blocks")
    ap.add_argument("--model", required=True, help="what ringlm (and llama.cpp) loads: a .gguf, packed or HF directory")
    ap.add_argument("--modes", default=",".join(MODES), help="ringlm --activations values, comma-separated")
    ap.add_argument("--positions", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ringlm", help="the ringlm binary (default: $RINGLM, else build/ringlm)")
    ap.add_argument("--llama-perplexity", help="a built llama-perplexity (llama.cpp or ik_llama.cpp); --model must be a .gguf")
    ap.add_argument("--llama-args", default="", help="extra llama-perplexity flags, one string, e.g. '-fa off -ctk f32'")
    ap.add_argument("--embeddings", choices=("auto", "q4_0", "stored"), default="auto",
                    help="reference embedding rows: q4_0 (a .gguf, the default there) or stored")
    ap.add_argument("--ringlm-args", default="", help="extra ringlm logits flags, one string, e.g. '--weights stored'")
    ap.add_argument("--json", help="also write the rows here")
    a = ap.parse_args()
    if a.positions < 2:
        ap.error("--positions must be at least 2")
    if a.llama_perplexity and not a.model.endswith(".gguf"):
        ap.error("--llama-perplexity needs --model to be the .gguf file llama.cpp loads")
    if a.reference == "gguf" and not a.model.endswith(".gguf"):
        ap.error("--reference gguf needs --model to be a .gguf file")
    if a.reference == "q4_0" and not a.hf:
        ap.error("--hf is required unless --reference gguf")
    modes = [m for m in a.modes.split(",") if m]
    bad = [m for m in modes if m not in MODES]
    if bad:
        ap.error(f"--modes: {bad} not in {MODES}")
    q4e = None if a.embeddings == "auto" else a.embeddings == "q4_0"
    meta, rows = measure(a.hf, a.model, modes, a.positions, a.seed, a.ringlm, a.llama_perplexity,
                         a.llama_args.split(), a.threads, q4e, a.ringlm_args.split(), reference=a.reference)
    print_table(meta, rows)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
