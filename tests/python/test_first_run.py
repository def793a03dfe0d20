#!/usr/bin/python3
"""A new user's first runs of `attngeom analyze`, `export` and `compare` on a fixture model
(docs/cli.md): what each says, and that it says it.

  test_first_run.py --bin PATH/attngeom --fixtures DIR

start        analyze's first stderr line names the family, precision, device and the plan,
             before any sequence is done.
links        a corpus folder holding links to one file (as /usr/share/common-licenses does)
             reads that file once, with a warning naming both paths.
jsonl        a .jsonl or .jsonl.gz file without --format is read as JSONL; --format text
             still reads it as text.
one_document every sequence drawn from one document is warned of; documents one per line
             are not.
resume_hint  the `continue with:` command of an interrupted run, pasted into a shell as it
             is (its --out holds a space and a quote), finishes the run.
empty_yaml   `export --format qrhead-yaml` of a type no head has writes `attn_head_set: []`,
             which compare reads back as the empty set.
degenerate   `compare` of a head-set file in which every gate is 1 says why its Jaccard and
             Spearman say nothing.
"""
import argparse
import csv
import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "data", "fixture_corpus.txt")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


class Runner:
    def __init__(self, binary, fixtures, tmp):
        self.bin, self.model, self.tmp = binary, os.path.join(fixtures, "llama"), tmp
        self.count = 0

    def analyze(self, data, *flags, out=None):
        """Runs analyze into a fresh --out; returns (process, out)."""
        self.count += 1
        out = out or os.path.join(self.tmp, "run%d" % self.count)
        argv = [self.bin, "analyze", "--model", self.model, "--data", *data, "--out", out, "--seq-len", "64",
                "--num-seqs", "2", "--precision", "fp32", "--threads", "1", *flags]
        return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300), out

    def file(self, name, text):
        path = os.path.join(self.tmp, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with (gzip.open(path, "wt") if name.endswith(".gz") else open(path, "w")) as f:
            f.write(text)
        return path


def run_json(out):
    with open(os.path.join(out, "run.json")) as f:
        return json.load(f)


def check_start(r):
    proc, _ = r.analyze([CORPUS])
    first = proc.stderr.splitlines()[0] if proc.stderr else ""
    check(proc.returncode == 0 and first == "attngeom: llama, fp32 on cpu: 2 sequences of 64 tokens, 1 query row each",
          "start: first stderr line %r" % first)


def check_links(r):
    folder = os.path.join(r.tmp, "licenses")
    os.makedirs(folder)
    with open(CORPUS) as f, open(os.path.join(folder, "GFDL-1.3"), "w") as g:
        g.write(f.read())
    os.symlink("GFDL-1.3", os.path.join(folder, "GFDL"))
    proc, out = r.analyze([folder])
    files = run_json(out)["corpus"]["files"] if proc.returncode == 0 else []
    check(proc.returncode == 0 and len(files) == 1 and "GFDL-1.3: the same file as " in proc.stderr and
          "read once" in proc.stderr, "links: exit %d, %d corpus file(s); stderr %r" % (
              proc.returncode, len(files), proc.stderr[-300:]))


def check_jsonl(r):
    with open(CORPUS) as f:
        text = f.read()
    lines = "".join(json.dumps({"text": text}) + "\n" for _ in range(2))
    for name in ("docs.jsonl", "docs.jsonl.gz"):
        proc, out = r.analyze([r.file(name, lines)])
        fmt = run_json(out)["corpus"]["format"] if proc.returncode == 0 else None
        check(fmt == "jsonl", "jsonl: %s without --format read as %s (%s)" % (name, fmt, proc.stderr[-200:]))
    proc, out = r.analyze([r.file("explicit.jsonl", lines)], "--format", "text")
    fmt = run_json(out)["corpus"]["format"] if proc.returncode == 0 else None
    check(fmt == "text", "jsonl: --format text stays authoritative (read as %s)" % fmt)


def check_one_document(r):
    proc, _ = r.analyze([CORPUS])
    check(proc.returncode == 0 and "all 2 sequences come from one document" in proc.stderr and
          "--format text" in proc.stderr, "one_document: warned (%r)" % proc.stderr[-300:])
    proc, _ = r.analyze([CORPUS], "--format", "lines", "--pack")
    check(proc.returncode == 0 and "one document" not in proc.stderr,
          "one_document: not warned of documents one per line (%r)" % proc.stderr[-300:])


def check_resume_hint(r):
    out = os.path.join(r.tmp, "run dir's")
    with open(CORPUS) as f:
        corpus = r.file("long corpus.txt", f.read() * 20)
    # --queries all at 512 tokens: each sequence takes long enough to stop between them.
    argv = [r.bin, "analyze", "--model", r.model, "--data", corpus, "--pack", "--seq-len", "512", "--num-seqs", "3",
            "--queries", "all", "--threads", "1", "--force", "--precision", "fp32", "--out", out]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    records = os.path.join(out, "records")
    while proc.poll() is None and not (os.path.isdir(records) and os.listdir(records)):
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=300)[1]
    hint = [line.split("continue with: ", 1)[1] for line in err.splitlines() if "continue with: " in line]
    check(proc.returncode == 130 and len(hint) == 1, "resume_hint: exit %d, hint %r" % (proc.returncode, hint))
    if proc.returncode != 130 or not hint:
        return
    pasted = subprocess.run(["sh", "-c", hint[0]], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            timeout=600)
    check(pasted.returncode == 0 and run_json(out).get("complete") is True,
          "resume_hint: the pasted command finished the run (exit %d, %r)" % (pasted.returncode, pasted.stderr[-300:]))


