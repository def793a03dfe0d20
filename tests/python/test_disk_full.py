#!/usr/bin/python3
"""The disk-full test (docs/robustness.md).

  test_disk_full.py --bin PATH/attngeom --fixtures DIR

A run stopped by SIGINT after its first records is resumed under `ulimit -f`
(RLIMIT_FSIZE) too small for a record: it must stop with exit 2 and one clear line,
keep every finished record byte-identical, keep run.json the run's marker and leave no
temporary. --resume without the limit must then finish with tables equal to an
uninterrupted run, and nothing may be written outside the two --out folders.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_analysis_runs import compare_tables  # noqa: E402
from hostile_lib import after_start  # noqa: E402
from test_hostile_runs import Ctx, snapshot  # noqa: E402


def check_disk_full(binary, fixtures):
    """analyze hits `ulimit -f` while writing a record: exit 2, one line, earlier results intact."""
    failures = []
    with tempfile.TemporaryDirectory(prefix="attngeom-diskfull-") as tmp:
        ctx = Ctx(binary, fixtures, tmp)
        argv = ctx.analyze("--queries", "stride:8", num_seqs="5")
        reference = os.path.join(tmp, "reference")
        ctx.run_ok(*[reference if a == ctx.out else a for a in argv])

        # Earlier results: a run stopped by SIGINT after its first records.
        proc = subprocess.Popen([binary, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        records = os.path.join(ctx.out, "records")
        while proc.poll() is None:
            if os.path.isdir(records) and any(n.startswith("seq-") and ".tmp." not in n for n in os.listdir(records)):
                proc.send_signal(2)
                break
        proc.wait()
        if proc.returncode not in (130, 0):
            failures.append(f"the interrupted run exited {proc.returncode}")
        done = sorted(n for n in os.listdir(records) if ".tmp." not in n)
        if not done or len(done) >= 5:
            failures.append(f"expected a partial run, have {len(done)} records")
        before = snapshot(records)
        run_json = json.load(open(os.path.join(ctx.out, "run.json")))
        record_size = os.path.getsize(os.path.join(records, done[0]))
        limit = max(2 * os.path.getsize(os.path.join(ctx.out, "run.json")), 16384)
        if limit >= record_size:
            failures.append(f"test setup: a record ({record_size} bytes) must exceed the limit ({limit})")

        # The disk fills up: every write beyond `limit` bytes fails (EFBIG; SIGXFSZ back to default here).
        def small_files():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        proc = subprocess.run([binary, *argv, "--resume"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=300, preexec_fn=small_files)
        err = after_start(proc.stderr).strip()  # the run had started: its start line may come first
        print(f"disk full: exit {proc.returncode}; stderr: {err!r}")
        if proc.returncode != 2 or len(err.splitlines()) != 1 or "File too large" not in err:
            failures.append(f"expected exit 2 and one line naming the failed write, got {proc.returncode}: {err!r}")
        now = snapshot(records)
        if any(now.get(k) != v for k, v in before.items()):
            failures.append("finished records changed")
        leftovers = [n for n in os.listdir(records) if ".tmp." in n] + \
            [n for n in os.listdir(ctx.out) if ".tmp." in n]
        if leftovers:
            failures.append(f"temporaries left behind: {leftovers}")
        after = json.load(open(os.path.join(ctx.out, "run.json")))
        if after.get("format") != "attngeom-run-v1" or after.get("settings") != run_json.get("settings"):
            failures.append("run.json is no longer the run's marker")

        # Space again: --resume finishes and equals the uninterrupted run.
        ctx.run_ok(*argv, "--resume")
        worst = compare_tables(reference, ctx.out, failures)
        print(f"disk full: {len(done)} records kept through the failed write; resumed run vs uninterrupted: "
              f"max relative difference {worst:.1e}")
        # Nothing was written outside the two --out folders.
        extra = sorted(set(os.listdir(tmp)) - {"reference", "run"})
        if extra:
            failures.append(f"files written outside --out: {extra}")
    for f in failures:
        print(f"FAIL disk_full: {f}")
    return not failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--fixtures", required=True)
    args = ap.parse_args()
    return 0 if check_disk_full(args.bin, args.fixtures) else 1


if __name__ == "__main__":
    sys.exit(main())
