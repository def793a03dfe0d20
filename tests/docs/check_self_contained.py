#!/usr/bin/env python3
"""The repository refers to nothing outside itself: no source, test, tool or document
cites the old out-of-tree contract (a SPEC file in a sibling folder, "SPEC section N")
instead of docs/method.md. Exits 1 listing each offending line."""
import pathlib
import re
import sys

FOLDERS = ["src", "tests", "bench", "tools", "docs", "web", "scripts", "fuzz"]
SUFFIXES = {".cc", ".h", ".py", ".md", ".js", ".html", ".css", ".txt", ".cmake", ".sh"}
SIBLING = "shared"  # the sibling folder that held the contract, spelt apart so this file passes its own check
OUTSIDE = re.compile(r"\.\./" + SIBLING + r"|/work/" + SIBLING + r"|SPEC\.md|\bSPEC\b")


def files(root):
    yield root / "README.md"
    for folder in FOLDERS:
        base = root / folder
        if base.is_dir():
            for path in sorted(base.rglob("*")):
                if path.is_file() and (path.suffix in SUFFIXES or path.name == "CMakeLists.txt"):
                    yield path


def main():
    root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2]
    me = pathlib.Path(__file__).resolve()
    bad = []
    for path in files(root):
        if path.resolve() == me or "node_modules" in path.parts:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                bad.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    if bad:
        print("references outside the repository (cite docs/method.md section N instead):")
        print("\n".join("  " + b for b in bad))
        return 1
    print("no references outside the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main())
