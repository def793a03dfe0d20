#!/usr/bin/env python3
"""attngeom export / compare against the planted model (models/planted), whose head types
are known by construction (planted_types.csv).

  test_interop.py --bin PATH/attngeom

- neighbours: each export is read back by a minimal re-implementation of its neighbour's
  parser (DuoAttention's load_attn_pattern: numpy.loadtxt(dtype=float, delimiter='\\t');
  Retrieval Head / HeadKV: json + np.mean per head; QRHead: yaml's attn_head_set) and gives
  the run's heads and scores;
- round trip: compare(run, export(run)) gives Jaccard 1 and precision@k 1 for the exported
  score or type;
- planted: head sets built by hand from planted_types.csv give exactly the overlaps
  computed here.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import REPO  # noqa: E402

PLANTED = os.path.join(REPO, "models", "planted")
TEXT = os.path.join(REPO, "tests", "data", "fixture_corpus.txt")
LAYERS, HEADS = 4, 4


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def run(binary, *args):
    return subprocess.run([binary, *args], check=True, capture_output=True, text=True)


def comparison(rows, file, ours):
    [row] = [r for r in rows if r["file"] == file and r["ours"] == ours]
    return row


def expect(failures, what, got, want):
    ok = abs(float(got) - want) < 1e-12 if isinstance(want, float) else str(got) == str(want)
    print(f"{what}: {got} (expected {want}){'' if ok else '  FAIL'}")
    if not ok:
        failures.append(f"{what}: {got}, expected {want}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    a = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        rd = os.path.join(tmp, "run")
        run(a.bin, "analyze", "--model", PLANTED, "--data", TEXT, "--pack", "--pack-separator", "none",
            "--seq-len", "128", "--num-seqs", "3", "--out", rd)
        heads = {(int(r["layer"]), int(r["head"])): r for r in read_csv(os.path.join(rd, "heads.csv"))}
        planted = {(int(r["layer"]), int(r["head"])): r["type"] for r in read_csv(os.path.join(PLANTED, "planted_types.csv"))}
        score = {k: float(r["last_mass"]) for k, r in heads.items()}

        # DuoAttention: load_attn_pattern's loadtxt; no GQA here, so each gate is the head's score.
        duo = os.path.join(tmp, "full_attention_heads.tsv")
        run(a.bin, "export", rd, "--format", "duo", "--score", "last_mass", "--out", duo)
        gates = np.loadtxt(duo, dtype=float, delimiter="\t")
        expect(failures, "duo shape", gates.shape, (LAYERS, HEADS))
        worst = max(abs(gates[l, h] - score[(l, h)]) for (l, h) in score)
        expect(failures, "duo gates equal last_mass", worst == 0.0, True)

        # Retrieval Head / HeadKV: {"l-h": [per-sequence scores]}, ranked by np.mean.
        rj = os.path.join(tmp, "retrieval_heads.json")
        run(a.bin, "export", rd, "--format", "retrieval-json", "--score", "last_mass", "--out", rj)
        scores = json.load(open(rj))
        expect(failures, "retrieval-json heads", sorted(scores), sorted(f"{l}-{h}" for (l, h) in score))
        expect(failures, "retrieval-json lists per sequence", {len(v) for v in scores.values()}, {3})
        worst = max(abs(np.mean(scores[f"{l}-{h}"]) - score[(l, h)]) for (l, h) in score)
        expect(failures, "retrieval-json means match heads.csv", worst < 1e-12, True)
        ranked = [k for k, _ in sorted(scores.items(), key=lambda kv: np.mean(kv[1]), reverse=True)]
        expect(failures, "retrieval-json top head is a retriever", planted[tuple(map(int, ranked[0].split("-")))], "retriever")

        # QRHead: attn_head_set of one type.
        qr = os.path.join(tmp, "qrhead.yaml")
        run(a.bin, "export", rd, "--format", "qrhead-yaml", "--type", "retriever", "--out", qr)
        listed = yaml.safe_load(open(qr))["attn_head_set"]
        want = sorted(f"{l}-{h}" for (l, h), t in planted.items() if t == "retriever")
        expect(failures, "qrhead-yaml lists the planted retrievers", sorted(listed), want)

        # Round trip through compare.
        out = os.path.join(tmp, "round_trip.csv")
        run(a.bin, "compare", rd, "--heads", duo, "--heads", rj, "--heads", qr, "--out", out)
        rows = read_csv(out)
        for file, ours in [(duo, "score:last_mass"), (rj, "score:last_mass"), (qr, "type:retriever")]:
            r = comparison(rows, file, ours)
            expect(failures, f"round trip {os.path.basename(file)} {ours} jaccard", float(r["jaccard"]), 1.0)
            expect(failures, f"round trip {os.path.basename(file)} {ours} precision_at_k", float(r["precision_at_k"]), 1.0)
        expect(failures, "round trip duo spearman", float(comparison(rows, duo, "score:last_mass")["spearman"]), 1.0)

        # Planted sets: QRHead lists the 4 retrievers plus the 2 first resets (6 heads); a
        # DuoAttention TSV opens the gates of the 4 resets and of 2 of the mixers.
        retrievers = sorted(k for k, t in planted.items() if t == "retriever")
        resets = sorted(k for k, t in planted.items() if t == "reset")
        mixers = sorted(k for k, t in planted.items() if t == "mixer")
        qr_set = retrievers + resets[:2]
        planted_yaml = os.path.join(tmp, "planted.yaml")
        with open(planted_yaml, "w") as f:
            f.write("# planted\nattn_head_set: [" + ", ".join(f"'{l}-{h}'" for l, h in qr_set) + "]\n")
        duo_set = resets + mixers[:2]
        grid = np.full((LAYERS, HEADS), 0.25)
        for l, h in duo_set:
            grid[l, h] = 0.75
        planted_tsv = os.path.join(tmp, "planted.tsv")
        np.savetxt(planted_tsv, grid, delimiter="\t")
        labels = {k: r["label"] for k, r in heads.items()}
        expect(failures, "analyze labels equal the planted types", labels == {k: t for k, t in planted.items()}, True)
        out = os.path.join(rd, "compare.csv")
        run(a.bin, "compare", rd, "--heads", "qrhead-yaml:" + planted_yaml, "--heads", planted_tsv)
        rows = read_csv(out)
        # QRHead set (6) vs our 4 retrievers: overlap 4, union 6.
        r = comparison(rows, "qrhead-yaml:" + planted_yaml, "type:retriever")
        expect(failures, "planted yaml vs retriever overlap", r["overlap"], 4)
        expect(failures, "planted yaml vs retriever jaccard", float(r["jaccard"]), 4 / 6)
        expect(failures, "planted yaml vs retriever precision_at_k", float(r["precision_at_k"]), 1.0)
        # vs our 4 resets: overlap 2, union 8; precision 2/4.
        r = comparison(rows, "qrhead-yaml:" + planted_yaml, "type:reset")
        expect(failures, "planted yaml vs reset jaccard", float(r["jaccard"]), 2 / 8)
        expect(failures, "planted yaml vs reset precision_at_k", float(r["precision_at_k"]), 0.5)
        # Duo set (4 resets + 2 mixers) vs our 4 resets: overlap 4, union 6; vs mixers: 2 of 4, union 8.
        r = comparison(rows, planted_tsv, "type:reset")
        expect(failures, "planted tsv vs reset jaccard", float(r["jaccard"]), 4 / 6)
        expect(failures, "planted tsv vs reset precision_at_k", float(r["precision_at_k"]), 1.0)
        r = comparison(rows, planted_tsv, "type:mixer")
        expect(failures, "planted tsv vs mixer jaccard", float(r["jaccard"]), 2 / 8)
        # The 6 heads with the largest sink mass are the 4 resets and the 2 mixers with the largest sink mass.
        by_sink = sorted(heads, key=lambda k: -float(heads[k]["sink_mass"]))[:6]
        want = len(set(by_sink) & set(duo_set))
        r = comparison(rows, planted_tsv, "score:sink_mass")
        expect(failures, "planted tsv vs top-6 sink_mass overlap", r["overlap"], want)
        expect(failures, "planted tsv vs top-6 sink_mass jaccard", float(r["jaccard"]), want / (12 - want))
        report = open(os.path.join(rd, "report.html")).read()
        expect(failures, "report has the compare section", "Head sets of other tools" in report, True)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
