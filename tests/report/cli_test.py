#!/usr/bin/python3
"""`attngeom report` on good and bad run directories.

    cli_test.py --attngeom BIN --work DIR

Bad input (missing or corrupt required files, a corrupt optional file, a bad --out)
must exit 2 with one line on stderr that names the file, and leave no output
behind. A run without optional files, and the same run given twice, must render.
"""
import json
import pathlib
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from script_common import fresh_folder, test_arguments  # noqa: E402

failures = []


def make_run(path, *args):
    subprocess.run([sys.executable, str(HERE / "make_run.py"), str(path)] + list(args), check=True)


def rewrite(path, edit):
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")


def drop_column(text, name):
    lines = text.splitlines()
    i = lines[0].split(",").index(name)
    return "\n".join(",".join(f for j, f in enumerate(l.split(",")) if j != i) for l in lines) + "\n"


def replace_cell(text, line, column, value):
    lines = text.splitlines()
    i = lines[0].split(",").index(column)
    fields = lines[line - 1].split(",")
    fields[i] = value
    lines[line - 1] = ",".join(fields)
    return "\n".join(lines) + "\n"


# name -> (how to break a fresh run dir, text the one-line error must contain)
BAD_RUNS = {
    "missing heads.csv": (lambda d: (d / "heads.csv").unlink(), "heads.csv: missing"),
    "missing profile_layers.csv": (lambda d: (d / "profile_layers.csv").unlink(), "profile_layers.csv: missing"),
    "missing run.json": (lambda d: (d / "run.json").unlink(), "run.json: missing"),
    "ragged selection row": (lambda d: rewrite(d / "selection.csv", lambda t: t.replace("\n", ",7\n", 5).replace(",7\n", "\n", 4)),
                             "selection.csv:5: expected"),
    "bad number": (lambda d: rewrite(d / "sink_recall.csv", lambda t: replace_cell(t, 3, "pearson", "abc")),
                   "sink_recall.csv:3: column 'pearson': expected a number"),
    "missing column": (lambda d: rewrite(d / "heads.csv", lambda t: drop_column(t, "rho0")),
                       "heads.csv: missing column(s) 'rho0'"),
    "unknown label": (lambda d: rewrite(d / "heads.csv", lambda t: replace_cell(t, 4, "label", "wizard")),
                      "heads.csv:4: column 'label': unknown label 'wizard'"),
    "bad flag": (lambda d: rewrite(d / "heads.csv", lambda t: replace_cell(t, 2, "flag_no_sink", "2")),
                 "heads.csv:2: column 'flag_no_sink': must be 0 or 1"),
    "empty layers.csv": (lambda d: (d / "layers.csv").write_text(""), "layers.csv: empty file"),
    "header-only layers.csv": (lambda d: rewrite(d / "layers.csv", lambda t: t.splitlines()[0] + "\n"),
                               "layers.csv: no data rows"),
    "invalid run.json": (lambda d: (d / "run.json").write_text("{not json"), "run.json: invalid JSON"),
    "wrong format": (lambda d: rewrite(d / "run.json", lambda t: t.replace("attngeom-run-v1", "attngeom-run-v0")),
                     "run.json: 'format' must be"),
    "corrupt optional pruning.csv": (lambda d: rewrite(d / "pruning.csv", lambda t: drop_column(t, "kl")),
                                     "pruning.csv: missing column(s) 'kl'"),
    "corrupt optional length_sweep.csv": (lambda d: rewrite(d / "length_sweep.csv", lambda t: replace_cell(t, 2, "n", "x")),
                                          "length_sweep.csv:2: column 'n'"),
    # Well-formed but impossible for the run (run_checks.h).
    "head outside the model": (lambda d: rewrite(d / "heads.csv", lambda t: replace_cell(t, 2, "layer", "99")),
                               "heads.csv:2: column 'layer': 99 is outside the run's 2 layers"),
    "duplicated head": (lambda d: rewrite(d / "heads.csv", lambda t: replace_cell(t, 3, "head", "0")),
                        "heads.csv:3: column 'layer, head': a second row"),
    "N outside the grid": (lambda d: rewrite(d / "selection.csv", lambda t: replace_cell(t, 2, "n", "1000")),
                           "selection.csv:2: column 'n': 1000 is not an N of the run's grid"),
    "precision above 1": (lambda d: rewrite(d / "selection.csv", lambda t: replace_cell(t, 3, "precision_mean", "1.5")),
                          "selection.csv:3: column 'precision_mean': 1.5 is outside [0, 1]"),
    "estimate outside its interval": (
        lambda d: rewrite(d / "sink_recall.csv", lambda t: replace_cell(replace_cell(replace_cell(
            t, 2, "pearson", "0.99"), 2, "pearson_lo", "0.1"), 2, "pearson_hi", "0.5")),
        "sink_recall.csv:2: column 'pearson': the estimate lies outside its own interval"),
    "type shares above 1": (lambda d: rewrite(d / "layers.csv", lambda t: replace_cell(replace_cell(
        t, 2, "retriever_share", "0.7"), 2, "mixer_share", "0.7")), "layers.csv:2: column 'retriever_share': the four"),
    "repeated pruning row": (lambda d: rewrite(d / "pruning.csv", lambda t: t + t.splitlines()[1] + "\n"),
                             "column 'strategy, seed, fraction': a second row"),
    "corrupt optional experts.csv": (lambda d: rewrite(d / "experts.csv", lambda t: drop_column(t, "share")),
                                     "experts.csv: missing column(s) 'share'"),
    "expert share above 1": (lambda d: rewrite(d / "experts.csv", lambda t: replace_cell(t, 2, "share", "1.5")),
                             "experts.csv:2: column 'share': 1.5 is outside [0, 1]"),
    "negative expert tokens": (lambda d: rewrite(d / "experts.csv", lambda t: replace_cell(t, 3, "tokens", "-3")),
                               "experts.csv:3: column 'tokens': -3 is negative"),
    "more routing flips than tokens": (
        lambda d: rewrite(d / "routing.csv", lambda t: replace_cell(t, 2, "routing_flips", "99999")),
        "routing.csv:2: column 'routing_flips': 99999 is outside"),
    "routing of a layer the model lacks": (lambda d: rewrite(d / "routing.csv", lambda t: replace_cell(t, 2, "layer", "7")),
                                           "routing.csv:2: column 'layer': 7 is outside the run's 2 layers"),
    "run.json without the model's shape": (
        lambda d: rewrite(d / "run.json", lambda t: t.replace('"layers"', '"stories"', 1)), "'model.layers' must be"),
}


