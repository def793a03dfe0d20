#!/usr/bin/python3
"""python.api_interrupt: Ctrl-C (SIGINT) stops a long call cleanly. A child python3 starts
the call and says so on stdout; SIGINT follows once the call is under way. The call must
raise KeyboardInterrupt from inside the call, with at most STOP_CPU_SECONDS of the child's CPU
time spent after the signal (CPU, not wall time, so that a loaded machine cannot fail it), and
leave the interpreter usable (a second call succeeds) and the process exiting 0:
  selection  attngeom.selection on rows that take minutes uninterrupted;
  analyze    attngeom.analyze interrupted after its first record: the run directory holds
             whole records only (no temporary file), run.json says incomplete, and
             analyze(resume=True) finishes it;
  capture    Model.capture: the forward pass runs to its end, then KeyboardInterrupt."""
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import api_lib

# The child's CPU time from the signal to KeyboardInterrupt: what is in flight finishes first
# (a selection row, an analyze sequence, a forward pass), a second or so even under the
# sanitizers, far below the minutes of CPU the selection call takes uninterrupted.
STOP_CPU_SECONDS = 10.0
HANG_SECONDS = 300  # the child is killed (and the test fails) past this
# The child: runs one long call (argv[1]), reports how long it ran before KeyboardInterrupt.
CHILD = r"""
import json, os, sys, time
import numpy as np
import attngeom

what, fixtures, out = sys.argv[1:4]
model_dir = os.path.join(fixtures, "llama")
if what == "selection":
    rng = np.random.default_rng(3)
    H, Q, T, d = 4, 256, 2048, 64
    logits = rng.normal(size=(H, Q, T)).astype(np.float32)
    for q in range(Q):
        logits[:, q, T - Q + q + 1:] = -np.inf  # causal: row q sees keys 0..T-Q+q
    attn = np.exp(logits - logits.max(axis=2, keepdims=True))
    attn /= attn.sum(axis=2, keepdims=True)  # [H, Q, T]
    values = rng.normal(size=(H, T, d)).astype(np.float32)  # [H_kv, T, d]
    call = lambda: attngeom.selection(attn, values, n_grid="all", threads=1)
    again = lambda: attngeom.selection(np.full((H, 64), 1 / 64), values[:, :64], threads=1)
elif what == "analyze":
    corpus = os.path.join(os.path.dirname(out), "corpus.txt")
    settings = dict(seq_len=256, num_seqs=6, queries="stride:8", pack=True, precision="fp32", threads=1)
    call = lambda: attngeom.analyze(model=model_dir, data=corpus, out=out, **settings)

    def again():  # the stopped run as it was left, then resumed to its end
        with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
            complete = json.load(f).get("complete", False)  # written once complete
        temporary = [n for _, _, names in os.walk(out) for n in names if ".tmp." in n]
        print(f"stopped complete={complete} records={len(os.listdir(os.path.join(out, 'records')))} "
              f"temporary={len(temporary)}", flush=True)
        run = attngeom.analyze(model=model_dir, data=corpus, out=out, resume=True, **settings)
        print(f"resumed complete={run.info['complete']}", flush=True)
else:
    model = attngeom.Model(model_dir, precision="fp32", threads=1)
    tokens = np.arange(model.config["max_positions"], dtype=np.int32) % model.config["vocab"]
    call = lambda: model.capture(tokens, queries="all")
    again = lambda: model.capture(tokens[:8])
print("calling", flush=True)
start = time.monotonic()
try:
    call()
except KeyboardInterrupt:
    cpu = os.times()
    print(f"interrupted after {time.monotonic() - start:.3f} s, cpu {cpu.user + cpu.system:.3f} s", flush=True)
    again()
    print("usable", flush=True)
    sys.exit(0)
print(f"finished after {time.monotonic() - start:.3f}", flush=True)
"""


