#!/usr/bin/python3
"""python.api_import: the package imports, documents itself, and lists analyze's options."""
import sys

import attngeom

assert attngeom.__version__, "no version"
for name in ("Model", "selection", "analyze", "load_run"):
    assert getattr(attngeom, name).__doc__, f"attngeom.{name} has no docstring"
names = attngeom.run.option_names()
for expected in ("seq_len", "num_seqs", "every_n", "bounds", "top_k", "threads", "precision"):
    assert expected in names, f"analyze option {expected} missing from {names}"
print(f"ok: attngeom {attngeom.__version__} ({attngeom.git_commit}) from {attngeom.__file__}")
sys.exit(0)
