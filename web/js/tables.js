// attngeom report, part 2 of 6: the HTML tables (key numbers, failure signatures,
// provenance) and the footer.

function summarySection() {
  const s = section('summary', 'Key numbers', 'One column per run. Means are over heads of each head\u2019s mean over samples (sequence \u00d7 query row).');
  const sum = data.runs.map((r) => r.summary);
  const cell = (f) => sum.map(f);
  // A dash alone would hide why: the summary says why the correlation is undefined.
  const peak = (p, x) => (p ? 'N = ' + p.n + ': r = ' + fmt(p.r, 2) + ' [' + fmt(p.lo, 2) + ', ' + fmt(p.hi, 2) + ']' : x.corr_undefined || '\u2014');
  const lines = [
    ['Heads analysed', ...cell((x) => x.heads + ' (' + x.layers + ' layers)')],
    ['Sequences', ...cell((x) => (x.sequences === null ? '\u2014' : String(x.sequences)))],
    ['F peaks at (non-trivial N \u2265 2)', ...cell((x) => (x.f_peak ? 'N = ' + x.f_peak.n + ' (mean F = ' + fmt(x.f_peak.f, 3) + ')' : '\u2014'))],
    ['Mean F at small N (2\u20134)', ...cell((x) => fmt(x.f_small, 3))],
    ['corr(\u03c1\u2080, R) peak, Pearson [CI]', ...cell((x) => peak(x.corr_peak.pearson, x))],
    ['corr(\u03c1\u2080, R) peak, Spearman [CI]', ...cell((x) => peak(x.corr_peak.spearman, x))],
    ...LABELS.map((l) => ['Share of ' + l + ' heads', ...cell((x) => pct(x.shares[l]))]),
    ['Samples inside the R1 envelope, N \u2265 2 (' + RECON + ')', ...cell((x) => pct(x.r1_inside))],
    ['Heads with a failure-signature flag', ...cell((x) => x.flagged_heads + ' (negative margin ' + x.flags.flag_negative_margin +
      ', flat precision ' + x.flags.flag_flat_precision + ', no sink ' + x.flags.flag_no_sink + ')')],
  ];
  const notes = data.runs.filter((r) => r.note);
  if (notes.length > 0) {
    s.append(el('div', { class: 'run-notes' }, notes.map((r) => el('div', { class: 'run-note' }, [el('h3', { text: r.label }), el('p', { text: r.note })]))));
  }
  s.append(table(['', ...runs], lines));
}

function flagsSection() {
  const s = section('flags', 'Failure signatures',
    'The seed\u2019s failure signatures, per head: ' + FLAGS.map(([, n, d]) => '<strong>' + n + '</strong> (' + d + ')').join('; ') + '. Only flagged heads are listed.');
  const flagged = rows(data.tables.heads).filter((h) => FLAGS.some(([f]) => h[f]));
  if (flagged.length === 0) {
    s.append(el('p', { class: 'empty', text: 'No head carries a failure-signature flag.' }));
    return;
  }
  const headers = [...(multi ? ['run'] : []), 'layer', 'head', 'type', ...FLAGS.map(([, n]) => n), 'sink mass', 'F at small N', 'F peaks at N'];
  const lines = flagged.map((h) => [
    ...(multi ? [h.run] : []), { text: String(h.layer), cls: 'num' }, { text: String(h.head), cls: 'num' }, h.label,
    ...FLAGS.map(([f]) => ({ text: h[f] ? '\u25cf' : '', cls: 'flag' })),
    { text: fmt(h.sink_mass), cls: 'num' }, { text: fmt(h.f_small), cls: 'num' }, { text: fmt(h.peak_f_n, 0), cls: 'num' },
  ]);
  s.append(el('p', { text: flagged.length + ' flagged head' + (flagged.length === 1 ? '' : 's') + '.' }));
  s.append(table(headers, lines, { scroll: true }));
}

function provenanceSection() {
  const s = section('provenance', 'Provenance', 'From each run\u2019s run.json: what was analysed, how, where and with which build.');
  // Align fields across runs; repeated fields (several files) are matched by occurrence.
  const order = [];
  const perRun = data.runs.map((r) => {
    const seen = {};
    const m = new Map();
    for (const [field, value] of r.provenance) {
      const k = field + '#' + (seen[field] = (seen[field] || 0) + 1);
      if (!order.some((o) => o.key === k)) order.push({ key: k, field: field });
      m.set(k, value);
    }
    return m;
  });
  const mono = /sha256|directory|Model|Corpus file/;
  const lines = order.map((o) => [o.field, ...perRun.map((m) => ({ text: m.has(o.key) ? m.get(o.key) : '\u2014', cls: mono.test(o.field) ? 'mono' : '' }))]);
  s.append(table(['', ...runs], lines));
}

function footer() {
  const f = document.getElementById('footer');
  const libs = 'Vega ' + vega.version + ', Vega-Lite ' + vegaLite.version + ', vega-embed ' + vegaEmbed.version;
  f.textContent = 'Rendered by ' + (data.generator || 'attngeom') + ' at ' + data.generated + '. Charts: ' + libs +
    ', inlined into this file; it loads nothing from the network.';
}