def check_expert_tables(run, tables, failures):
    """experts.csv and routing.csv as the report carries them, each run's rows, flips as a share of tokens."""
    experts = [line.split(",") for line in (run / "experts.csv").read_text().splitlines()[1:]]
    routing = [line.split(",") for line in (run / "routing.csv").read_text().splitlines()[1:]]
    carried = [r for r in tables.get("experts", {}).get("rows", []) if r[0] == "organism"]
    if [[int(r[1]), int(r[2]), int(r[3]), float(r[4])] for r in carried] != \
            [[int(e[0]), int(e[1]), int(e[2]), float(e[3])] for e in experts]:
        failures.append("experts table differs from experts.csv: %s" % carried[:3])
    shares = [r[4] for r in tables.get("routing", {}).get("rows", []) if r[0] == "organism"]
    if shares != [int(r[2]) / int(r[1]) for r in routing]:
        failures.append("routing flip shares %s, expected flips / tokens of %s" % (shares, routing))


def expect_error(name, args, needle, out):
    p = subprocess.run(args, capture_output=True, text=True)
    lines = p.stderr.strip().splitlines()
    if p.returncode != 2 or len(lines) != 1 or needle not in lines[0] or not lines[0].startswith("attngeom: error: "):
        failures.append("%s: exit %d, stderr %r (wanted exit 2 and one line containing %r)" % (name, p.returncode, p.stderr, needle))
    elif out.exists() or list(out.parent.glob(out.name + ".tmp*")):
        failures.append("%s: left %s behind" % (name, out))
    else:
        print("ok   %-36s %s" % (name, lines[0]))


