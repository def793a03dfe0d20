"""Shared by the bad-input tests of `attngeom capture` (test_bad_inputs.py and
bad_checkpoint_cases.py): the case registry, the corrupted-fixture context, and raw
safetensors / JSON surgery. test_hostile_runs.py shares the command line and the checks
every refused run must pass."""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools"))
import harness  # noqa: E402
from checkpoint_files import Tensor, write_safetensors  # noqa: E402

ST = "model.safetensors"
L0 = "model.layers.0."
L1 = "model.layers.1."
CASES = {}


def case(fixture="llama"):
    def register(fn):
        CASES[fn.__name__] = (fixture, fn)
        return fn
    return register


class Ctx:
    """A corrupted copy of a fixture in `model`, plus the capture arguments to use."""

    def __init__(self, model, tmp):
        self.model, self.tmp = model, tmp
        self.args = ["--text", harness.PROMPT]
        self.out = os.path.join(tmp, "out.safetensors")

    def path(self, name):
        return os.path.join(self.model, name)


# --- raw safetensors surgery ---

def read_raw(path):
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def write_raw(path, header, data):
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(len(blob).to_bytes(8, "little") + blob + data)


def rewrite(path, edit):
    """Re-encode a safetensors file; edit({name: (dtype, array)}) changes the tensor set."""
    header, data = read_raw(path)
    header.pop("__metadata__", None)
    np_types = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}
    tensors = {}
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        b, e = info["data_offsets"]
        tensors[name] = (info["dtype"], np.frombuffer(data[b:e], np_types[info["dtype"]]).reshape(info["shape"]))
    edit(tensors)
    out = []
    for name, (dtype, a) in tensors.items():
        raw = np.ascontiguousarray(a).tobytes() if a.dtype == np.uint16 else None
        out.append(Tensor(name, dtype, a.shape, lambda r=raw: iter([r])) if raw is not None
                   else Tensor.from_array(name, dtype, a))
    write_safetensors(path, out)


def edit_offsets(path, edit):
    header, data = read_raw(path)
    edit(header, len(data))
    write_raw(path, header, data)


def edit_json(path, edit):
    with open(path) as f:
        obj = json.load(f)
    edit(obj)
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)


def refusal_problems(proc, needles_any, needles_all, tmp):
    """What is wrong with a run that should have been refused: exit status 2, exactly one
    newline-terminated stderr line naming one of needles_any and all of needles_all, and no
    temporary file (".tmp.") nor run set aside by --overwrite (".previous.") left under tmp."""
    err = proc.stderr
    lines = err.rstrip("\n").split("\n") if err.strip() else []
    problems = []
    if proc.returncode != 2:
        problems.append(f"exit code {proc.returncode}, expected 2")
    if len(lines) != 1 or not err.endswith("\n"):
        problems.append(f"stderr has {len(lines)} line(s), expected exactly one newline-terminated line")
    if needles_any and not any(n in err for n in needles_any):
        problems.append(f"message names none of {needles_any}")
    missing = [n for n in needles_all if n not in err]
    if missing:
        problems.append(f"message lacks {missing}")
    leftovers = [os.path.join(d, f) for d, dirs, fs in os.walk(tmp) for f in fs + dirs
                 if ".tmp." in f or ".previous." in f]
    if leftovers:
        problems.append(f"temporary files left behind: {leftovers}")
    return problems


def case_runner_main(doc, cases, run_case):
    """The command line of a hostile-input script: --list, or run --case NAME / --all
    against --bin and --fixtures, where run_case(name, bin, fixtures) returns the case's
    problems (empty: passed); prints each and returns the exit code."""
    import argparse
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin")
    ap.add_argument("--fixtures")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--list", action="store_true", help="print the case names, one per line")
    mode.add_argument("--case", choices=sorted(cases))
    mode.add_argument("--all", action="store_true")
    args = ap.parse_args()
    if args.list:
        print("\n".join(cases))
        return 0
    if not args.bin or not args.fixtures:
        ap.error("--bin and --fixtures are required to run cases")
    names = list(cases) if args.all else [args.case]
    failed = []
    for name in names:
        problems = run_case(name, args.bin, args.fixtures)
        for p in problems:
            print(f"FAIL {name}: {p}")
        if problems:
            failed.append(name)
    print(f"{len(names) - len(failed)}/{len(names)} case(s) passed" + (f"; failed: {failed}" if failed else ""))
    return 1 if failed else 0
