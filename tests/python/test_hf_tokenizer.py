#!/usr/bin/python3
"""Hugging Face tokenizer.json checkpoints end to end (tools/make_bpe_tokenizer.py writes
the tokenizers: LLaMA-3 style with BOS, Qwen2 and GPT-2 style without).

  test_hf_tokenizer.py --bin PATH/attngeom --check reference --flavour llama3|qwen2|gpt2|bloom --reference DIR [--node NODE]
  test_hf_tokenizer.py --bin PATH/attngeom --check capture

reference  `attngeom tokenize` against transformers.js (DIR holds encode.mjs and its
           node_modules) on tests/data/tokenizer_corpus.jsonl, every document with and
           without special tokens: every id must be equal. For gpt2 also the same tokenizer
           as GPT-2's older vocab.json + merges.txt, against the same reference.
capture    `attngeom capture` and `analyze` on tiny random LLaMA checkpoints that carry a
           tokenizer.json instead of a tokenizer.model: with the LLaMA-3 tokenizer position 0
           is <|begin_of_text|>, with the Qwen2 one it is the text's first token, and the
           dump metadata and run.json say which.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tools"))
import st_reader  # noqa: E402
from make_bpe_tokenizer import write as write_tokenizer  # noqa: E402
from checkpoint_files import write_safetensors  # noqa: E402
from hf_layouts import hf_config  # noqa: E402
from make_random_checkpoint import random_tensors  # noqa: E402

CORPUS = os.path.join(REPO, "tests", "data", "tokenizer_corpus.jsonl")
PROMPT = os.path.join(REPO, "tests", "data", "fixture_prompt.txt")


def make_model(out_dir, flavour, weights=False, vocab_merges=False):
    """config.json (LLaMA shapes, tiny), the flavour's tokenizer, random weights if asked."""
    vocab = write_tokenizer(out_dir, flavour, vocab_merges=vocab_merges)
    cfg = hf_config("llama", hidden=64, intermediate=128, layers=2, heads=4, kv_heads=2, head_dim=16,
                    vocab=vocab, dtype="F32", max_positions=512)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    if weights:
        write_safetensors(os.path.join(out_dir, "model.safetensors"), random_tensors(cfg, "F32", seed=7))
    if vocab_merges:
        return cfg, None
    with open(os.path.join(out_dir, "tokenizer.json"), encoding="utf-8") as f:
        added = {t["content"]: t["id"] for t in json.load(f)["added_tokens"]}
    return cfg, added


def attngeom_ids(binary, model, *flags):
    out = subprocess.run([binary, "tokenize", "--model", model, "--data", CORPUS, "--format", "jsonl", *flags],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"attngeom tokenize failed: {out.stderr.strip()}")
    return [[int(t) for t in line.split()] for line in out.stdout.split("\n")[:-1]]


def check_reference(args, tmp):
    model = os.path.join(tmp, args.flavour)
    make_model(model, args.flavour)
    ref = subprocess.run([args.node, os.path.join(args.reference, "encode.mjs"), model, CORPUS],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=args.reference)
    if ref.returncode != 0:
        raise SystemExit(f"transformers.js failed: {ref.stderr.strip()}")
    reference = [json.loads(line) for line in ref.stdout.split("\n") if line]
    with open(CORPUS, encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f if line.strip()]
    failures = []
    models = [("tokenizer.json", model)]
    if args.flavour == "gpt2":
        models.append(("vocab.json + merges.txt", os.path.join(tmp, "gpt2-vocab-merges")))
        make_model(models[-1][1], "gpt2", vocab_merges=True)
    for (form, path), (mode, flags) in ((m, f) for m in models for f in (("with", []), ("without", ["--no-bos"]))):
        ours = attngeom_ids(args.bin, path, *flags)
        if len(ours) != len(texts) or len(reference) != len(texts):
            failures.append(f"{form}, {mode} special tokens: {len(ours)} lines from attngeom, {len(reference)} from "
                            f"transformers.js, {len(texts)} documents")
            continue
        for i, (text, a, r) in enumerate(zip(texts, ours, reference)):
            if a != r[mode]:
                failures.append(f"{form}, line {i + 1} {mode} special tokens: {text!r}\n  attngeom        {a}\n"
                                f"  transformers.js {r[mode]}")
    total = sum(len(r["with"]) for r in reference)
    print(f"{args.flavour} ({', '.join(form for form, _ in models)}): {len(texts)} documents, {total} ids with "
          f"special tokens; {len(failures)} mismatch(es)")
    return failures


