#!/usr/bin/python3
"""`attngeom --version` names the commit the binary was built from.

  test_version.py --bin PATH/attngeom --source DIR

The commit is read at every build (cmake/version_header.cmake), so it must match the
source tree's HEAD now, with "-dirty" exactly when tracked files differ from HEAD; outside
a git checkout it is "unknown". Run after building from the current tree.
"""
import argparse
import re
import subprocess
import sys


def expected_commit(source):
    head = subprocess.run(["git", "-C", source, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        return "unknown"
    dirty = subprocess.run(["git", "-C", source, "diff", "--quiet", "HEAD", "--"], capture_output=True).returncode != 0
    return head.stdout.strip() + ("-dirty" if dirty else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--source", required=True)
    args = ap.parse_args()
    out = subprocess.run([args.bin, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    match = re.fullmatch(r"\S+ \((\S+)\)", out)
    if not match:
        sys.exit(f"--version printed {out!r}, expected 'VERSION (COMMIT)'")
    want = expected_commit(args.source)
    if match.group(1) != want:
        sys.exit(f"--version names commit {match.group(1)!r}, the source tree is at {want!r} (rebuild after committing?)")
    print(f"--version: {out}")


if __name__ == "__main__":
    main()
