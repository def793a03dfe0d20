"""Shared by the hostile-run cases (test_hostile_runs.py, hostile_output_cases.py): the
case registry, the per-case context and the file helpers."""
import hashlib
import json
import os
import re
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(REPO, "tests", "data", "fixture_corpus.txt")
PROMPT = os.path.join(REPO, "tests", "data", "fixture_prompt.txt")
CASES = {}
# analyze's start line ("attngeom: llama, fp32 on cpu: 2 sequences ...") and its warnings.
START_OR_WARNING = re.compile(r"attngeom: \S+, \S+ on \S+: \d+ sequences? of |attngeom analyze: warning: ")


def after_start(stderr):
    """stderr without the start line and warnings of a run refused once it had started."""
    lines = stderr.splitlines(keepends=True)
    while len(lines) > 1 and START_OR_WARNING.match(lines[0]):
        lines.pop(0)
    return "".join(lines)


def case(fn):
    CASES[fn.__name__] = fn
    return fn


class Ctx:
    def __init__(self, binary, fixtures, tmp):
        self.bin, self.fixtures, self.tmp = binary, fixtures, tmp
        self.model = os.path.join(fixtures, "llama")  # read only: cases never change a fixture
        self.out = os.path.join(tmp, "run")          # must not exist afterwards unless listed in keep
        self.keep = []                               # existing paths that must stay byte-identical
        self.env = {}                                # added to the environment of the run
        self.started = False                         # refused once running: analyze's start line may come first

    def file(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
        return path

    def analyze(self, *flags, data=CORPUS, seq_len="64", num_seqs="2", threads="1", precision="fp32"):
        return ["analyze", "--model", self.model, "--data", data, "--out", self.out, "--seq-len", seq_len,
                "--num-seqs", num_seqs, "--precision", precision, "--threads", threads, *flags]

    def run_ok(self, *argv):
        proc = subprocess.run([self.bin, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"setup command failed: {argv}: {proc.stderr.strip()}")

    def capture_dump(self, name="dump.safetensors"):
        path = os.path.join(self.tmp, name)
        self.run_ok("capture", "--model", self.model, "--text", PROMPT, "--max-tokens", "40", "--queries", "10,39",
                    "--out", path)
        return path


def snapshot(path):
    """{relative path: sha256} of every file under `path` (or of `path` itself)."""
    if os.path.isfile(path):
        return {"": hashlib.sha256(open(path, "rb").read()).hexdigest()}
    out = {}
    for d, _, files in os.walk(path):
        for f in files:
            p = os.path.join(d, f)
            out[os.path.relpath(p, path)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out


def patch_dump(path, name, edit):
    """Rewrites tensor `name` of a safetensors dump in place: edit(bytearray of its data)."""
    raw = bytearray(open(path, "rb").read())
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    b, e = header[name]["data_offsets"]
    region = raw[8 + n + b:8 + n + e]
    edit(region)
    raw[8 + n + b:8 + n + e] = region
    open(path, "wb").write(bytes(raw))
