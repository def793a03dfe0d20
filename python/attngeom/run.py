"""attngeom.analyze (the main job) and attngeom.load_run (a run directory's tables)."""
import csv
import json
import os

import numpy as np

from . import _attngeom


class Run:
    """A run directory: `path`, `info` (run.json) and `tables` ({name: table} for every CSV,
    e.g. "selection", "heads"; pandas DataFrames if pandas is installed, else numpy
    structured arrays). `run["heads"]` is `run.tables["heads"]`."""

    def __init__(self, path, info, tables):
        self.path, self.info, self.tables = path, info, tables

    def __getitem__(self, name):
        return self.tables[name]

    def __repr__(self):
        return f"attngeom.Run({self.path!r}, tables={sorted(self.tables)})"


def _numpy_table(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows:
        return np.zeros(0)
    header, body = rows[0], rows[1:]
    columns = []
    for i, name in enumerate(header):
        cells = [r[i] if i < len(r) else "" for r in body]
        try:
            column = np.array([float(c) if c != "" else np.nan for c in cells])
            if column.size and np.all(np.isfinite(column)) and np.all(column == np.round(column)) and \
                    all("." not in c and "e" not in c.lower() for c in cells):
                column = column.astype(np.int64)
        except ValueError:
            column = np.array(cells, dtype=object)
        columns.append(column)
    return np.rec.fromarrays(columns, names=header) if header else np.zeros(0)


def _read_table(path):
    try:
        import pandas
    except ImportError:
        return _numpy_table(path)
    return pandas.read_csv(path)


def load_run(path):
    """Reads a run directory (of analyze, demo, metrics or merge): run.json and every table."""
    path = os.fspath(path)
    info_path = os.path.join(path, "run.json")
    if not os.path.isdir(path):
        raise FileNotFoundError(f"{path}: run directory not found")
    if not os.path.isfile(info_path):
        raise FileNotFoundError(f"{info_path}: not found (not a run directory)")
    with open(info_path, encoding="utf-8") as f:
        info = json.load(f)
    tables = {name[:-4]: _read_table(os.path.join(path, name))
              for name in sorted(os.listdir(path)) if name.endswith(".csv")}
    return Run(path, info, tables)


def analyze(model, data, out, **options):
    """Runs `attngeom analyze --model MODEL --data DATA --out OUT` and returns load_run(out).

    data: a path or a list of corpus files or folders. options: analyze's settings by their
    setting names, the flags without "--" and with "_" (seq_len=64, num_seqs=4,
    queries="all", every_n=True, bounds=False, shard=(0, 2), lengths=[128, 256],
    precision="fp32", threads=2, resume=True, memory_check="off", ...; docs/cli.md lists
    them). Progress: a start line and a line per sequence on sys.stderr, none with quiet=True;
    progress=callable receives {"done", "total", "tokens_per_s", "eta_s"} after each sequence
    instead of the lines. An unknown name is a TypeError
    naming it and the nearest known one; a bad value a ValueError with the CLI's message.
    """
    data = [os.fspath(data)] if isinstance(data, (str, os.PathLike)) else [os.fspath(d) for d in data]
    _attngeom._analyze(os.fspath(model), data, os.fspath(out), options)
    return load_run(out)


def metrics(dumps, out, **options):
    """Runs `attngeom metrics --dump DUMP ... --out OUT` and returns load_run(out).

    dumps: a capture dump or a list of them (attngeom.write_dump writes one from any arrays,
    e.g. a transformers model's attentions and value states). options: the geometry and table
    settings analyze takes (every_n=True, bounds=False, top_k=8, per_sequence=True, ...),
    label, overwrite and threads. An unknown name is a TypeError naming it and the nearest
    known one; a bad value a ValueError with the CLI's message.
    """
    dumps = [os.fspath(dumps)] if isinstance(dumps, (str, os.PathLike)) else [os.fspath(d) for d in dumps]
    _attngeom._metrics(dumps, os.fspath(out), options)
    return load_run(out)


def option_names():
    """The keyword options analyze accepts."""
    return sorted(_attngeom._option_names())
