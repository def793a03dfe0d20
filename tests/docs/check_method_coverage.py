#!/usr/bin/env python3
"""Every output column named in docs/run_format.md must be defined in docs/method.md.

Names are read from run_format.md's sections about tables and arrays (headings that name
a `.csv` file, `synth/` or the `.npy` files): every back-quoted name, or comma-separated
list of names, in them (`layer, head, kv_head, n`, `label`, `sink_mass.npy`). That takes
in a few values and symbols besides the columns (`retriever`, `s_N`), which method.md
defines as well. `m_*` names are templates (`m_mean` for each metric m of the same
section) and are expanded; file names and `nan` are skipped. A name counts as covered
when docs/method.md has it in back quotes (alone or in such a list). Exits 1 listing the
missing names.
"""
import pathlib
import re
import sys

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
SKIP = {"nan", "m"}


def sections(text):
    """(heading, body) pairs of the '## ' sections."""
    parts = re.split(r"^## +(.*)$", text, flags=re.M)
    return list(zip(parts[1::2], parts[2::2]))


def quoted_names(text):
    """Names in back quotes, alone or in comma-separated lists, in order."""
    names = []
    for span in re.findall(r"`([^`]+)`", text):
        names += [t.strip() for t in span.split(",") if NAME.match(t.strip())]
    return names


def columns(run_format):
    """name -> heading of the run_format.md section that names it."""
    found = {}
    for heading, body in sections(run_format):
        if not re.search(r"\.csv|synth/|npy", heading):
            continue
        names = quoted_names(body)
        metrics = next((s for s in ([t.strip() for t in span.split(",")] for span in re.findall(r"`([^`]+)`", body))
                        if "precision" in s and "recall" in s and len(s) > 2), [])
        for name in names:
            if name in SKIP or name.endswith(".csv"):
                continue
            if name.startswith("m_"):
                for metric in metrics:
                    found.setdefault(metric + name[1:], heading)
                continue
            found.setdefault(name[: -len(".npy")] if name.endswith(".npy") else name, heading)
    return found


def main():
    root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2]
    run_format = (root / "docs" / "run_format.md").read_text(encoding="utf-8")
    method_path = root / "docs" / "method.md"
    if not method_path.is_file():
        print(f"{method_path}: missing")
        return 1
    method = method_path.read_text(encoding="utf-8")
    defined = set()
    for span in re.findall(r"`([^`]+)`", method):
        defined.update(t.strip() for t in re.split(r"[,\s]+", span) if t.strip())
    cols = columns(run_format)
    if len(cols) < 100:
        print(f"docs/run_format.md: only {len(cols)} column names found; the parser no longer matches its layout")
        return 1
    missing = [f"{name} ({heading})" for name, heading in cols.items() if name not in defined]
    if missing:
        print(f"docs/method.md does not define {len(missing)} names of docs/run_format.md:")
        for line in missing:
            print("  " + line)
        return 1
    print(f"docs/method.md covers all {len(cols)} names of docs/run_format.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
