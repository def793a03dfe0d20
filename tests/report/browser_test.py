#!/usr/bin/python3
"""Browser test of report.html: synthetic run(s) -> `attngeom report` -> headless Chromium.

    browser_test.py --attngeom BIN --work DIR --screenshot FILE.png --scenario single|multi|minimal|demo

The demo scenario is not synthetic: it runs `attngeom demo` (the bundled model organism and
the planted model, a length sweep and the synthetic ablation) and opens its side-by-side
report, DEMO_OUT/report.html.

Checks: the page settles with every figure rendered (the DOM marker of web/js/main.js and an
SVG with marks in each figure), no console error or warning, no uncaught exception,
no browser log error (a CSP violation would be one), no network request, the expected
sections present or absent. Saves a full-page screenshot. Then, at 1280 and 1920 px wide
(a screenshot each, beside the first), nothing inside a section's card scrolls sideways
(figures and tables fit their card, legends stay in view), no label of the key-number or
provenance tables breaks mid-word, the Options row reads as "key: value" text, and an
undefined correlation says why. Exits 77 (skipped) only when no Chromium is installed and CI
is not set; in CI a missing browser fails.
"""
import json
import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import headless  # noqa: E402
from script_common import fail, fresh_folder, test_arguments  # noqa: E402

ALL_SECTIONS = ["summary", "selection", "sink-recall", "taxonomy", "diagnostics", "flags", "length-sweep",
                "pruning", "topn-budget", "experts", "synth", "provenance"]
CORE_FIGURES = ["selection", "separation", "sink-recall", "sink-scatter", "taxonomy-map", "type-shares", "cv-lambda", "beta-hist", "profile"]
OPTIONAL_FIGURES = ["length-sweep", "pruning", "topn-budget", "synth-summary-csv"]
MOE_FIGURES = ["experts", "routing-flips"]

# scenario -> (generator argument lists, expected figures, expected absent sections).
# "minimal" also has undefined correlations and beta fits: those figures become notes.
SCENARIOS = {
    "single": ([["--label", "organism", "--experts", "8"]], CORE_FIGURES + OPTIONAL_FIGURES + MOE_FIGURES, []),
    "multi": ([["--label", "model-a", "--layers", "4", "--heads", "8", "--kv-heads", "2", "--experts", "4"],
               ["--label", "model-b", "--layers", "6", "--heads", "4", "--seq-len", "128", "--seed", "7", "--minimal"]],
              CORE_FIGURES + OPTIONAL_FIGURES + MOE_FIGURES, []),
    "minimal": ([["--label", "minimal", "--minimal", "--undefined", "--layers", "3", "--heads", "4", "--seed", "5"]],
                [f for f in CORE_FIGURES if f not in ("sink-recall", "sink-scatter", "beta-hist")],
                ["length-sweep", "pruning", "topn-budget", "experts", "synth"]),
    "demo": (None, CORE_FIGURES + ["length-sweep", "synth-summary-csv"], ["pruning", "topn-budget", "experts"]),
}

# Figures whose points are heads: hovering one must show a tooltip naming layer and head.
HEAD_FIGURES = ["taxonomy-map", "cv-lambda", "sink-scatter"]
MARK_CENTRES = """(() => {
  const f = document.querySelector('#fig-%s');
  if (!f) return '[]';
  f.scrollIntoView({block: 'center'});
  const marks = [...f.querySelectorAll('svg g.role-mark.mark-rect path, svg g.role-mark.mark-symbol path')].slice(0, 8);
  return JSON.stringify(marks.map((p) => { const r = p.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }));
})()"""
TOOLTIP = "(document.getElementById('vg-tooltip-element') || {}).innerText || ''"


def hover_tooltip(browser, figure):
    """The first non-empty tooltip text over up to 8 of the figure's marks."""
    for x, y in json.loads(browser.evaluate(MARK_CENTRES % figure)):
        browser.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        for _ in range(10):
            text = browser.evaluate(TOOLTIP)
            if text:
                return text
            time.sleep(0.05)
    return ""


PAGE_STATE = """JSON.stringify({
  status: document.body.dataset.reportStatus,
  expected: document.body.dataset.figuresExpected,
  rendered: document.body.dataset.figuresRendered,
  failed: document.body.dataset.figuresFailed,
  sections: [...document.querySelectorAll('main > section')].map(s => s.id),
  figures: [...document.querySelectorAll('[data-figure]')].map(f => ({
    id: f.dataset.figure,
    rendered: f.dataset.rendered === 'true',
    marks: f.querySelectorAll('svg .mark-rect path, svg .mark-symbol path, svg .mark-line path, svg .mark-area path').length,
    text: [...f.querySelectorAll('svg text')].map(t => t.textContent).join('|'),
  })),
  flaggedRows: document.querySelectorAll('#flags tbody tr').length,
  provenanceColumns: document.querySelectorAll('#provenance thead th').length,
  footer: document.getElementById('footer').textContent,
  protocol: [...document.querySelectorAll('#pruning p.intro')].map(p => p.textContent).join('|'),
  runNotes: [...document.querySelectorAll('#summary .run-note h3')].map(h => h.textContent),
  synthText: (document.getElementById('synth') || {}).textContent || '',
})"""