def attngeom(r, *argv):
    return subprocess.run([r.bin, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)


def check_empty_yaml(r):
    _, run = r.analyze([CORPUS])
    with open(os.path.join(run, "heads.csv")) as f:
        labels = {row["label"] for row in csv.DictReader(f)}
    unused = [t for t in ("retriever", "mixer", "reset") if t not in labels]
    check(bool(unused), "empty_yaml: the fixture has a type no head carries (labels %s)" % sorted(labels))
    if not unused:
        return
    yaml = os.path.join(r.tmp, "empty.yaml")
    proc = attngeom(r, "export", run, "--format", "qrhead-yaml", "--type", unused[0], "--out", yaml)
    text = open(yaml).read() if proc.returncode == 0 else None
    check(text == "attn_head_set: []\n", "empty_yaml: export wrote %r (%s)" % (text, proc.stderr.strip()))
    proc = attngeom(r, "compare", run, "--heads", yaml, "--out", os.path.join(r.tmp, "empty.csv"))
    check(proc.returncode == 0, "empty_yaml: compare reads it back (exit %d, %s)" % (proc.returncode, proc.stderr.strip()))


def check_degenerate(r):
    _, run = r.analyze([CORPUS])
    gates = r.file("gates.tsv", "1\t1\t1\t1\n" * 2)  # the fixture: 2 layers of 4 KV heads
    proc = attngeom(r, "compare", run, "--heads", gates, "--out", os.path.join(r.tmp, "compare.csv"))
    check(proc.returncode == 0 and "same by construction" in proc.stderr and
          "spearman undefined: their scores are constant" in proc.stderr,
          "degenerate: compare says why (exit %d, %r)" % (proc.returncode, proc.stderr[:400]))


CHECKS = {"start": check_start, "links": check_links, "jsonl": check_jsonl, "one_document": check_one_document,
          "resume_hint": check_resume_hint, "empty_yaml": check_empty_yaml, "degenerate": check_degenerate}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--check", choices=sorted(CHECKS), help="one check (default: all)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="attngeom-first-run-") as tmp:
        r = Runner(os.path.abspath(args.bin), os.path.abspath(args.fixtures), tmp)
        for name, fn in CHECKS.items():
            if args.check in (None, name):
                fn(r)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
