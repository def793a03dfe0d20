// attngeom report: draws the data object that `attngeom report` inlined as JSON
// (src/report/report_data.h) with the inlined Vega-Lite. Nothing is fetched.
// When every figure has settled, <body> carries
//   data-report-status="done" | "error", data-figures-expected, data-figures-rendered,
//   data-figures-failed
// for the browser test (tests/report/browser_test.py).
(function () {
  'use strict';

  const LABELS = ['retriever', 'mixer', 'reset', 'unclassified'];
  const LABEL_COLORS = ['#4c78a8', '#f58518', '#e45756', '#bab0ac'];
  const RECON = 'reconstructed (not the paper\u2019s formulas)';
  const FLAGS = [
    ['flag_negative_margin', 'Negative margin', 'mean margin < 0 at every N \u2265 2: the top-N set is never separated'],
    ['flag_flat_precision', 'Flat precision', 'P varies by less than 0.05 over the N grid'],
    ['flag_no_sink', 'No sink', 'sink mass below the uniform level 1/M'],
  ];
  const CONFIG = {
    font: 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif',
    view: { stroke: '#d8dee4' },
    axis: { labelFontSize: 11, titleFontSize: 12, titleFontWeight: 600, gridColor: '#eef1f4', domainColor: '#8c959f', tickColor: '#8c959f' },
    legend: { labelFontSize: 11, titleFontSize: 12, titleFontWeight: 600, labelLimit: 260, symbolOpacity: 1 },
    header: { labelFontSize: 13, labelFontWeight: 600, titleFontSize: 13 },
    title: { fontSize: 13, fontWeight: 600, anchor: 'start', offset: 8 },
    range: { category: ['#4c78a8', '#f58518', '#54a24b', '#e45756', '#72b7b2', '#b279a2', '#ff9da6', '#9d755d', '#eeca3b', '#bab0ac'] },
  };
  const EMBED_OPTIONS = {
    mode: 'vega-lite',
    renderer: 'svg',
    // Export (PNG/SVG) works offline; the source/editor actions would leave the file.
    actions: { export: true, source: false, compiled: false, editor: false },
    config: CONFIG,
    tooltip: { theme: 'light' },
  };

  const body = document.body;
  const root = document.getElementById('report');
  const toc = document.getElementById('toc');
  const pending = [];

  // ---- small helpers ----------------------------------------------------------------

  function el(tag, attrs, children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'text') e.textContent = v;
      else if (k === 'html') e.innerHTML = v;
      else e.setAttribute(k, v);
    }
    for (const c of children || []) e.append(c);
    return e;
  }

  // {"columns": [...], "rows": [[...]]} -> [{column: value}]
  function rows(table) {
    if (!table) return [];
    const cols = table.columns;
    return table.rows.map((r) => {
      const o = {};
      for (let i = 0; i < cols.length; ++i) o[cols[i]] = r[i];
      return o;
    });
  }

  // Three decimals, or three significant digits for small values (0.000488, not 0.000).
  function fmt(v, digits) {
    if (v === null || v === undefined || (typeof v === 'number' && !isFinite(v))) return '\u2014';
    if (typeof v !== 'number') return String(v);
    if (digits === undefined && v !== 0 && Math.abs(v) < 0.01) return v.toPrecision(3);
    return v.toFixed(digits === undefined ? 3 : digits);
  }

  function pct(v) {
    return v === null || v === undefined ? '\u2014' : (100 * v).toFixed(0) + '%';
  }

  function section(id, title, intro) {
    const s = el('section', { id: id }, [el('h2', { text: title })]);
    if (intro) s.append(el('p', { class: 'intro', html: intro }));
    root.append(s);
    toc.append(el('a', { href: '#' + id, text: title }));
    return s;
  }

  // A Vega-Lite figure: its embed promise is tracked for the DOM marker.
  function figure(parent, id, spec, caption) {
    const chart = el('div', { class: 'chart', id: 'fig-' + id, 'data-figure': id });
    const fig = el('figure', {}, [el('div', { class: 'chart-scroll' }, [chart])]);
    if (caption) fig.append(el('figcaption', { html: caption }));
    parent.append(fig);
    const p = vegaEmbed(chart, spec, EMBED_OPTIONS).then((result) => {
      if (!chart.querySelector('svg')) throw new Error('figure ' + id + ': nothing drawn');
      chart.setAttribute('data-rendered', 'true');
      return result;
    }).catch((err) => {
      chart.append(el('p', { class: 'error', text: 'Figure "' + id + '" failed: ' + err }));
      console.error('attngeom report: figure ' + id + ' failed:', err);
      throw err;
    });
    pending.push(p);
  }

  // A figure only when its data has something to draw; a short note otherwise (an
  // empty chart would only show axes, and Vega warns about empty scale domains).
  function figureIf(drawable, parent, id, spec, caption, emptyText) {
    if (drawable) figure(parent, id, spec, caption);
    else parent.append(el('p', { class: 'empty', text: emptyText }));
  }

  const hasFinite = (list, field) => list.some((r) => typeof r[field] === 'number' && isFinite(r[field]));

  function table(headers, bodyRows, opts) {
    const thead = el('thead', {}, [el('tr', {}, headers.map((h) => el('th', { text: h })))]);
    const tbody = el('tbody', {}, bodyRows.map((r) => el('tr', {}, r.map((c) => {
      if (c && typeof c === 'object' && c.nodeType === undefined) return el('td', { class: c.cls || '', text: c.text });
      return el('td', { text: c });
    }))));
    const t = el('table', {}, [thead, tbody]);
    return opts && opts.scroll ? el('div', { class: 'table-scroll' }, [t]) : t;
  }

  const data = JSON.parse(document.getElementById('attngeom-data').textContent);
  const runs = data.runs.map((r) => r.label);
  const multi = runs.length > 1;
  const RUN = { field: 'run', type: 'nominal', title: 'run', scale: { domain: runs }, legend: multi ? {} : null };
  const LOG_N = { field: 'n', type: 'quantitative', title: 'N (top-N set size)', scale: { type: 'log', base: 2 }, axis: { tickCount: 8 } };
  const LABEL_COLOR = { field: 'label', type: 'nominal', title: 'type', scale: { domain: LABELS, range: LABEL_COLORS }, sort: LABELS };
  const PAGE_WIDTH = 1150;  // px available for a figure inside a section
  const finite = (f) => 'isValid(datum["' + f + '"]) && isFinite(datum["' + f + '"])';

  // ---- sections ------------------------------------------------------------------------

  function summarySection() {
    const s = section('summary', 'Key numbers', 'One column per run. Means are over heads of each head\u2019s mean over samples (sequence \u00d7 query row).');
    const sum = data.runs.map((r) => r.summary);
    const cell = (f) => sum.map(f);
    const peak = (p) => (p ? 'N = ' + p.n + ': r = ' + fmt(p.r, 2) + ' [' + fmt(p.lo, 2) + ', ' + fmt(p.hi, 2) + ']' : '\u2014');
    const lines = [
      ['Heads analysed', ...cell((x) => x.heads + ' (' + x.layers + ' layers)')],
      ['Sequences', ...cell((x) => (x.sequences === null ? '\u2014' : String(x.sequences)))],
      ['F peaks at (non-trivial N \u2265 2)', ...cell((x) => (x.f_peak ? 'N = ' + x.f_peak.n + ' (mean F = ' + fmt(x.f_peak.f, 3) + ')' : '\u2014'))],
      ['Mean F at small N (2\u20134)', ...cell((x) => fmt(x.f_small, 3))],
      ['corr(\u03c1\u2080, R) peak, Pearson [CI]', ...cell((x) => peak(x.corr_peak.pearson))],
      ['corr(\u03c1\u2080, R) peak, Spearman [CI]', ...cell((x) => peak(x.corr_peak.spearman))],
      ...LABELS.map((l) => ['Share of ' + l + ' heads', ...cell((x) => pct(x.shares[l]))]),
      ['Samples inside the R1 envelope, N \u2265 2 (' + RECON + ')', ...cell((x) => pct(x.r1_inside))],
      ['Heads with a failure-signature flag', ...cell((x) => x.flagged_heads + ' (negative margin ' + x.flags.flag_negative_margin +
        ', flat precision ' + x.flags.flag_flat_precision + ', no sink ' + x.flags.flag_no_sink + ')')],
    ];
    s.append(table(['', ...runs], lines));
  }

  function selectionSection() {
    const s = section('selection', 'Top-N selection: P, R, F against N',
      'How well a ball around the representative s<sub>N</sub> separates the N most-attended keys from the rest. ' +
      'P, R and F near 1 mean a clean geometric selection; the seed predicts the strongest separability at small N (about 1\u20134).');
    const values = rows(data.tables.selection);
    const x = LOG_N;
    const spec = {
      data: { values: values },
      facet: { column: { field: 'metric', type: 'nominal', title: null, sort: ['Precision', 'Recall', 'F'] } },
      spec: {
        width: 330,
        height: 240,
        layer: [
          {
            mark: { type: 'area', opacity: 0.16 },
            transform: [{ filter: finite('q25') + ' && ' + finite('q75') }],
            encoding: { x: x, y: { field: 'q25', type: 'quantitative', title: 'value', scale: { domain: [0, 1], clamp: true } }, y2: { field: 'q75' }, color: RUN },
          },
          {
            transform: [
              { fold: ['mean', 'r1_lo', 'r1_hi'], as: ['key', 'value'] },
              { filter: finite('value') },
              { calculate: 'datum.key === "mean" ? "mean over heads (band: IQR)" : "R1 envelope, ' + RECON + '"', as: 'series' },
            ],
            mark: { type: 'line', strokeWidth: 1.8 },
            encoding: {
              x: x,
              y: { field: 'value', type: 'quantitative', title: 'value' },
              color: RUN,
              detail: { field: 'key' },
              strokeDash: {
                field: 'series', type: 'nominal', title: null,
                scale: { domain: ['mean over heads (band: IQR)', 'R1 envelope, ' + RECON], range: [[1, 0], [5, 3]] },
                legend: { orient: 'bottom', direction: 'vertical', labelLimit: 400 },
              },
            },
          },
          {
            mark: { type: 'point', filled: true, size: 28 },
            transform: [{ filter: finite('mean') }],
            encoding: {
              x: x, y: { field: 'mean', type: 'quantitative' }, color: RUN,
              tooltip: [
                { field: 'run' }, { field: 'metric' }, { field: 'n', title: 'N' },
                { field: 'mean', title: 'mean over heads', format: '.3f' },
                { field: 'q25', title: 'q25 over heads', format: '.3f' },
                { field: 'q75', title: 'q75 over heads', format: '.3f' },
                { field: 'r1_lo', title: 'R1 lower (reconstructed)', format: '.3f' },
                { field: 'r1_hi', title: 'R1 upper (reconstructed)', format: '.3f' },
                { field: 'r1_inside', title: 'share inside R1 (reconstructed)', format: '.2f' },
                { field: 'heads' },
              ],
            },
          },
        ],
      },
    };
    figureIf(hasFinite(values, 'mean'), s, 'selection', spec,
      '<strong>Solid line</strong>: mean over heads of each head\u2019s mean P, R or F; <strong>band</strong>: interquartile range over heads. ' +
      '<strong>Dashed</strong>: mean over heads of the deterministic envelope R1 \u2014 <span class="reconstructed">' + RECON + '</span>. ' +
      'N is on a log\u2082 axis; N = 1 is trivial (P = 1). Hover a point for the coverage of R1.',
      'P, R and F are undefined for every head and N.');
  }

  function sinkSection() {
    const s = section('sink-recall', 'Sink similarity and Recall',
      'Across heads, for each N: the correlation between a head\u2019s sink similarity \u03c1\u2080 (mean cosine of v<sub>0</sub> with the content values) ' +
      'and its mean Recall at N. The seed reports a peak near N \u2248 3\u20136.');
    const values = rows(data.tables.sink_recall);
    const spec = {
      data: { values: values },
      facet: { column: { field: 'method', type: 'nominal', title: null, sort: ['Pearson', 'Spearman'] } },
      spec: {
        width: 420,
        height: 230,
        layer: [
          { mark: { type: 'rule', color: '#8c959f', strokeDash: [2, 2] }, encoding: { y: { datum: 0, type: 'quantitative' } } },
          {
            mark: { type: 'area', opacity: 0.16 },
            transform: [{ filter: finite('lo') + ' && ' + finite('hi') }],
            encoding: { x: LOG_N, y: { field: 'lo', type: 'quantitative', title: 'corr(\u03c1\u2080, R(N))', scale: { domain: [-1, 1] } }, y2: { field: 'hi' }, color: RUN },
          },
          {
            mark: { type: 'line', strokeWidth: 1.8, point: { filled: true, size: 30 } },
            transform: [{ filter: finite('r') }],
            encoding: {
              x: LOG_N, y: { field: 'r', type: 'quantitative' }, color: RUN,
              tooltip: [{ field: 'run' }, { field: 'method' }, { field: 'n', title: 'N' }, { field: 'r', format: '.3f' },
                { field: 'lo', title: 'CI low', format: '.3f' }, { field: 'hi', title: 'CI high', format: '.3f' }, { field: 'heads' }],
            },
          },
        ],
      },
    };
    figureIf(hasFinite(values, 'r'), s, 'sink-recall', spec,
      '<strong>Line</strong>: correlation across heads; <strong>band</strong>: percentile bootstrap confidence interval. ' +
      'Missing points are N where the correlation is undefined (constant Recall, e.g. N = M \u2212 1).',
      'The correlation is undefined at every N (for example, \u03c1\u2080 or Recall is constant across heads).');

    const heads = rows(data.tables.sink_scatter).filter((h) => hasFinite([h], 'rho0') && hasFinite([h], 'recall'));
    if (heads.length === 0) return;
    const peakN = {};
    for (const h of heads) peakN[h.run] = h.n;
    const title = runs.filter((r) => r in peakN).map((r) => (multi ? r + ': ' : '') + 'N = ' + peakN[r]).join(', ');
    figure(s, 'sink-scatter', {
      data: { values: heads },
      transform: [{ filter: finite('rho0') + ' && ' + finite('recall') }],
      width: 420,
      height: 260,
      title: 'Per head, at the N where the Pearson correlation peaks (' + title + ')',
      layer: [
        {
          mark: { type: 'point', filled: true, size: 44, opacity: 0.8 },
          encoding: {
            x: { field: 'rho0', type: 'quantitative', title: 'sink similarity \u03c1\u2080', scale: { zero: false } },
            y: { field: 'recall', type: 'quantitative', title: 'mean Recall at that N', scale: { domain: [0, 1] } },
            color: LABEL_COLOR,
            shape: multi ? { field: 'run', type: 'nominal', title: 'run', scale: { domain: runs } } : { value: 'circle' },
            tooltip: [{ field: 'run' }, { field: 'layer' }, { field: 'head' }, { field: 'label', title: 'type' },
              { field: 'n', title: 'N' }, { field: 'rho0', title: '\u03c1\u2080', format: '.3f' }, { field: 'recall', title: 'Recall', format: '.3f' }],
          },
        },
        {
          transform: [{ regression: 'recall', on: 'rho0', groupby: ['run'] }],
          mark: { type: 'line', color: '#59636e', strokeWidth: 1.2, strokeDash: [4, 3] },
          encoding: { x: { field: 'rho0', type: 'quantitative' }, y: { field: 'recall', type: 'quantitative' }, detail: { field: 'run' } },
        },
      ],
    }, '<strong>Points</strong>: heads, coloured by type' + (multi ? ', shaped by run' : '') + ' (hover for layer and head); ' +
      '<strong>dashed</strong>: least-squares line per run.');
  }

  function taxonomySection() {
    const s = section('taxonomy', 'Head taxonomy by depth',
      'Each head labelled Retriever (last-token dominated), Mixer (gating between sink and content) or Reset (sink-biased), ' +
      'from its magnitudes and cos(s<sub>N</sub>, v<sub>0</sub>), cos(s<sub>N</sub>, v<sub>L</sub>) trajectories; the thresholds are ours. ' +
      'The seed reports a depth-wise Retriever \u2192 Reset \u2192 Mixer progression in LLaMA-2-7B.');
    const heads = rows(data.tables.heads).map((h) => Object.assign(h, {
      flagged: FLAGS.filter(([f]) => h[f]).map(([, name]) => name).join(', ') || 'none',
    }));
    const tooltip = [
      { field: 'run' }, { field: 'layer' }, { field: 'head' }, { field: 'kv_head', title: 'kv head' }, { field: 'label', title: 'type' },
      { field: 'kmeans_label', title: 'k-means type' },
      { field: 'sink_mass', title: 'sink mass a\u2080', format: '.3f' }, { field: 'last_mass', title: 'last-token mass a_L', format: '.3f' },
      { field: 'entropy', title: 'normalised entropy', format: '.3f' }, { field: 'rho0', title: '\u03c1\u2080', format: '.3f' },
      { field: 'cos_sink_small', title: 'cos(s_N, v0), small N', format: '.2f' }, { field: 'cos_sink_large', title: 'cos(s_N, v0), large N', format: '.2f' },
      { field: 'cos_last_small', title: 'cos(s_N, vL), small N', format: '.2f' }, { field: 'cos_last_large', title: 'cos(s_N, vL), large N', format: '.2f' },
      { field: 'f_small', title: 'F at small N', format: '.3f' }, { field: 'peak_f_n', title: 'F peaks at N' },
      { field: 'flagged', title: 'flags' },
    ];
    // Square cells, as large as fits: about 520 px across and 760 px down at most,
    // up to three runs side by side.
    const most = (f) => Math.max(...heads.map((h) => h[f])) + 1;
    const across = PAGE_WIDTH / Math.min(3, runs.length) - 100;
    const step = Math.max(8, Math.min(26, Math.floor(Math.min(520, across) / most('head')), Math.floor(760 / most('layer'))));
    const perRow = (width) => Math.max(1, Math.min(runs.length, Math.floor(PAGE_WIDTH / width)));
    const maps = runs.map((label) => ({
      title: multi ? label : null,
      transform: [{ filter: { field: 'run', equal: label } }],
      width: { step: step },
      height: { step: step },
      layer: [
        {
          mark: { type: 'rect', stroke: '#ffffff', strokeWidth: 1 },
          encoding: {
            x: { field: 'head', type: 'ordinal', title: 'head', axis: { labelAngle: 0 } },
            y: { field: 'layer', type: 'ordinal', title: 'layer' },
            color: LABEL_COLOR,
            tooltip: tooltip,
          },
        },
        {
          mark: { type: 'point', shape: 'circle', filled: true, size: 14, color: '#1f2328' },
          transform: [{ filter: 'datum.flagged !== "none"' }],
          encoding: {
            x: { field: 'head', type: 'ordinal' }, y: { field: 'layer', type: 'ordinal' }, tooltip: tooltip,
          },
        },
      ],
    }));
    const row = el('div', { class: 'row' });
    s.append(row);
    figure(row, 'taxonomy-map', {
      data: { values: heads },
      concat: maps,
      columns: perRow(step * most('head') + 100),
      spacing: 30,
      resolve: { scale: { x: 'independent', y: 'independent' } },
    }, '<strong>Layer \u00d7 head map</strong>, coloured by type; a dot marks a head with a failure-signature flag (table below). Hover a cell for the head\u2019s features.');

    const shares = rows(data.tables.layer_shares);
    const barStep = Math.max(10, Math.min(28, Math.floor(480 / most('layer'))));
    figureIf(hasFinite(shares, 'share'), row, 'type-shares', {
      data: { values: shares },
      transform: [{ filter: finite('share') }, { calculate: 'indexof(' + JSON.stringify(LABELS) + ', datum.label)', as: 'order' }],
      facet: { field: 'run', type: 'nominal', title: null, sort: runs, header: multi ? {} : { labels: false } },
      columns: perRow(barStep * most('layer') + 80),
      spec: {
        width: { step: barStep },
        height: 220,
        mark: { type: 'bar' },
        encoding: {
          x: { field: 'layer', type: 'ordinal', title: 'layer', axis: { labelAngle: 0 } },
          y: { field: 'share', type: 'quantitative', title: 'share of heads', stack: 'zero', scale: { domain: [0, 1] }, axis: { format: '%' } },
          color: LABEL_COLOR,
          order: { field: 'order' },
          tooltip: [{ field: 'run' }, { field: 'layer' }, { field: 'label', title: 'type' }, { field: 'share', format: '.0%' }],
        },
      },
      resolve: { scale: { x: 'independent' } },
    }, '<strong>Per-layer type shares</strong> (from layers.csv): how the mix of Retriever, Mixer and Reset heads changes with depth.',
    'No per-layer type shares are defined.');
  }

  function diagnosticsSection() {
    const s = section('diagnostics', 'Assumption diagnostics',
      'Checks of the assumptions behind the geometry: A1 stable value norms (CV small, seed \u2248 0.02\u20130.05) with a compressed sink (\u03bb = \u03bd\u2080/\u03bd \u226a 1); ' +
      'A2 exponential similarity decay (rate \u03b2 and its fit error); A3 the piecewise attention profile.');
    const heads = rows(data.tables.heads);
    const runIndex = (r) => runs.indexOf(r);
    const spread = runs.length > 1 ? 0.6 / runs.length : 0;
    for (const h of heads) {
      // Deterministic jitter within the layer, runs side by side.
      const golden = (h.head * 0.6180339887) % 1;
      h.x = h.layer + (multi ? (runIndex(h.run) - (runs.length - 1) / 2) * spread : 0) + (golden - 0.5) * (multi ? spread * 0.8 : 0.5);
    }
    const tooltip = [{ field: 'run' }, { field: 'layer' }, { field: 'head' }, { field: 'label', title: 'type' },
      { field: 'cv', title: 'CV of value norms', format: '.4f' }, { field: 'lambda', title: '\u03bb sink compression', format: '.3f' }];
    figureIf(hasFinite(heads, 'cv') || hasFinite(heads, 'lambda'), s, 'cv-lambda', {
      data: { values: heads },
      transform: [
        { fold: ['cv', 'lambda'], as: ['diagnostic', 'value'] },
        { filter: finite('value') },
        { calculate: 'datum.diagnostic === "cv" ? "A1: CV of value norms" : "A1: \u03bb = \u03bd\u2080 / \u03bd (sink compression)"', as: 'panel' },
      ],
      facet: { column: { field: 'panel', type: 'nominal', title: null } },
      spec: {
        width: 470,
        height: 230,
        layer: [
          {
            mark: { type: 'circle', size: 24, opacity: 0.55 },
            encoding: {
              x: { field: 'x', type: 'quantitative', title: 'layer', axis: { tickMinStep: 1, format: 'd' }, scale: { nice: false, padding: 10 } },
              y: { field: 'value', type: 'quantitative', title: 'value', scale: { zero: true } },
              color: RUN,
              tooltip: tooltip,
            },
          },
          {
            mark: { type: 'line', strokeWidth: 2, point: { size: 20 } },
            encoding: {
              x: { field: 'layer', type: 'quantitative' },
              y: { aggregate: 'mean', field: 'value', type: 'quantitative' },
              color: RUN,
              tooltip: [{ field: 'run' }, { field: 'layer' }, { aggregate: 'mean', field: 'value', title: 'mean over heads', format: '.4f' }],
            },
          },
        ],
      },
      resolve: { scale: { y: 'independent' } },
    }, '<strong>Points</strong>: heads (hover for layer and head); <strong>line</strong>: mean over the layer\u2019s heads.',
    'A1 (CV and \u03bb) is undefined for every head.');

    const hist = (field, title) => ({
      width: 440,
      height: 190,
      transform: [{ filter: finite(field) }],
      mark: { type: 'bar', opacity: multi ? 0.55 : 0.85, binSpacing: 1 },
      encoding: {
        x: { field: field, type: 'quantitative', bin: { maxbins: 30 }, title: title },
        y: { aggregate: 'count', type: 'quantitative', title: 'heads', stack: null },
        color: RUN,
        tooltip: [{ field: 'run' }, { field: field, bin: { maxbins: 30 }, title: title }, { aggregate: 'count', title: 'heads' }],
      },
    });
    const hists = [['beta', 'A2: decay rate \u03b2 of C(\u03c4) \u2248 exp(\u2212\u03b2\u03c4)'], ['beta_mae', 'A2: mean absolute error of the \u03b2 fit']]
      .filter(([f]) => hasFinite(heads, f)).map(([f, t]) => hist(f, t));
    figureIf(hists.length > 0, s, 'beta-hist', {
      data: { values: heads },
      hconcat: hists,
      spacing: 40,
    }, '<strong>Distributions over heads</strong> of the similarity-decay rate \u03b2 and of its fit error; a large MAE means the exponential model fits poorly for that head (heads with an undefined fit are left out).',
    'The A2 decay fit is undefined for every head.');

    // A legend entry per layer while they fit; a colour gradient beyond that.
    const manyLayers = Math.max(...heads.map((h) => h.layer)) + 1 > 16;
    const profile = {
      width: multi ? 470 : 1000,
      height: 280,
      params: [{ name: 'pick', select: { type: 'point', fields: ['layer'] }, bind: 'legend' }],
      mark: { type: 'line', strokeWidth: 1.4, clip: true },
      encoding: {
        x: { field: 'position', type: 'quantitative', title: 'key position (0 = sink / BOS)' },
        y: { field: 'value', type: 'quantitative', title: 'mean attention weight (log)', scale: { type: 'log' } },
        color: manyLayers
          ? { field: 'layer', type: 'quantitative', title: 'layer', scale: { scheme: 'viridis' } }
          : { field: 'layer', type: 'ordinal', title: 'layer', scale: { scheme: 'viridis' }, legend: { columns: 2, symbolType: 'stroke' } },
        detail: { field: 'layer' },
        strokeDash: { field: 'series', type: 'nominal', title: null, scale: { domain: ['measured', 'four-phase fit'], range: [[1, 0], [4, 3]] } },
        opacity: manyLayers ? { value: 0.9 } : { condition: { param: 'pick', value: 1 }, value: 0.12 },
      },
    };
    if (manyLayers) delete profile.params;
    const profileValues = { values: rows(data.tables.profile) };
    figureIf(profileValues.values.length > 0, s, 'profile', multi ? {
      data: profileValues,
      facet: { field: 'run', type: 'nominal', title: null, sort: runs },
      columns: 2,
      spec: profile,
      resolve: { scale: { x: 'independent' } },
    } : Object.assign({ data: profileValues }, profile), '<strong>A3: mean last-query attention row</strong> per layer (mean over heads and samples; solid) and its four-phase fit ' +
      '(sink / plateau / oscillation / recency; dashed), on a log scale.' +
      (manyLayers ? '' : ' Click a layer in the legend to highlight it (shift-click for several).'),
    'The mean attention profile has no positive value to draw.');
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

  function lengthSweepSection() {
    if (!data.tables.length_sweep) return;
    const s = section('length-sweep', 'Sequence-length sweep',
      'The same analysis at several sequence lengths (averages over heads of the per-head means). The seed predicts that longer sequences weaken separability at fixed N.');
    const sweep = rows(data.tables.length_sweep);
    figureIf(hasFinite(sweep, 'value'), s, 'length-sweep', {
      data: { values: sweep },
      transform: [{ filter: finite('value') }],
      facet: { column: { field: 'metric', type: 'nominal', title: null, sort: ['Precision', 'Recall', 'F', 'Separated share'] } },
      spec: {
        width: 240,
        height: 200,
        mark: { type: 'line', strokeWidth: 1.8, point: { filled: true, size: 24 } },
        encoding: {
          x: LOG_N,
          y: { field: 'value', type: 'quantitative', title: 'mean over heads', scale: { domain: [0, 1], clamp: true } },
          color: { field: 'seq_len', type: 'ordinal', title: 'sequence length', scale: { scheme: 'plasma' } },
          strokeDash: multi ? { field: 'run', type: 'nominal', title: 'run' } : { value: [1, 0] },
          tooltip: [{ field: 'run' }, { field: 'seq_len', title: 'sequence length' }, { field: 'n', title: 'N' }, { field: 'metric' }, { field: 'value', format: '.3f' }],
        },
      },
    }, '<strong>Colour</strong>: sequence length' + (multi ? '; <strong>dash</strong>: run' : '') + '. "Separated share" is the share of samples with a positive margin (perfect separation).',
    'The length sweep has no defined value.');
  }

  function pruningSection() {
    if (!data.tables.pruning) return;
    const s = section('pruning', 'Head pruning',
      'Heads masked in an importance order, for growing fractions of all heads, and the effect on held-out text. ' +
      'The seed: type-guided beats random, but not consistently the strong single-metric heuristics.');
    const facet = { column: { field: 'metric', type: 'nominal', title: null, sort: ['Perplexity', 'KL from unpruned', 'Top-1 agreement'] } };
    if (multi) facet.row = { field: 'run', type: 'nominal', title: null, sort: runs };
    const color = { field: 'strategy', type: 'nominal', title: 'order' };
    const pruning = rows(data.tables.pruning);
    figureIf(hasFinite(pruning, 'mean'), s, 'pruning', {
      data: { values: pruning },
      transform: [{ filter: finite('mean') }],
      facet: facet,
      spec: {
        width: 300,
        height: 210,
        layer: [
          {
            mark: { type: 'area', opacity: 0.18 },
            transform: [{ filter: 'datum.seeds > 1' }],
            encoding: { x: { field: 'fraction', type: 'quantitative' }, y: { field: 'min', type: 'quantitative' }, y2: { field: 'max' }, color: color },
          },
          {
            mark: { type: 'line', strokeWidth: 1.8, point: { filled: true, size: 24 } },
            encoding: {
              x: { field: 'fraction', type: 'quantitative', title: 'fraction of heads masked', axis: { format: '%' } },
              y: { field: 'mean', type: 'quantitative', title: 'value', scale: { zero: false } },
              color: color,
              tooltip: [{ field: 'run' }, { field: 'strategy', title: 'order' }, { field: 'fraction', format: '.0%' }, { field: 'metric' },
                { field: 'mean', title: 'mean over seeds', format: '.4g' }, { field: 'min', format: '.4g' }, { field: 'max', format: '.4g' }, { field: 'seeds' }],
            },
          },
        ],
      },
      resolve: { scale: { y: 'independent' } },
    }, '<strong>Line</strong>: mean over seeds; <strong>band</strong>: min\u2013max over seeds (only orders with several seeds, i.e. random). ' +
      'Perplexity and KL: lower is better; top-1 agreement with the unpruned model: higher is better.',
    'The pruning table has no defined value.');
  }

  function synthSection() {
    const files = data.tables.synth || [];
    if (files.length === 0 && data.synth_skipped.length === 0) return;
    const s = section('synth', 'Synthetic ablations',
      'Curves from the synthetic generator (chosen value norms, sink, decay and attention profiles) in the run\u2019s <span class="mono">synth/</span> folder: ' +
      'every numeric column against N, coloured by attention profile. Bounds among them are ' + RECON + '.');
    for (const f of files) {
      s.append(el('h3', { class: 'mono', text: 'synth/' + f.file }));
      const values = rows(f.table).filter((r) => hasFinite([r], 'value') && r.n > 0);  // n > 0: log axis
      figureIf(values.length > 0, s, 'synth-' + f.file.replace(/[^A-Za-z0-9]/g, '-'), {
        data: { values: values },
        facet: { field: 'column', type: 'nominal', title: null },
        columns: 4,
        spec: {
          width: 240,
          height: 170,
          mark: { type: 'line', strokeWidth: 1.6, point: { filled: true, size: 18 } },
          encoding: {
            x: { field: 'n', type: 'quantitative', title: 'N', scale: { type: 'log', base: 2 } },
            y: { field: 'value', type: 'quantitative', title: null },
            color: { field: 'profile', type: 'nominal', title: 'profile' },
            strokeDash: multi ? { field: 'run', type: 'nominal', title: 'run' } : { value: [1, 0] },
            tooltip: [{ field: 'run' }, { field: 'profile' }, { field: 'n', title: 'N' }, { field: 'column' }, { field: 'value', format: '.4g' }],
          },
        },
        resolve: { scale: { y: 'independent' } },
      }, null, 'No defined value to draw.');
    }
    if (data.synth_skipped.length > 0) {
      s.append(el('p', {
        class: 'empty',
        text: 'Not drawn (no profile and n columns): ' + data.synth_skipped.map((x) => x.run + ': synth/' + x.file).join(', ') + '.',
      }));
    }
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
    const mono = /sha256|directory|Model|Options|Corpus file/;
    const lines = order.map((o) => [o.field, ...perRun.map((m) => ({ text: m.has(o.key) ? m.get(o.key) : '\u2014', cls: mono.test(o.field) ? 'mono' : '' }))]);
    s.append(table(['', ...runs], lines));
  }

  function footer() {
    const f = document.getElementById('footer');
    const libs = 'Vega ' + vega.version + ', Vega-Lite ' + vegaLite.version + ', vega-embed ' + vegaEmbed.version;
    f.textContent = 'Rendered by ' + (data.generator || 'attngeom') + ' at ' + data.generated + '. Charts: ' + libs +
      ', inlined into this file; it loads nothing from the network.';
  }

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
})();
