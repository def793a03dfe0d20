#!/usr/bin/env python3
"""`mpirun -n K attngeom analyze` on the model organism (docs/cluster.md "MPI").

  test_cluster_mpi.py --bin PATH/attngeom --built-with-mpi ON|OFF

- 3 ranks on loopback give a run directory whose files equal one process's byte for byte
  (tables, arrays, records, a length sweep's folders; run.json and report.html aside);
- a rank killed (SIGKILL) after its first record ends the job with mpirun's error naming
  it, and `--resume` under 2 ranks completes the run with equal files;
- a rank started with other flags than rank 0's is refused, naming the rank;
- a rank that fails (an error) prints "attngeom: MPI rank 1 of 3 failed: ..." on one line,
  the job exits 2, and `--resume` by one process without mpirun completes it equally.
The failures come from the test hook ATTNGEOM_TEST_FAIL_RANK=RANK:N:kill|error.
With ATTNGEOM_TEST_DEVICE=cuda (ctest cuda.cluster_mpi): 2 ranks with plain `--device cuda`
each take their local rank's GPU, sharing it on a machine with one, and their run directory
equals one process's on the GPU byte for byte (the other checks are the CPU's).
Skipped (exit 77) when mpirun is not installed, attngeom was built without MPI, or the GPU
asked for is not there.
"""
import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402

ORGANISM = os.path.join(HERE, "..", "..", "models", "organism")
# Loopback only, whoever runs it: no network, and root allowed (containers, CI).
MPIRUN = ["--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"]
NOT_COMPARED = {"run.json", "report.html"}  # times, host, ranks


def analyze_args(bin_path, out):
    return [bin_path, "analyze", "--model", ORGANISM, "--data", os.path.join(ORGANISM, "heldout.txt"),
            "--seq-len", "128", "--lengths", "64", "--num-seqs", "6", "--precision", "fp32", "--threads", "1",
            "--out", out] + harness.device_flags()


def run(cmd, env=None):
    t0 = time.time()
    step = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    return step, time.time() - t0


def mpi(ranks, cmd, env, exported=()):
    flags = [f for name in ("TMPDIR", *exported) for f in ("-x", name)]
    return run(["mpirun", *MPIRUN, *flags, "-n", str(ranks), *cmd], env)


def compare_runs(reference, other, what, failures):
    """Every file but run.json and report.html, byte for byte, in both directions."""
    compared = 0
    for root, dirs, files in os.walk(reference):
        rel = os.path.relpath(root, reference)
        theirs = os.path.join(other, rel)
        if not os.path.isdir(theirs):
            failures.append(f"{what}: {rel}/ missing")
            continue
        extra = set(os.listdir(theirs)) - set(files) - set(dirs)
        if extra:
            failures.append(f"{what}: {rel}/ has extra files {sorted(extra)}")
        for name in files:
            if name in NOT_COMPARED:
                continue
            compared += 1
            if not os.path.isfile(os.path.join(theirs, name)) or \
                    not filecmp.cmp(os.path.join(root, name), os.path.join(theirs, name), shallow=False):
                failures.append(f"{what}: {os.path.join(rel, name)} differs from one process's")
    return compared


