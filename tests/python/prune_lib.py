"""Shared by test_prune.py's checks: the failure list, subprocess and file helpers, the
fixture model with its numpy reference, and the analyze run and prune arguments they use."""
import csv
import os
import subprocess

import numpy as np

import harness
from reference_model import Model

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "data", "fixture_corpus.txt")

failures = []
TYPE_ORDER = ["unclassified", "mixer", "reset", "retriever"]


def fail(msg):
    failures.append(msg)
    print("FAIL", msg)


# The commands that run the forward pass, which take the test device (harness.DEVICE).
ENGINE_COMMANDS = ("analyze", "capture", "perplexity", "prune")


def run(args, expect=0, timeout=600):
    if len(args) > 1 and args[1] in ENGINE_COMMANDS:
        args = list(args) + harness.device_flags()
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if proc.returncode != expect:
        raise SystemExit(f"exit {proc.returncode} (expected {expect}): {' '.join(args)}\n{proc.stderr[-3000:]}")
    return proc


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def corpus_lines(n, min_chars=200):
    """The first n non-empty corpus lines of at least min_chars characters."""
    with open(CORPUS) as f:
        lines = [l.strip() for l in f if len(l.strip()) >= min_chars]
    return lines[:n]


def relabel_every_type(run_dir):
    """A fixture's heads are all one type; give them every label, in uneven numbers (3
    unclassified, 2 mixers, 1 reset, 2 retrievers in 8 heads), so that the type order is
    exercised across types and within one. Rewrites heads.csv; returns its rows."""
    path = os.path.join(run_dir, "heads.csv")
    heads = read_csv(path)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(heads[0].keys()), lineterminator="\n")
        w.writeheader()
        for i, r in enumerate(heads):
            r["label"] = TYPE_ORDER[[0, 1, 0, 2, 3, 0, 1, 3][i % 8]]
            w.writerow(r)
    return heads


def write_text(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def spm_ids_lines(tokenizer, lines, tmp):
    """sentencepiece's ids of each line (no BOS), via harness.spm_ids on one-line files."""
    out = []
    for i, line in enumerate(lines):
        out.append(harness.spm_ids(tokenizer, write_text(os.path.join(tmp, f"line{i}.txt"), line)))
    return out


def write_mask(path, mask):
    if path.endswith(".npy"):
        np.save(path, mask)
    else:
        np.savetxt(path, mask, delimiter="\t", fmt="%.9g")
    return path


class Fixture:
    def __init__(self, root, name):
        self.name = name
        self.dir = os.path.join(root, name)
        self.cfg = harness.load_config(self.dir)
        self.model = Model(self.dir)
        self.L, self.H = self.model.layers, self.model.heads
        self.tokenizer = os.path.join(self.dir, "tokenizer.model")


def analyze_run(binary, fx, tmp):
    out = os.path.join(tmp, "run")
    run([binary, "analyze", "--model", fx.dir, "--data", CORPUS, "--seq-len", "96", "--num-seqs", "8",
         "--out", out, "--precision", "fp32"])
    return out


def prune_args(binary, fx, data, scores, out, *extra):
    return [binary, "prune", "--model", fx.dir, "--data", data, "--scores", scores, "--out", out,
            "--context", "48", "--max-tokens", "120"] + list(extra)
