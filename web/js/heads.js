// attngeom report, part 4 of 6: per-head figures: the taxonomy map, type shares by
// layer, and the assumption diagnostics.

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
  figureIf(hasFinite(shares, 'share'), row, 'type-shares', perRun(shares,
    [{ filter: finite('share') }, { calculate: 'indexof(' + JSON.stringify(LABELS) + ', datum.label)', as: 'order' }], {
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
    }, perRow(barStep * most('layer') + 80), { scale: { x: 'independent' } }),
  '<strong>Per-layer type shares</strong> (from layers.csv): how the mix of Retriever, Mixer and Reset heads changes with depth.',
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
      width: panelWidth(s, 2, false),
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
    width: panelWidth(s, multi ? 2 : 1, false),
    height: 280,
    params: [{ name: 'pick', select: { type: 'point', fields: ['layer'] }, bind: 'legend' }],
    mark: { type: 'line', strokeWidth: 1.4, clip: true },
    encoding: {
      x: { field: 'position', type: 'quantitative', title: 'key position (0 = sink / BOS)' },
      y: { field: 'value', type: 'quantitative', title: 'mean attention weight (log)', scale: { type: 'log' } },
      color: manyLayers
        ? { field: 'layer', type: 'quantitative', title: 'layer', scale: { scheme: 'viridis' }, legend: LEGEND_BELOW }
        : { field: 'layer', type: 'ordinal', title: 'layer', scale: { scheme: 'viridis' }, legend: Object.assign({ columns: 8, symbolType: 'stroke' }, LEGEND_BELOW) },
      detail: { field: 'layer' },
      strokeDash: { field: 'series', type: 'nominal', title: null, scale: { domain: ['measured', 'four-phase fit'], range: [[1, 0], [4, 3]] }, legend: LEGEND_BELOW },
      opacity: manyLayers ? { value: 0.9 } : { condition: { param: 'pick', value: 1 }, value: 0.12 },
    },
  };
  if (manyLayers) delete profile.params;
  const profileValues = rows(data.tables.profile);
  figureIf(profileValues.length > 0, s, 'profile', perRun(profileValues, [], profile, 2, { scale: { x: 'independent' } }),
    '<strong>A3: mean last-query attention row</strong> per layer (mean over heads and samples; solid) and its four-phase fit ' +
    '(sink / plateau / oscillation / recency; dashed), on a log scale.' +
    (manyLayers ? '' : ' Click a layer in the legend to highlight it (shift-click for several).'),
  'The mean attention profile has no positive value to draw.');
}