def check_capture(args, tmp):
    failures = []
    for flavour, position0 in (("llama3", "bos"), ("qwen2", "text")):
        model = os.path.join(tmp, flavour)
        _, added = make_model(model, flavour, weights=True)
        dump = os.path.join(tmp, flavour + ".safetensors")
        proc = subprocess.run([args.bin, "capture", "--model", model, "--text", PROMPT, "--out", dump, "--threads", "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            failures.append(f"{flavour}: capture failed: {proc.stderr.strip()}")
            continue
        tensors, meta, _ = st_reader.read(dump)
        tokens = [int(t) for t in tensors["tokens"]]
        with open(PROMPT, encoding="utf-8") as f:
            prompt = f.read()
        tok = subprocess.run([args.bin, "tokenize", "--model", model, "--data", PROMPT, "--format", "text", "--no-bos"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True)
        text_ids = [int(t) for t in tok.stdout.split()]
        expected = ([added["<|begin_of_text|>"]] if position0 == "bos" else []) + text_ids
        if tokens != expected:
            failures.append(f"{flavour}: dump tokens {tokens[:8]}..., expected {expected[:8]}... ({prompt[:40]!r})")
        settings = json.loads(meta["settings"])
        if settings.get("position0") != position0 or settings.get("bos") != (position0 == "bos"):
            failures.append(f"{flavour}: dump settings say position0 {settings.get('position0')!r}, bos "
                            f"{settings.get('bos')!r}; expected {position0!r}")
        run = os.path.join(tmp, flavour + "-run")
        proc = subprocess.run([args.bin, "analyze", "--model", model, "--data", CORPUS, "--format", "jsonl", "--pack",
                               "--seq-len", "64", "--num-seqs", "2", "--threads", "1", "--out", run],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            failures.append(f"{flavour}: analyze failed: {proc.stderr.strip()}")
            continue
        with open(os.path.join(run, "run.json")) as f:
            tokenizer = json.load(f)["tokenizer"]
        bos_id = added["<|begin_of_text|>"] if position0 == "bos" else None
        wanted = {"file": "tokenizer.json", "position0": position0, "bos": position0 == "bos", "bos_token_id": bos_id}
        for key, value in wanted.items():
            if tokenizer.get(key) != value:
                failures.append(f"{flavour}: run.json tokenizer/{key} = {tokenizer.get(key)!r}, expected {value!r}")
        print(f"{flavour}: capture of {len(tokens)} tokens (position 0 = {tokens[0]}, {position0}); "
              f"analyze run.json tokenizer {tokenizer}")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--check", choices=["reference", "capture"], required=True)
    ap.add_argument("--flavour", choices=["llama3", "qwen2", "gpt2", "bloom"])
    ap.add_argument("--reference", help="folder with encode.mjs and transformers.js installed")
    ap.add_argument("--node", default="node")
    args = ap.parse_args()
    if args.check == "reference" and not (args.flavour and args.reference):
        ap.error("--check reference needs --flavour and --reference")
    with tempfile.TemporaryDirectory(prefix="attngeom-hf-tok-") as tmp:
        failures = check_reference(args, tmp) if args.check == "reference" else check_capture(args, tmp)
    for f in failures:
        print("FAIL", f)
    print("OK" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