# Layout at other widths: what scrolls sideways inside a card, which table labels break
# inside a word, and the texts that must explain themselves.
WIDTHS = [1280, 1920]
LAYOUT = """JSON.stringify((() => {
  const scrolls = [];
  for (const s of document.querySelectorAll('main > section')) {
    for (const e of [s, ...s.querySelectorAll('*')]) {
      const style = getComputedStyle(e);
      const scrollable = e === s || ['auto', 'scroll'].includes(style.overflowX);
      if (scrollable && e.scrollWidth > e.clientWidth + 1) {
        scrolls.push(s.id + ' ' + e.tagName.toLowerCase() + '.' + e.className + ' (' + e.scrollWidth + ' > ' + e.clientWidth + ' px)');
      }
    }
  }
  // A line break between two letters of one word: the label was broken mid-word.
  const broken = [];
  for (const cell of document.querySelectorAll('#summary tbody td:first-child, #provenance tbody td:first-child')) {
    const node = cell.firstChild;
    if (!node || node.nodeType !== Node.TEXT_NODE) continue;
    const text = node.textContent, range = document.createRange();
    let top = null;
    for (let i = 0; i < text.length; ++i) {
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const rect = range.getBoundingClientRect();
      if (rect.width === 0) continue;
      if (top !== null && rect.top > top + 2 && /\\w/.test(text[i - 1]) && /\\w/.test(text[i])) broken.push(text);
      top = rect.top;
    }
  }
  const options = [...document.querySelectorAll('#provenance tbody tr')]
    .filter((tr) => tr.cells[0].textContent === 'Options').map((tr) => [...tr.cells].slice(1).map((c) => c.textContent));
  return { scrolls: scrolls, broken: broken, options: options.flat(),
           summary: document.getElementById('summary').textContent,
           sinkRecall: (document.getElementById('sink-recall') || {}).textContent || '' };
})())"""


def check_layout(browser, html, width, screenshot, timeout, demo):
    browser.width = width
    browser.resize(1000)
    browser.navigate(html.resolve().as_uri())
    if browser.wait_for("document.body && document.body.dataset.reportStatus === 'done'", timeout) is None:
        fail("at %d px the report did not finish" % width)
    layout = json.loads(browser.evaluate(LAYOUT))
    browser.evaluate("window.scrollTo(0, 0)")
    height = browser.screenshot(screenshot)
    print("%d px: %d sideways scrolls in cards, %d labels broken mid-word; screenshot %s (%dx%d)" % (
        width, len(layout["scrolls"]), len(layout["broken"]), screenshot, width, height))
    if layout["scrolls"]:
        fail("at %d px, content scrolls sideways inside a card:\n  %s" % (width, "\n  ".join(layout["scrolls"])))
    if layout["broken"]:
        fail("at %d px, table labels break mid-word: %s" % (width, layout["broken"]))
    if not layout["options"] or any(o.startswith("{") or ": " not in o for o in layout["options"]):
        fail("the Options row is not readable key: value text: %r" % layout["options"])
    if demo:
        # The planted model's rho0 is 0 on every head, so its correlation is undefined: said, not a dash.
        reason = "undefined: \u03c1\u2080 is constant across heads"
        if reason not in layout["summary"] or reason not in layout["sinkRecall"]:
            fail("the undefined correlation of the planted model gives no reason: %r" % layout["sinkRecall"][-300:])


# The synthetic ablation draws these metrics, and none of the summary's constant columns.
SYNTH_METRICS = ["Precision", "Recall", "F", "Margin", "Separated share"]
SYNTH_CONSTANTS = ["d", "L", "r1_f_lo", "r1_f_hi", "r2_separation_prob"]


def check_synth(state):
    fig = next((f for f in state["figures"] if f["id"] == "synth-summary-csv"), None)
    if fig is None:
        return
    texts = fig["text"].split("|")
    for metric in SYNTH_METRICS:
        if metric not in texts:
            fail("the synthetic ablation has no panel %s: %r" % (metric, fig["text"][:400]))
    shown = [c for c in SYNTH_CONSTANTS if c in texts]
    if shown:
        fail("the synthetic ablation plots constant or bound columns as panels: %s" % shown)
    if "d = 64" not in state["synthText"] or "four-phase:" not in state["synthText"]:
        fail("the synthetic ablation states neither its settings nor one sentence per profile: %r" % state["synthText"][:400])