def main():
    a = test_arguments().parse_args()
    work = fresh_folder(a.work)
    good = work / "good"
    make_run(good, "--label", "organism", "--layers", "2", "--heads", "4", "--seq-len", "64", "--experts", "4")
    out = work / "out.html"

    for name, (breaker, needle) in BAD_RUNS.items():
        d = work / name.replace(" ", "_")
        shutil.copytree(good, d)
        breaker(d)
        expect_error(name, [a.attngeom, "report", str(d), "--out", str(out)], needle, out)
        # A bad run among good ones fails the whole report too.
        expect_error(name + " (2nd run)", [a.attngeom, "report", str(good), str(d), "--out", str(out)], needle, out)
    expect_error("not a directory", [a.attngeom, "report", str(work / "nope"), "--out", str(out)], "not a directory", out)
    expect_error("--out in a missing directory", [a.attngeom, "report", str(good), "--out", str(work / "no" / "r.html")],
                 "does not exist", work / "no" / "r.html")
    expect_error("--out is a directory", [a.attngeom, "report", str(good), "--out", str(work)], "is a directory", out)
    p = subprocess.run([a.attngeom, "report", "--out", str(out)], capture_output=True, text=True)
    if p.returncode != 2:
        failures.append("no run directory: exit %d" % p.returncode)

    expect_error("the same run twice", [a.attngeom, "report", str(good), str(good / "."), "--out", str(out)],
                 "given twice", out)

    # Good cases: no optional files; two copies of a run and a third labelled like the
    # second's made-up label (labels made unique); --title.
    copy = work / "copy"
    shutil.copytree(good, copy)
    minimal = work / "minimal"
    make_run(minimal, "--minimal", "--layers", "2", "--heads", "2", "--seq-len", "32")
    relabelled = work / "relabelled"  # labelled like the second copy's made-up label
    shutil.copytree(good, relabelled)
    run_json = json.loads((relabelled / "run.json").read_text())
    run_json["label"] = "organism (2)"
    (relabelled / "run.json").write_text(json.dumps(run_json))
    unfinished = work / "unfinished"  # a run whose run.json says it is not complete
    shutil.copytree(good, unfinished)
    run_json = json.loads((unfinished / "run.json").read_text())
    run_json["complete"] = False
    (unfinished / "run.json").write_text(json.dumps(run_json))
    p = subprocess.run([a.attngeom, "report", str(unfinished), "--out", str(out)], capture_output=True, text=True)
    data = json.loads(out.read_text(encoding="utf-8").split('id="attngeom-data">', 1)[1].split("</script>", 1)[0]) \
        if p.returncode == 0 else {"runs": []}
    if not any("run not complete" in dict(r["provenance"])["Sequences"] for r in data["runs"]):
        failures.append("an incomplete run is not marked in the provenance: exit %d %s" % (p.returncode, p.stderr))
    if out.exists():
        out.unlink()
    for args in ([str(minimal)], [str(good), str(copy), str(relabelled)]):
        p = subprocess.run([a.attngeom, "report"] + args + ["--out", str(out), "--title", "A <b>title</b> & more"],
                           capture_output=True, text=True)
        if p.returncode != 0 or not out.exists():
            failures.append("report %s: exit %d, %s" % (args, p.returncode, p.stderr))
            continue
        html = out.read_text(encoding="utf-8")
        if "<title>A &lt;b&gt;title&lt;/b&gt; &amp; more</title>" not in html:
            failures.append("the title is not escaped in <title>")
        data = json.loads(html.split('id="attngeom-data">', 1)[1].split("</script>", 1)[0])
        labels = [r["label"] for r in data["runs"]]
        sequences = [dict(r["provenance"])["Sequences"] for r in data["runs"]]
        if any("not complete" in s for s in sequences):
            failures.append("a complete run is shown as incomplete: %s" % sequences)
        if len(args) == 3 and labels != ["organism", "organism (2)", "organism (2) (2)"]:
            failures.append("duplicate labels not made unique: %s" % labels)
        if len(args) == 1 and any(k in data["tables"] for k in ("length_sweep", "pruning", "experts", "routing")):
            failures.append("optional tables present for a run without them: %s" % list(data["tables"]))
        if len(args) == 3:
            check_expert_tables(good, data["tables"], failures)
        print("ok   report %s" % " ".join(pathlib.Path(x).name for x in args))
        out.unlink()

    # The fp32 path leaves routing_flips empty: the report carries null, not a number.
    fp32 = work / "fp32-routing"
    shutil.copytree(good, fp32)
    rewrite(fp32 / "routing.csv", lambda t: "".join(line.rsplit(",", 1)[0] + ",\n" if i else line + "\n"
                                                   for i, line in enumerate(t.splitlines())))
    p = subprocess.run([a.attngeom, "report", str(fp32), "--out", str(out)], capture_output=True, text=True)
    routing = json.loads(out.read_text(encoding="utf-8").split('id="attngeom-data">', 1)[1].split("</script>", 1)[0]
                         )["tables"]["routing"]["rows"] if p.returncode == 0 else None
    if routing is None or any(r[3] is not None or r[4] is not None for r in routing):
        failures.append("fp32 routing (no flips): exit %d, rows %s, %s" % (p.returncode, routing, p.stderr))
    else:
        print("ok   report of a run routed in fp32")
    out.unlink(missing_ok=True)

    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