def fail_then_resume(bin_path, env, out, hook, error_line, resume, how, reference, failures):
    """3 ranks with ATTNGEOM_TEST_FAIL_RANK=`hook`: the job must fail with the line that
    `error_line` picks from its stderr, keep run.json, and then `resume` must complete it."""
    step, _ = mpi(3, analyze_args(bin_path, out), dict(env, ATTNGEOM_TEST_FAIL_RANK=hook), ["ATTNGEOM_TEST_FAIL_RANK"])
    line = error_line(step)
    if line is None or not os.path.isfile(os.path.join(out, "run.json")):
        failures.append(f"{hook}: expected the failure's line and run.json kept; "
                        f"got exit {step.returncode}: {step.stderr.strip()[-600:]!r}")
        return
    records = os.path.join(out, "records")
    kept = sum(1 for name in os.listdir(records) if ".tmp." not in name)
    print(f"{hook}: exit {step.returncode}, {line!r}; {kept} records kept")
    step, _ = resume(analyze_args(bin_path, out) + ["--resume"])
    if step.returncode != 0:
        failures.append(f"{hook}, then {how}: exit {step.returncode}: {step.stderr.strip()[-400:]}")
        return
    files = compare_runs(reference, out, f"{hook}, then {how}", failures)
    print(f"{hook}, then {how}: {files} files equal one process's")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--built-with-mpi", required=True)
    args = ap.parse_args()
    if shutil.which("mpirun") is None:
        print("SKIP: mpirun is not installed (scripts/bootstrap.sh test installs openmpi-bin)")
        return 77
    if args.built_with_mpi.upper() not in ("ON", "1", "TRUE", "YES"):
        print("SKIP: attngeom was built without MPI (configure with -DATTNGEOM_MPI=ON and libopenmpi-dev)")
        return 77
    harness.require_device(args.bin)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    for name in ("ATTNGEOM_TEST_FAIL_RANK", "SLURM_ARRAY_TASK_ID", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"):
        env.pop(name, None)
    failures = []
    with tempfile.TemporaryDirectory(prefix="attngeom-mpi-") as tmp:
        # The ranks' temporary folders: those of a rank killed mid-job go with this one.
        env["TMPDIR"] = os.path.join(tmp, "ranks-tmp")
        os.mkdir(env["TMPDIR"])
        reference = os.path.join(tmp, "single")
        step, single_s = run(analyze_args(args.bin, reference), env)
        if step.returncode != 0:
            print(f"FAIL one process: exit {step.returncode}: {step.stderr.strip()[-400:]}")
            return 1

        ranks = 3 if harness.DEVICE == "cpu" else 2
        out = os.path.join(tmp, f"ranks{ranks}")
        step, mpi_s = mpi(ranks, analyze_args(args.bin, out), env)
        if step.returncode != 0:
            failures.append(f"mpirun -n {ranks}: exit {step.returncode}: {step.stderr.strip()[-400:]}")
        else:
            files = compare_runs(reference, out, f"mpirun -n {ranks}", failures)
            print(f"mpirun -n {ranks}: {files} files equal one process's ({mpi_s:.1f} s; one process {single_s:.1f} s)")
            left = [name for name in os.listdir(env["TMPDIR"]) if name.startswith("attngeom-")]
            if left:
                failures.append(f"mpirun -n {ranks}: the ranks left {left} in their temporary folder")
            with open(os.path.join(out, "run.json")) as f:
                device = json.load(f).get("device")
            if device != ("cpu" if harness.DEVICE == "cpu" else "cuda"):
                failures.append(f"mpirun -n {ranks}: run.json names device {device!r}")
        if harness.DEVICE != "cpu":
            return report(failures)

        # Ranks started with other flags (mpirun's MPMD form) are refused by name.
        out = os.path.join(tmp, "mismatched")
        other = analyze_args(args.bin, out)
        other[other.index("--num-seqs") + 1] = "5"
        step, _ = run(["mpirun", *MPIRUN, "-n", "2", *analyze_args(args.bin, out), ":", "-n", "1", *other], env)
        expected = "attngeom: MPI rank 2 of 3 failed: its flags, model (config.json, weight headers) or corpus"
        if step.returncode != 2 or not any(line.startswith(expected) for line in step.stderr.splitlines()):
            failures.append(f"rank 2 with other flags: expected exit 2 and {expected!r}; "
                            f"got exit {step.returncode}: {step.stderr.strip()[-600:]!r}")
        else:
            print(f"rank 2 with other flags: exit 2, {expected!r}...")

        # Rank 2 killed after its first record (mpirun names it); then 2 ranks resume.
        def killed(step):
            named = [line.strip() for line in step.stderr.splitlines() if "rank 2" in line and "signal 9" in line]
            return named[0] if step.returncode != 0 and named else None

        fail_then_resume(args.bin, env, os.path.join(tmp, "killed"), "2:1:kill", killed,
                         lambda cmd: mpi(2, cmd, env), "--resume under mpirun -n 2", reference, failures)

        # Rank 1 fails with an error after its first record (our one line, exit 2); then one
        # process resumes without mpirun.
        expected = "attngeom: MPI rank 1 of 3 failed: ATTNGEOM_TEST_FAIL_RANK: rank 1 fails after 1 record sent"

        def failed(step):
            ours = [line for line in step.stderr.splitlines() if line.startswith("attngeom: MPI rank")]
            return ours[0] if step.returncode == 2 and len(ours) == 1 and ours[0].startswith(expected) else None

        fail_then_resume(args.bin, env, os.path.join(tmp, "failed"), "1:1:error", failed,
                         lambda cmd: run(cmd, env), "--resume by one process", reference, failures)
    return report(failures)


def report(failures):
    for f in failures[:20]:
        print("FAIL", f)
    print(f"cluster_mpi: {'FAILED' if failures else 'passed'} ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
