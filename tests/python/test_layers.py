#!/usr/bin/python3
"""The folders of src/ include each other as docs/architecture.md's layer diagram says.

  test_layers.py --source DIR

The diagram is the fenced block between `<!-- layers:begin -->` and `<!-- layers:end -->`,
one line a folder: `analysis -> capture, corpus, util` (the folders it may include; nothing
after the arrow: none), and what follows a `#` a comment. Fails when a file of src/F/ includes "G/..." for a G that F's line
does not list, when a line lists a G that no file of F includes (the diagram would claim more
than the code does), when a folder of src/ has no line or a line names no folder, or when
the diagram has a cycle.
"""
import argparse
import os
import re
import sys

BEGIN, END = "<!-- layers:begin -->", "<!-- layers:end -->"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/[^"]+"', re.M)
SOURCE = (".h", ".cc", ".in")


def read_diagram(readme):
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        sys.exit(f"{readme}: no layer diagram between {BEGIN} and {END}")
    block = text[text.index(BEGIN) + len(BEGIN):text.index(END)]
    allowed = {}
    for line in block.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("```"):
            continue
        if "->" not in line:
            sys.exit(f"{readme}: layer diagram line {line!r} is not 'folder -> folder, ...'")
        name, targets = (part.strip() for part in line.split("->", 1))
        if name in allowed:
            sys.exit(f"{readme}: layer diagram lists {name} twice")
        allowed[name] = {t.strip() for t in targets.split(",") if t.strip()}
    return allowed


def read_includes(src):
    """{folder: {included folder: first 'file:line' that includes it}} over src/*/."""
    used = {}
    for folder in sorted(os.listdir(src)):
        top = os.path.join(src, folder)
        if not os.path.isdir(top):
            continue
        edges = used.setdefault(folder, {})
        for root, _, files in os.walk(top):
            for name in sorted(files):
                if not name.endswith(SOURCE):
                    continue
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                for match in INCLUDE.finditer(text):
                    target = match.group(1)
                    if target != folder and os.path.isdir(os.path.join(src, target)):
                        line = text.count("\n", 0, match.start()) + 1
                        edges.setdefault(target, f"{os.path.relpath(path, os.path.dirname(src))}:{line}")
    return used


def find_cycle(graph):
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return path + [node, nxt]
            if nxt not in state:
                cycle = visit(nxt, path + [node])
                if cycle:
                    return cycle
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node, [])
            if cycle:
                return cycle[cycle.index(cycle[-1]):]
    return None


def check(source):
    readme = os.path.join(source, "docs", "architecture.md")
    allowed = read_diagram(readme)
    used = read_includes(os.path.join(source, "src"))
    problems = []
    for folder in sorted(set(used) - set(allowed)):
        problems.append(f"src/{folder}/ has no line in docs/architecture.md's layer diagram")
    for folder in sorted(set(allowed) - set(used)):
        problems.append(f"docs/architecture.md's layer diagram names {folder}, which is no folder of src/")
    for folder in sorted(set(used) & set(allowed)):
        for target, where in sorted(used[folder].items()):
            if target not in allowed[folder]:
                problems.append(f"{where}: {folder} includes {target}/, which the layer diagram does not allow "
                                f"({folder} -> {', '.join(sorted(allowed[folder])) or 'nothing'})")
        for target in sorted(allowed[folder] - set(used[folder])):
            problems.append(f"docs/architecture.md's layer diagram allows {folder} -> {target}, which no file of src/{folder}/ uses")
    cycle = find_cycle(allowed)
    if cycle:
        problems.append("docs/architecture.md's layer diagram has a cycle: " + " -> ".join(cycle))
    return problems, used


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True, help="the repository root")
    args = ap.parse_args()
    problems, used = check(args.source)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"layers: {len(used)} folders, {sum(len(e) for e in used.values())} include edges, as docs/architecture.md's diagram says")


if __name__ == "__main__":
    main()
