#!/usr/bin/python3
"""report.html is one self-contained file: no external resource of any kind.

    offline_test.py --attngeom BIN --work DIR

Renders a synthetic run and checks the HTML text: a restrictive Content-Security-
Policy; no <script src>, <link>, <img>, <iframe>, <object>, <embed>, <base> or
<source> element in the markup; in the whole file no src=/href=/url()/@import/
fetch()/import() pointing at http(s) or a protocol-relative URL; and outside the
three inlined libraries (our template, stylesheet, data and script) no http:// or
https:// at all.
"""
import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from script_common import fail, fresh_folder, test_arguments  # noqa: E402

REMOTE = r"""(?:https?:)?//"""
RESOURCE_PATTERNS = [
    r"""\b(?:src|href|srcset|action|poster|data)\s*=\s*["']?\s*""" + REMOTE,
    r"""url\(\s*["']?\s*""" + REMOTE,
    r"""@import\b""",
    r"""\bfetch\(\s*["'`]\s*""" + REMOTE,
    r"""\bimport\(\s*["'`]\s*""" + REMOTE,
    r"""sourceMappingURL=""",
]
FORBIDDEN_TAGS = r"""<(?:link|img|iframe|object|embed|base|source|audio|video|frame)\b"""
LIBRARY_MARKERS = (".vega={}", ".vegaLite={}", ".vegaEmbed=")


def main():
    a = test_arguments().parse_args()
    work = fresh_folder(a.work)
    subprocess.run([sys.executable, str(HERE / "make_run.py"), str(work / "run"), "--label", "offline"], check=True)
    html_path = work / "report.html"
    subprocess.run([a.attngeom, "report", str(work / "run"), "--out", str(html_path)], check=True)
    html = html_path.read_text(encoding="utf-8")

    if not html.startswith("<!DOCTYPE html>"):
        fail("not an HTML document")
    if "Content-Security-Policy" not in html or "default-src 'none'" not in html or "connect-src 'none'" not in html:
        fail("the Content-Security-Policy that forbids any load is missing")
    for pattern in RESOURCE_PATTERNS:
        m = re.search(pattern, html, re.IGNORECASE)
        if m:
            fail("external resource reference %r near: %r" % (m.group(0), html[max(0, m.start() - 80):m.end() + 80]))

    scripts = list(re.finditer(r"<script\b([^>]*)>(.*?)</script>", html, re.DOTALL | re.IGNORECASE))
    for s in scripts:
        if re.search(r"\bsrc\s*=", s.group(1), re.IGNORECASE):
            fail("a <script> with a src attribute: %r" % s.group(0)[:200])
    libraries = [s for s in scripts if any(m in s.group(2) for m in LIBRARY_MARKERS)]
    if len(scripts) != 5 or len(libraries) != 3:
        fail("expected 5 inline scripts (data, vega, vega-lite, vega-embed, our script), found %d (%d libraries)"
             % (len(scripts), len(libraries)))
    ours = html
    for s in reversed(libraries):
        ours = ours[:s.start(2)] + ours[s.end(2):]
    m = re.search(r"https?://", ours, re.IGNORECASE)
    if m:
        fail("an http(s) URL outside the inlined libraries: %r" % ours[max(0, m.start() - 80):m.end() + 80])
    markup = re.sub(r"<script\b[^>]*>.*?</script>", "", html, flags=re.DOTALL | re.IGNORECASE)
    markup = re.sub(r"<style\b[^>]*>.*?</style>", "", markup, flags=re.DOTALL | re.IGNORECASE)
    m = re.search(FORBIDDEN_TAGS, markup, re.IGNORECASE)
    if m:
        fail("a resource-loading element in the markup: %r" % markup[m.start():m.start() + 120])
    print("PASS: %s is self-contained (%d bytes, %d inline scripts)" % (html_path, len(html), len(scripts)))


if __name__ == "__main__":
    main()
