// attngeom report, part 3 of 6: top-N selection (P, R, F against N) and the
// sink-similarity / Recall figures.

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
      width: panelWidth(s, 3, false),
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
  separationFigure(s);
}

// Perfect separation (margin > 0) as measured, against what R2 and R3 certify of it.
function separationFigure(s) {
  const names = {
    separated: 'measured: share of samples with margin > 0',
    r2_separation_prob: 'R2: lower bound on Pr(margin > 0)',
    r3_certified: 'R3: share certified by the sufficient condition',
  };
  const values = rows(data.tables.separation).map((r) => ({ ...r, series: names[r.series] }));
  const series = Object.values(names);
  const y = { field: 'value', type: 'quantitative', title: 'share (mean over heads)', scale: { domain: [0, 1] } };
  const spec = {
    data: { values: values },
    transform: [{ filter: finite('value') }],
    width: 520,
    height: 240,
    layer: [
      {
        mark: { type: 'line', strokeWidth: 1.8 },
        encoding: {
          x: LOG_N, y: y, color: RUN, detail: { field: 'series' },
          strokeDash: {
            field: 'series', type: 'nominal', title: null,
            scale: { domain: series, range: [[1, 0], [5, 3], [2, 2]] },
            legend: { orient: 'bottom', direction: 'vertical', labelLimit: 400 },
          },
        },
      },
      {
        mark: { type: 'point', filled: true, size: 26 },
        encoding: {
          x: LOG_N, y: y, color: RUN,
          tooltip: [{ field: 'run' }, { field: 'series' }, { field: 'n', title: 'N' },
            { field: 'value', title: 'mean over heads', format: '.3f' }, { field: 'heads' }],
        },
      },
    ],
  };
  figureIf(hasFinite(values, 'value'), s, 'separation', spec,
    '<strong>Solid</strong>: mean over heads of the share of samples whose top-N set is perfectly separated (margin > 0). ' +
    '<strong>Dashed</strong>: R2\u2019s lower bound on the probability of that separation; <strong>dotted</strong>: the share R3 certifies ' +
    '\u2014 both <span class="reconstructed">' + RECON + '</span>. R3 is a sufficient condition, so it never exceeds the measured share ' +
    'head by head; R2 bounds the probability under assumption A4, so a dashed line clearly above the solid one means the rows ' +
    'separate less often than A4 predicts.',
    'No separation share is defined at any N.');
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
  // Runs without a line say why, rather than leaving it missing.
  const undefinedRuns = data.runs.filter((r) => r.summary.corr_undefined)
    .map((r) => (multi ? r.label + ' (' + r.summary.corr_undefined + ')' : r.summary.corr_undefined));
  const why = undefinedRuns.length > 0 ? ' No line for ' + undefinedRuns.join(', ') + '.' : '';
  figureIf(hasFinite(values, 'r'), s, 'sink-recall', spec,
    '<strong>Line</strong>: correlation across heads; <strong>band</strong>: percentile bootstrap confidence interval. ' +
    'Missing points are N where the correlation is undefined (constant Recall, e.g. N = M \u2212 1).' + why,
    undefinedRuns.length > 0 ? 'No correlation to draw: ' + undefinedRuns.join(', ') + '.'
      : 'The correlation is undefined at every N (for example, \u03c1\u2080 or Recall is constant across heads).');

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