def cpu_seconds(pid):
    """The user + system CPU time of process `pid` so far, all its threads (proc(5))."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def interrupt(what, fixtures, out, ready):
    """Runs the child on `what` and sends SIGINT once ready(seconds since it said "calling")
    holds; returns the child's stdout, the seconds it ran in the call before KeyboardInterrupt
    and the CPU seconds it spent from the signal to KeyboardInterrupt."""
    # stdout is read line by line as it comes; stderr goes to a file, so that neither pipe can fill.
    with tempfile.TemporaryFile("w+") as errors:
        proc = subprocess.Popen([sys.executable, "-B", "-c", CHILD, what, fixtures, out], stdout=subprocess.PIPE,
                                stderr=errors, text=True)
        watchdog = threading.Timer(HANG_SECONDS, proc.kill)
        watchdog.start()
        try:
            first = proc.stdout.readline()
            called = time.monotonic()
            while first == "calling\n" and not ready(time.monotonic() - called) and proc.poll() is None:
                time.sleep(0.01)
            cpu_at_signal = cpu_seconds(proc.pid) if proc.poll() is None else 0.0
            proc.send_signal(signal.SIGINT)
            said = proc.stdout.readline()
            stdout = first + said + proc.stdout.read()
            proc.wait()
        finally:
            watchdog.cancel()
        errors.seek(0)
        stderr = errors.read()
    assert first == "calling\n", f"{what}: child said {first!r}; stderr {stderr[-2000:]}"
    assert proc.returncode == 0 and said.startswith("interrupted after ") and "usable" in stdout.split(), \
        f"{what}: exit {proc.returncode}, stdout {stdout!r}, stderr {stderr[-2000:]}"
    ran, cpu = float(said.split()[2]), float(said.split()[5])
    spent = cpu - cpu_at_signal
    assert spent <= STOP_CPU_SECONDS, \
        f"{what}: {spent:.2f} s of CPU from SIGINT to KeyboardInterrupt (limit {STOP_CPU_SECONDS} s)"
    return stdout, ran, spent


def main():
    args = api_lib.parse_args(cli=False)
    scratch = args.scratch

    # selection: a second into a call that would run for minutes.
    _, ran, spent = interrupt("selection", args.fixtures, scratch, lambda since: since >= 1.0)
    assert ran >= 0.9, f"selection: KeyboardInterrupt after {ran:.2f} s, before the call was under way"
    print(f"ok: selection: KeyboardInterrupt {ran:.2f} s into the call, {spent:.2f} s of CPU after SIGINT")

    # analyze: after the first record, while later sequences are still to come.
    out = os.path.join(scratch, "run")
    with open(api_lib.CORPUS, encoding="utf-8") as f, open(os.path.join(scratch, "corpus.txt"), "w") as g:
        g.write(f.read() * 20)
    records = os.path.join(out, "records")
    stdout, ran, spent = interrupt(
        "analyze", args.fixtures, out,
        lambda since: os.path.isdir(records) and any(n.endswith(".safetensors") for n in os.listdir(records)))
    left = stdout.split("stopped ")[1].split("\n")[0]
    assert "complete=False" in left and "temporary=0" in left and "records=0" not in left, \
        f"analyze: the interrupted run is not a resumable one: {left}"
    assert "resumed complete=True" in stdout, f"analyze: resume=True did not finish the run: {stdout!r}"
    print(f"ok: analyze: KeyboardInterrupt {ran:.2f} s into the call, {spent:.2f} s of CPU after SIGINT; "
          f"left {left}, resumed to the end")

    # capture: the forward pass in flight finishes first.
    _, ran, spent = interrupt("capture", args.fixtures, scratch, lambda since: since >= 0.1)
    assert ran >= 0.1, f"capture: KeyboardInterrupt after {ran:.2f} s, before the call was under way"
    print(f"ok: capture: KeyboardInterrupt {ran:.2f} s into the call, {spent:.2f} s of CPU after SIGINT")


main()
