#!/usr/bin/env python3
"""The planted model (models/planted): head types known by construction.

  test_planted.py --bin PATH/attngeom [--types CSV]

- regenerate: tools/make_planted_model.py writes a copy byte-identical to the committed
  files, so the committed weights are the model card's formulas;
- taxonomy: `attngeom analyze` (default taxonomy thresholds, last query row) on English
  text the model card does not tune on labels every head with its planted type (the
  issue asks for >= 90% of the typed heads and no typed control; this demands all);
- masses: the independent numpy reference forward puts each head's attention on BOS and
  on the last token, in every sequence, inside the ranges of planted_types.csv.
--types replaces the expected types (a copy with one type changed must fail).
"""
import argparse
import csv
import filecmp
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_forward  # noqa: E402
from reference_model import Model  # noqa: E402
from harness import REPO  # noqa: E402

PLANTED = os.path.join(REPO, "models", "planted")
GENERATOR = os.path.join(REPO, "tools", "make_planted_model.py")
TEXT = os.path.join(REPO, "tests", "data", "fixture_corpus.txt")
GENERATED = ["config.json", "model.safetensors", "tokenizer.model", "planted_types.csv"]
SEQ_LEN, NUM_SEQS = 256, 8
MASS_LENGTHS = [64, SEQ_LEN, 1024]  # the reference checks each length on real text


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def check_regenerated(tmp, failures):
    out = os.path.join(tmp, "regenerated")
    subprocess.run([sys.executable, "-B", GENERATOR, "--tokenizer", os.path.join(PLANTED, "tokenizer.model"),
                    "--out", out], check=True, capture_output=True)
    for name in GENERATED:
        same = filecmp.cmp(os.path.join(out, name), os.path.join(PLANTED, name), shallow=False)
        print(f"regenerated {name}: {'identical' if same else 'DIFFERS'}")
        if not same:
            failures.append(f"{name}: the generator does not reproduce the committed file")


def check_taxonomy(binary, tmp, expected, failures, flags=()):
    run = os.path.join(tmp, "run")
    subprocess.run([binary, "analyze", "--model", PLANTED, "--data", TEXT, "--pack", "--pack-separator", "none",
                    "--seq-len", str(SEQ_LEN), "--num-seqs", str(NUM_SEQS),
                    "--out", run] + list(flags), check=True, capture_output=True)
    labels = {(int(r["layer"]), int(r["head"])): r["label"] for r in read_csv(os.path.join(run, "heads.csv"))}
    by_type = {}
    for e in expected:
        key = (int(e["layer"]), int(e["head"]))
        got = labels.get(key)
        hit = by_type.setdefault(e["type"], [0, 0])
        hit[0] += got == e["type"]
        hit[1] += 1
        if got != e["type"]:
            failures.append(f"head {key}: planted {e['type']}, analyze says {got}")
    typed = [t for t in by_type if t != "unclassified"]
    recovered = sum(by_type[t][0] for t in typed) / max(1, sum(by_type[t][1] for t in typed))
    print("analyze labels: " + ", ".join(f"{t} {h}/{n}" for t, (h, n) in sorted(by_type.items()))
          + f"; typed heads recovered {recovered:.0%}")


def token_stream(tokenizer):
    """The text's ids, line by line (sentencepiece's own encoder), joined without separators."""
    with open(TEXT, "rb") as f:
        out = subprocess.run(["spm_encode", f"--model={tokenizer}", "--output_format=id"],
                             stdin=f, check=True, stdout=subprocess.PIPE).stdout
    return [int(t) for t in out.split()]


def check_masses(expected, failures):
    model = Model(PLANTED)
    stream = token_stream(os.path.join(PLANTED, "tokenizer.model"))
    windows = [(SEQ_LEN, s * (SEQ_LEN - 1)) for s in range(NUM_SEQS)]
    windows += [(T, 0) for T in MASS_LENGTHS if T != SEQ_LEN]
    worst = {}
    for T, start in windows:
        tokens = [model.bos] + stream[start:start + T - 1]
        assert len(tokens) == T, f"{TEXT} is too short for {T} tokens"
        attn = reference_forward.forward(model, tokens, want_logits=False)["attn"]  # [layers x [H, T, T]]
        for e in expected:
            row = attn[int(e["layer"])][int(e["head"]), -1]  # [T] the last query's weights
            for name, mass in (("sink", row[0]), ("last", row[-1])):
                lo, hi = float(e[f"{name}_mass_min"]), float(e[f"{name}_mass_max"])
                key = (int(e["layer"]), int(e["head"]), name)
                seen = worst.setdefault(key, [np.inf, -np.inf])
                seen[0], seen[1] = min(seen[0], mass), max(seen[1], mass)
                if not lo <= mass <= hi:
                    failures.append(f"head ({e['layer']}, {e['head']}) T={T} from token {start}: "
                                    f"{name} mass {mass:.6f} outside [{lo}, {hi}]")
    for e in expected:
        s = worst[(int(e["layer"]), int(e["head"]), "sink")]
        l = worst[(int(e["layer"]), int(e["head"]), "last")]
        print(f"  head ({e['layer']}, {e['head']}) {e['type']:12s} sink {s[0]:.4f}-{s[1]:.4f} "
              f"[{e['sink_mass_min']}, {e['sink_mass_max']}]  last {l[0]:.4f}-{l[1]:.4f} "
              f"[{e['last_mass_min']}, {e['last_mass_max']}]")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--types", default=os.path.join(PLANTED, "planted_types.csv"), help="expected types")
    args = ap.parse_args()
    expected = read_csv(args.types)
    failures = []
    with tempfile.TemporaryDirectory(prefix="attngeom-planted-") as tmp:
        check_regenerated(tmp, failures)
        check_taxonomy(args.bin, tmp, expected, failures)
    print(f"reference forward masses on {os.path.basename(TEXT)} (min-max over sequences [card range]):")
    check_masses(expected, failures)
    for f in failures:
        print("FAIL", f)
    print(f"planted: {'FAILED' if failures else 'passed'} ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
