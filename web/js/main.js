// attngeom report, part 6 of 6: build every section, then report completion. When
// every figure has settled, <body> carries
//   data-report-status="done" | "error", data-figures-expected, data-figures-rendered,
//   data-figures-failed
// for the browser test (tests/report/browser_test.py).

// ---- build, then report completion ---------------------------------------------------

try {
  summarySection();
  selectionSection();
  sinkSection();
  taxonomySection();
  diagnosticsSection();
  flagsSection();
  lengthSweepSection();
  pruningSection();
  topnBudgetSection();
  compareSection();
  expertsSection();
  synthSection();
  provenanceSection();
  footer();
} catch (err) {
  console.error('attngeom report: building the page failed:', err);
  root.prepend(el('p', { class: 'error', text: 'The report could not be built: ' + err }));
  body.dataset.buildError = String(err);
}
body.dataset.figuresExpected = String(pending.length);
Promise.allSettled(pending).then((results) => {
  const ok = results.filter((r) => r.status === 'fulfilled').length;
  body.dataset.figuresRendered = String(ok);
  body.dataset.figuresFailed = String(results.length - ok);
  body.dataset.reportStatus = ok === results.length && !body.dataset.buildError ? 'done' : 'error';
});
