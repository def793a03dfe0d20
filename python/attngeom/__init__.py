"""attngeom in Python: the native engine of the ``attngeom`` CLI with numpy arrays in and out.

    import attngeom
    model = attngeom.Model("models/organism")
    dump = model.capture(model.tokenize("The cat sat on the mat."))
    geo = attngeom.selection(dump["layers.0.attn"], dump["layers.0.values"])
    print(geo["n"], geo["f"][:, -1])
    run = attngeom.hf(hf_model, "run", texts=["..."], tokenizer=tok)  # a transformers model

Errors are Python exceptions carrying the CLI's one-line message: ValueError for bad input,
FileNotFoundError for a missing file, TypeError for an argument of the wrong type or an
unknown option. Long calls release the GIL, and Ctrl-C stops them (KeyboardInterrupt).
See docs/python.md.
"""
from ._attngeom import __version__, git_commit
from .arrays import as_float32_array
from .dump import write_dump
from .huggingface import hf
from .model import Model
from .run import Run, analyze, load_run, metrics
from .selection import selection

__all__ = ["Model", "Run", "analyze", "as_float32_array", "hf", "load_run", "metrics", "selection", "write_dump",
           "__version__", "git_commit"]
