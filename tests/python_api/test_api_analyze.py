#!/usr/bin/python3
"""python.api_analyze: attngeom.analyze writes the run `attngeom analyze` writes (every table
byte for byte), returns it as load_run reads it, and refuses unknown or bad options. With
--other-build (the sanitizer build's module against the release CLI) the tables are the same
files but not compared: a forward pass compiled otherwise rounds differently."""
import contextlib
import filecmp
import io
import json
import os
import warnings

import api_lib
import attngeom

args = api_lib.parse_args(cli=True)
model = os.path.join(args.fixtures, "llama")
cli_out, py_out = os.path.join(args.scratch, "cli-run"), os.path.join(args.scratch, "py-run")
api_lib.run(args.bin, "analyze", "--model", model, "--data", api_lib.CORPUS, "--out", cli_out, "--seq-len", "32",
            "--num-seqs", "2", "--queries", "stride:8", "--precision", "fp32", "--top-k", "4", "--no-bounds",
            "--threads", "2")
run = attngeom.analyze(model=model, data=api_lib.CORPUS, out=py_out, seq_len=32, num_seqs=2, queries="stride:8",
                       precision="fp32", top_k=4, bounds=False, threads=2)
tables = sorted(f for f in os.listdir(cli_out) if f.endswith((".csv", ".npy")))
assert tables, f"{cli_out}: no tables"
for name in tables:
    assert os.path.isfile(os.path.join(py_out, name)), f"{name} missing"
    same = filecmp.cmp(os.path.join(cli_out, name), os.path.join(py_out, name), shallow=False)
    assert same or args.other_build, f"{name} differs"
assert os.path.isfile(os.path.join(py_out, "report.html")), "no report.html"
assert run.info["seq_len"] == 32 and run.info["complete"], run.info
assert set(run.tables) == {t[:-4] for t in tables if t.endswith(".csv")}, sorted(run.tables)
heads = run["heads"]
assert len(heads) == 2 * 4, f"heads table has {len(heads)} rows, expected layers x heads = 8"
compared = " (not compared: --other-build)" if args.other_build else ", each equal to the CLI's"
print(f"ok: analyze wrote the CLI's {len(tables)} tables{compared}; load_run read {sorted(run.tables)}")


def refuses(exc, fragment, call):
    try:
        call()
    except exc as e:
        assert fragment in str(e), f"{exc.__name__} {e!r} does not mention {fragment!r}"
        assert "\n" not in str(e), f"message is not one line: {e!r}"
        assert "--" not in str(e), f"names a CLI flag, not the keyword argument: {e!r}"
        print(f"ok: {exc.__name__}: {e}")
        return
    raise AssertionError(f"expected {exc.__name__} mentioning {fragment!r}")


bad_out = os.path.join(args.scratch, "bad")
refuses(TypeError, "'seq_lenn' (did you mean seq_len?)",
        lambda: attngeom.analyze(model=model, data=api_lib.CORPUS, out=bad_out, seq_lenn=4))
refuses(ValueError, "memory_check", lambda: attngeom.analyze(model=model, data=api_lib.CORPUS, out=bad_out,
                                                             memory_check="never"))
refuses(TypeError, "seq_len", lambda: attngeom.analyze(model=model, data=api_lib.CORPUS, out=bad_out, seq_len="32"))
refuses(ValueError, "seq_len", lambda: attngeom.analyze(model=model, data=api_lib.CORPUS, out=bad_out, seq_len=1))
refuses(ValueError, "r2_delta", lambda: attngeom.analyze(model=model, data=api_lib.CORPUS, out=bad_out, r2_delta=0.9))
refuses(ValueError, "queries", lambda: attngeom.analyze(model=model, data=api_lib.CORPUS, out=bad_out, queries="bogus"))
refuses(FileNotFoundError, "model directory not found",
        lambda: attngeom.analyze(model=bad_out + "-none", data=api_lib.CORPUS, out=bad_out))
refuses(FileNotFoundError, "corpus file or folder not found",
        lambda: attngeom.analyze(model=model, data=bad_out + ".txt", out=bad_out, seq_len=32, num_seqs=1))
short_text = os.path.join(args.scratch, "short.txt")
with open(short_text, "w", encoding="utf-8") as f:
    f.write("just a few words")
refuses(ValueError, "try pack or a smaller seq_len or skip",
        lambda: attngeom.analyze(model=model, data=short_text, out=bad_out, seq_len=32))
refuses(ValueError, "already", lambda: attngeom.analyze(model=model, data=api_lib.CORPUS, out=py_out, seq_len=32))
refuses(FileNotFoundError, "not found", lambda: attngeom.load_run(bad_out + "-none"))
assert not os.path.exists(bad_out), "a refused call left an output directory"

# The run's warnings are Python warnings naming keyword arguments, its progress goes to sys.stderr.
warn_out = os.path.join(args.scratch, "warned")
progress = io.StringIO()
with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(progress):
    warnings.simplefilter("always")
    attngeom.analyze(model=model, data=short_text, out=warn_out, seq_len=4, num_seqs=50, pack=True,
                     precision="fp32", threads=2)
messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
assert any(m.startswith("num_seqs 50, but the corpus gives") for m in messages), messages
assert not any("--" in m for m in messages), f"a warning names a CLI flag: {messages}"
assert "attngeom: sequence 1/" in progress.getvalue(), f"no progress on sys.stderr: {progress.getvalue()!r}"
print(f"ok: analyze warned through Python's warnings: {messages[0]}")

# Before the first sequence, the start line on sys.stderr; a .jsonl name implies format="jsonl";
# every sequence drawn from one document is a warning.
assert progress.getvalue().startswith("attngeom: llama, fp32 on cpu: "), progress.getvalue()[:200]
jsonl = os.path.join(args.scratch, "docs.jsonl")
with open(api_lib.CORPUS, encoding="utf-8") as f, open(jsonl, "w", encoding="utf-8") as g:
    g.write((json.dumps({"text": f.read()}) + "\n") * 2)
with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(io.StringIO()):
    warnings.simplefilter("always")
    run = attngeom.analyze(model=model, data=jsonl, out=os.path.join(args.scratch, "jsonl"), seq_len=32, num_seqs=2,
                           precision="fp32", threads=2)
messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
assert run.info["corpus"]["format"] == "jsonl", run.info["corpus"]
assert any(m.startswith("all 2 sequences come from one document") and "--" not in m for m in messages), messages
print("ok: analyze read docs.jsonl as jsonl and warned that one document gives every sequence")

# quiet=True shows no progress; memory_check is a keyword like the CLI's flag.
quiet_out = os.path.join(args.scratch, "quiet")
progress = io.StringIO()
with contextlib.redirect_stderr(progress):
    attngeom.analyze(model=model, data=short_text, out=quiet_out, seq_len=4, num_seqs=2, pack=True, precision="fp32",
                     threads=2, quiet=True, memory_check="off")
assert progress.getvalue() == "", f"quiet=True printed {progress.getvalue()!r}"
with open(os.path.join(quiet_out, "run.json")) as f:
    assert json.load(f)["complete"], "the quiet run did not complete"
print("ok: quiet=True prints no progress; memory_check='off' accepted")