def main():
    ap = test_arguments()
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--scenario", choices=sorted(SCENARIOS), required=True)
    ap.add_argument("--timeout", type=float, default=120)
    a = ap.parse_args()

    chromium = headless.find_chromium()
    if chromium is None:
        if os.environ.get("CI"):
            fail("no Chromium found (scripts/bootstrap.sh test installs Debian's chromium)")
        print("SKIP: no Chromium found; install it with scripts/bootstrap.sh test")
        sys.exit(77)

    work = fresh_folder(a.work)
    gen_args, expected_figures, absent = SCENARIOS[a.scenario]
    if gen_args is None:
        subprocess.run([a.attngeom, "demo", "--out", str(work / "demo")], check=True)
        html = work / "demo" / "report.html"
        labels = ["organism", "planted"]
    else:
        runs = []
        for i, g in enumerate(gen_args):
            d = work / ("run%d" % i)
            subprocess.run([sys.executable, str(HERE / "make_run.py"), str(d)] + g, check=True)
            runs.append(d)
        html = work / "report.html"
        subprocess.run([a.attngeom, "report"] + [str(r) for r in runs] + ["--out", str(html)], check=True)
        labels = [g[g.index("--label") + 1] for g in gen_args]

    browser = headless.Browser(chromium, str(work / "chromium.log"))
    try:
        browser.open_page()
        browser.navigate(html.resolve().as_uri())
        status = browser.wait_for("document.body && ['done', 'error'].includes(document.body.dataset.reportStatus)"
                                  " && document.body.dataset.reportStatus", a.timeout)
        state = json.loads(browser.evaluate(PAGE_STATE))
        tooltips = {f: hover_tooltip(browser, f) for f in HEAD_FIGURES if f in expected_figures}
        browser.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": 0, "y": 0})
        browser.evaluate("window.scrollTo(0, 0)")
        os.makedirs(os.path.dirname(os.path.abspath(a.screenshot)), exist_ok=True)
        height = browser.screenshot(a.screenshot)
        problems = browser.problems()
        for width in WIDTHS:
            check_layout(browser, html, width, a.screenshot.replace(".png", "_%d.png" % width), a.timeout,
                         gen_args is None)
    finally:
        browser.close()

    print("status %s: %s/%s figures rendered, sections %s; screenshot %s (1400x%d)" % (
        status, state["rendered"], state["expected"], ",".join(state["sections"]), a.screenshot, height))
    if problems:
        fail("the page reported problems:\n  " + "\n  ".join(problems))
    if status != "done":
        fail("report did not finish cleanly: %s" % json.dumps(state)[:2000])
    ids = [f["id"] for f in state["figures"]]
    if sorted(ids) != sorted(expected_figures):
        fail("figures %s, expected %s" % (ids, expected_figures))
    if state["expected"] != str(len(expected_figures)) or state["rendered"] != state["expected"] or state["failed"] != "0":
        fail("DOM marker: %s" % {k: state[k] for k in ("expected", "rendered", "failed")})
    for f in state["figures"]:
        if not f["rendered"] or f["marks"] == 0:
            fail("figure %s drew nothing (%d marks)" % (f["id"], f["marks"]))
    for fig, text in tooltips.items():
        if "layer" not in text or "head" not in text:
            fail("hovering a head in figure %s shows no tooltip with its layer and head: %r" % (fig, text))
    for s in ALL_SECTIONS:
        if (s in state["sections"]) == (s in absent):
            fail("section %s should be %s" % (s, "absent" if s in absent else "present"))
    if state["provenanceColumns"] != 1 + len(labels):
        fail("provenance table has %d columns for %d runs" % (state["provenanceColumns"], len(labels)))
    if len(labels) > 1:
        for fig in ("selection", "sink-recall", "cv-lambda"):
            text = next(f["text"] for f in state["figures"] if f["id"] == fig)
            for label in labels:
                if label not in text:
                    fail("figure %s does not name run %s in its legend" % (fig, label))
    if gen_args is not None and state["flaggedRows"] == 0:
        fail("the synthetic run flags heads, but the failure-signature table is empty")
    if "pruning" in state["sections"] and "stride 255, BOS per window; unedited perplexity 20.0000 over 4321" \
            not in state["protocol"]:
        fail("the pruning section does not state prune.json's protocol: %r" % state["protocol"])
    check_synth(state)
    if gen_args is None and state["runNotes"] != labels:
        fail("the demo report does not describe each model side by side: %s" % state["runNotes"])
    if "Vega-Lite" not in state["footer"]:
        fail("footer does not name the inlined libraries: %r" % state["footer"])
    print("tooltips on heads: %s" % ", ".join(tooltips))
    print("PASS")


if __name__ == "__main__":
    main()
