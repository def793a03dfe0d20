#!/usr/bin/env python3
"""`analyze` inside a cgroup whose memory limit is smaller than the model's weights.

  test_memory_limit.py --bin PATH/attngeom --fixtures DIR

A random f32 checkpoint (tools/make_random_checkpoint.py) a few times larger than the
limit; the limit leaves room for the working memory. Inside the cgroup (v1
memory.limit_in_bytes or v2 memory.max, whichever this machine has), the default check
warns, naming the limit and its source, and the run's tables equal an unlimited run's;
`--memory-check strict` refuses with an error naming the limit. Needs root to create the
cgroup: without it (or without a memory controller) the test exits with SKIP_CODE, which
ctest reports as skipped. The cgroup is removed afterwards.
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_analysis_runs import CORPUS, compare_tables  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_CHECKPOINT = os.path.join(HERE, "..", "..", "tools", "make_random_checkpoint.py")
SKIP_CODE = 77
LIMIT = 448 << 20  # above the working-memory estimate (its 256 MiB process allowance included)
CGROUP_ROOT = "/sys/fs/cgroup"


class Cgroup:
    """A memory cgroup named `name` with `limit` bytes, v1 where the memory controller is
    mounted as v1, else v2. `available` is False (with `why`) when it cannot be made."""

    def __init__(self, name, limit):
        self.available, self.why, self.dir, self.version = False, "", None, None
        if os.geteuid() != 0:
            self.why = "not root: cannot create a memory cgroup"
            return
        v1 = os.path.join(CGROUP_ROOT, "memory")
        fs_type = subprocess.run(["stat", "-fc", "%T", CGROUP_ROOT], capture_output=True, text=True).stdout.strip()
        try:
            if os.path.isfile(os.path.join(v1, "memory.limit_in_bytes")):
                self.version, self.dir, limit_file, self.procs = "v1", os.path.join(v1, name), "memory.limit_in_bytes", "cgroup.procs"
            elif fs_type == "cgroup2fs":
                with open(os.path.join(CGROUP_ROOT, "cgroup.subtree_control"), "w") as f:
                    f.write("+memory")
                self.version, self.dir, limit_file, self.procs = "v2", os.path.join(CGROUP_ROOT, name), "memory.max", "cgroup.procs"
            else:
                self.why = f"no cgroup memory controller under {CGROUP_ROOT} ({fs_type})"
                return
            os.mkdir(self.dir)
            with open(os.path.join(self.dir, limit_file), "w") as f:
                f.write(str(limit))
            self.available = True
        except OSError as e:
            self.why = f"cannot create a {self.version or 'memory'} cgroup: {e}"
            self.remove()

    def wrap(self, command):
        """`command` run from a shell that first moves itself into the cgroup."""
        return ["sh", "-c", f'echo $$ > "{os.path.join(self.dir, self.procs)}" && exec "$@"', "sh", *command]

    def remove(self):
        if self.dir and os.path.isdir(self.dir):
            os.rmdir(self.dir)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--fixtures", required=True)
    args = ap.parse_args()
    name = f"attngeom-test-{os.getpid()}"
    group = Cgroup(name, LIMIT)
    if not group.available:
        print(f"SKIP: {group.why}")
        return SKIP_CODE
    failures = []
    try:
        with tempfile.TemporaryDirectory(prefix="attngeom-memlimit-") as tmp:
            model = os.path.join(tmp, "model")
            subprocess.run([sys.executable, "-B", MAKE_CHECKPOINT, "--model-type", "llama", "--hidden", "1024",
                            "--intermediate", "2816", "--layers", "28", "--heads", "16", "--dtype", "f32",
                            "--tokenizer", os.path.join(args.fixtures, "mistral", "tokenizer.model"),
                            "--out", model], check=True, capture_output=True)
            weights = sum(os.path.getsize(os.path.join(model, f)) for f in os.listdir(model) if f.endswith(".safetensors"))
            if weights < 2 * LIMIT:
                failures.append(f"the model ({weights} bytes) is not a few times larger than the limit ({LIMIT})")
            base = [args.bin, "analyze", "--model", model, "--data", CORPUS, "--seq-len", "32", "--num-seqs", "2",
                    "--precision", "fp32", "--threads", "2"]
            unlimited = os.path.join(tmp, "unlimited")
            subprocess.run(base + ["--out", unlimited], check=True, capture_output=True)
            limited = os.path.join(tmp, "limited")
            run = subprocess.run(group.wrap(base + ["--out", limited]), capture_output=True, text=True)
            source = f"cgroup {group.version} {'memory.limit_in_bytes' if group.version == 'v1' else 'memory.max'} of /{name}"
            named = f"memory limit of 448.0 MiB ({source})"
            if run.returncode != 0:
                failures.append(f"the limited run failed ({run.returncode}): {run.stderr.strip()[-400:]}")
            elif named not in run.stderr or "more per sequence" not in run.stderr:
                failures.append(f"the limited run's warning does not name {named!r} with a slowdown: {run.stderr!r}")
            else:
                worst = compare_tables(unlimited, limited, failures)
                print(f"limited run: warned, tables equal the unlimited run's (max relative difference {worst:.1e})")
                print("  " + next(line for line in run.stderr.splitlines() if named in line))
            strict = subprocess.run(group.wrap(base + ["--out", os.path.join(tmp, "strict"), "--memory-check", "strict"]),
                                    capture_output=True, text=True)
            refusal = f"only 448.0 MiB is available ({source})"
            if strict.returncode != 2 or refusal not in strict.stderr:
                failures.append(f"strict: expected exit 2 naming {refusal!r}, got {strict.returncode}: {strict.stderr!r}")
            elif os.path.exists(os.path.join(tmp, "strict")):
                failures.append("strict: the refused run left an output directory")
            else:
                print("strict: refused: " + strict.stderr.strip())
    finally:
        group.remove()
    for f in failures[:20]:
        print("FAIL", f)
    print(f"memory_limit: {'FAILED' if failures else 'passed'} ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
