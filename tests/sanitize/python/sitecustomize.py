"""Loaded at start-up by python3 in the sanitizer build's Python tests (their PYTHONPATH names
this folder; it stands in for Debian's sitecustomize, which only installs apport's hook).

numpy's import allocates objects that are never freed (code objects and types of its
compiled modules), which LeakSanitizer reports at exit. Importing numpy here with
LeakSanitizer paused for this thread leaves those out; every allocation after start-up,
attngeom's included, is still checked."""
import ctypes

_lsan = ctypes.CDLL(None)  # the preloaded sanitizer runtime's __lsan_* entry points
_lsan.__lsan_disable()
try:
    import numpy  # noqa: F401
finally:
    _lsan.__lsan_enable()
