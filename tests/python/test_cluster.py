#!/usr/bin/env python3
"""`analyze --shard auto` and docs/cluster.md's sbatch scripts, without Slurm.

  test_cluster.py --bin PATH/attngeom --fixtures DIR

The analyze script of docs/cluster.md runs once per task of an array --array=1-3, with
the variables Slurm would set (SLURM_ARRAY_TASK_ID, _MIN, _MAX, _COUNT) set by hand; its
merge script then combines the shards, and the merged tables must equal one process's
run (counts exactly, numbers within 1e-12). The submit snippet must make the merge depend
on the array (--dependency=afterok). Then the environment's other forms and errors: an
MPI rank (Open MPI's and PMI's variables) gives its shard, and missing or disagreeing
variables are refused with an error naming them.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_analysis_runs import CORPUS, analyze_args, compare_tables  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTER_DOC = os.path.join(HERE, "..", "..", "docs", "cluster.md")
SLURM_AND_MPI = ["SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_COUNT",
                 "SLURM_CPUS_PER_TASK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE"]


def doc_block(name):
    """The ```bash block after <!-- cluster:NAME --> in docs/cluster.md."""
    text = open(CLUSTER_DOC).read()
    match = re.search(r"<!-- cluster:" + re.escape(name) + r" -->\s*```bash\n(.*?)```", text, re.S)
    if not match:
        raise SystemExit(f"docs/cluster.md: no ```bash block after <!-- cluster:{name} -->")
    return match.group(1)


def environment(**variables):
    env = {k: v for k, v in os.environ.items() if k not in SLURM_AND_MPI}
    env.update({k: str(v) for k, v in variables.items()})
    return env


def check_sbatch_scripts(args, tmp, failures):
    flags = analyze_args(args.bin, args.fixtures)[2:]  # the fixture's flags after "analyze"
    model, data = flags[flags.index("--model") + 1], flags[flags.index("--data") + 1]
    rest = [f for i, f in enumerate(flags) if f not in ("--model", "--data", "--threads")
            and flags[i - 1] not in ("--model", "--data", "--threads")]
    reference = os.path.join(tmp, "single")
    subprocess.run([args.bin, "analyze", "--model", model, "--data", data, *rest, "--threads", "1",
                    "--out", reference], check=True, capture_output=True)
    scripts = {}
    for name in ("analyze.sbatch", "merge.sbatch"):
        scripts[name] = os.path.join(tmp, name)
        with open(scripts[name], "w") as f:
            f.write(doc_block(name))
    run = os.path.join(tmp, "runs", "fixture")
    common = dict(ATTNGEOM=args.bin, MODEL=model, DATA=data, RUN=run, ANALYZE_FLAGS=" ".join(rest))
    for task in (1, 2, 3):  # --array=1-3: shard = ID - MIN
        step = subprocess.run(["bash", scripts["analyze.sbatch"]], capture_output=True, text=True,
                              env=environment(**common, SLURM_ARRAY_TASK_ID=task, SLURM_ARRAY_TASK_MIN=1,
                                              SLURM_ARRAY_TASK_MAX=3, SLURM_ARRAY_TASK_COUNT=3, SLURM_CPUS_PER_TASK=1))
        if step.returncode != 0:
            failures.append(f"analyze.sbatch task {task}: exit {step.returncode}: {step.stderr.strip()[-300:]}")
            return
        with open(os.path.join(run + ".shards", str(task), "run.json")) as f:
            shard = json.load(f)["settings"]["shard"]
        if shard != [task - 1, 3]:
            failures.append(f"analyze.sbatch task {task}: shard {shard}, expected {[task - 1, 3]}")
    merge = subprocess.run(["bash", scripts["merge.sbatch"]], capture_output=True, text=True, env=environment(**common))
    if merge.returncode != 0:
        failures.append(f"merge.sbatch: exit {merge.returncode}: {merge.stderr.strip()[-300:]}")
        return
    worst = compare_tables(reference, run, failures)
    print(f"sbatch scripts: 3 array tasks merged vs single run: max relative difference {worst:.1e}")
    submit = doc_block("submit")
    if not re.search(r"sbatch --parsable analyze\.sbatch", submit) or "--dependency=afterok:" not in submit:
        failures.append("docs/cluster.md submit: the merge must depend on the array job (--dependency=afterok)")


