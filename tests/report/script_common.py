"""What the report's test scripts share: the --attngeom / --work command line, a fresh work
folder, and failing with one message."""
import argparse
import pathlib
import shutil
import sys


def test_arguments():
    """A parser that already takes --attngeom BIN and --work DIR; callers add their own."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--attngeom", required=True)
    ap.add_argument("--work", required=True)
    return ap


def fresh_folder(path):
    """path, emptied and created again."""
    work = pathlib.Path(path)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    return work


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)