def check_environment_forms(args, tmp, failures):
    base = analyze_args(args.bin, args.fixtures)
    mpi_out = os.path.join(tmp, "mpi")
    mpi = subprocess.run(base + ["--shard", "auto", "--out", mpi_out], capture_output=True, text=True,
                         env=environment(OMPI_COMM_WORLD_RANK=2, OMPI_COMM_WORLD_SIZE=3))
    if mpi.returncode != 0:
        failures.append(f"Open MPI rank 2 of 3: exit {mpi.returncode}: {mpi.stderr.strip()[-300:]}")
    else:
        with open(os.path.join(mpi_out, "run.json")) as f:
            shard = json.load(f)["settings"]["shard"]
        if shard != [2, 3]:
            failures.append(f"Open MPI rank 2 of 3: shard {shard}")
    refusals = [
        ({}, ["SLURM_ARRAY_TASK_ID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"]),
        ({"SLURM_ARRAY_TASK_ID": 0}, ["SLURM_ARRAY_TASK_COUNT"]),
        ({"SLURM_ARRAY_TASK_ID": 0, "SLURM_ARRAY_TASK_MIN": 0, "SLURM_ARRAY_TASK_MAX": 15,
          "SLURM_ARRAY_TASK_COUNT": 4}, ["SLURM_ARRAY_TASK_COUNT=4", "SLURM_ARRAY_TASK_MAX=15"]),
        ({"SLURM_ARRAY_TASK_ID": 9, "SLURM_ARRAY_TASK_MIN": 1, "SLURM_ARRAY_TASK_MAX": 3}, ["SLURM_ARRAY_TASK_ID=9"]),
        ({"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": 3}, ["SLURM_ARRAY_TASK_ID='x'"]),
        ({"SLURM_ARRAY_TASK_ID": 0, "SLURM_ARRAY_TASK_MIN": 0}, ["SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX"]),
        ({"PMI_RANK": 1}, ["PMI_RANK", "PMI_SIZE"]),
        ({"OMPI_COMM_WORLD_RANK": 3, "OMPI_COMM_WORLD_SIZE": 3}, ["OMPI_COMM_WORLD_RANK=3"]),
        ({"SLURM_ARRAY_TASK_ID": 0, "SLURM_ARRAY_TASK_COUNT": 2, "PMI_RANK": 0, "PMI_SIZE": 2},
         ["SLURM_ARRAY_TASK_ID", "MPI ranks"]),
    ]
    for variables, named in refusals:
        out = os.path.join(tmp, "refused")
        step = subprocess.run(base + ["--shard", "auto", "--out", out], capture_output=True, text=True,
                              env=environment(**variables))
        message = step.stderr.strip()
        if step.returncode != 2 or "--shard auto" not in message or not all(n in message for n in named) \
                or len(message.splitlines()) != 1 or os.path.exists(out):
            failures.append(f"{variables}: expected one line naming --shard auto and {named}, exit 2, no output; "
                            f"got exit {step.returncode}: {message!r}")
    print(f"environment: Open MPI rank 2 of 3 gives shard [2, 3]; {len(refusals)} inconsistent environments refused")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--fixtures", required=True)
    args = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="attngeom-cluster-") as tmp:
        check_sbatch_scripts(args, tmp, failures)
        check_environment_forms(args, tmp, failures)
    for f in failures[:20]:
        print("FAIL", f)
    print(f"cluster: {'FAILED' if failures else 'passed'} ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
