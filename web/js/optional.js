// attngeom report, part 5 of 6: sections drawn only when the run has their files:
// length sweep, head pruning, token-level top-N budget, other tools' head sets, a mixture of
// experts' routing, synthetic ablations.

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
      width: panelWidth(s, 4, false),
      height: 200,
      mark: { type: 'line', strokeWidth: 1.8, point: { filled: true, size: 24 } },
      encoding: {
        x: LOG_N,
        y: { field: 'value', type: 'quantitative', title: 'mean over heads', scale: { domain: [0, 1], clamp: true } },
        color: { field: 'seq_len', type: 'ordinal', title: 'sequence length', scale: { scheme: 'plasma' }, legend: LEGEND_BELOW },
        strokeDash: multi ? { field: 'run', type: 'nominal', title: 'run', legend: LEGEND_BELOW } : { value: [1, 0] },
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
  protocolNote(s);
  const facet = { column: { field: 'metric', type: 'nominal', title: null, sort: ['Perplexity', 'KL from unpruned', 'Top-1 agreement'] } };
  if (multi) facet.row = { field: 'run', type: 'nominal', title: null, sort: runs };
  const color = { field: 'strategy', type: 'nominal', title: 'order', legend: LEGEND_BELOW };
  const pruning = rows(data.tables.pruning);
  figureIf(hasFinite(pruning, 'mean'), s, 'pruning', {
    data: { values: pruning },
    transform: [{ filter: finite('mean') }],
    facet: facet,
    spec: {
      width: panelWidth(s, 3, multi),
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
  }, '<strong>Line</strong>: mean over seeds; <strong>band</strong>: min\u2013max over seeds (only orders with several seeds, e.g. random). ' +
    'Perplexity and KL: lower is better; top-1 agreement with the unpruned model: higher is better.',
  'The pruning table has no defined value.');
}

// docs/method.md section 7: perplexity is reported with its protocol, from each run's prune.json.
function protocolNote(parent) {
  for (const r of data.runs) {
    const p = r.prune_protocol;
    if (!p) continue;
    const ref = p.reference;
    parent.append(el('p', { class: 'intro', text: 'Protocol' + (multi ? ' (' + r.label + ')' : '') + ': windows of ' +
      p.protocol.context + ' tokens, stride ' + p.protocol.stride + ', ' + (p.protocol.bos ? 'BOS per window' : 'no BOS') +
      '; unedited perplexity ' + Number(ref.ppl).toPrecision(6) + ' over ' + ref.tokens + ' scored tokens.' }));
  }
}

function topnBudgetSection() {
  if (!data.tables.topn_budget) return;
  const s = section('topn-budget', 'Token-level top-N budget',
    'Each head keeps only its top-N keys per query (renormalised). <strong>Geometric</strong>: N per head from its selection curve; ' +
    '<strong>uniform</strong>: one N (the budget) for every head; the geometric N keep the same number of (query, key) pairs as uniform, up to one step of one head. Beyond the paper (docs/method.md section 7).');
  if (!data.tables.pruning) protocolNote(s);
  const facet = { column: { field: 'metric', type: 'nominal', title: null, sort: ['Perplexity', 'KL from unpruned', 'Top-1 agreement'] } };
  if (multi) facet.row = { field: 'run', type: 'nominal', title: null, sort: runs };
  const budget = rows(data.tables.topn_budget);
  figureIf(hasFinite(budget, 'value'), s, 'topn-budget', {
    data: { values: budget },
    transform: [{ filter: finite('value') }],
    facet: facet,
    spec: {
      width: panelWidth(s, 3, multi),
      height: 210,
      mark: { type: 'line', strokeWidth: 1.8, point: { filled: true, size: 24 } },
      encoding: {
        x: { field: 'kept_share', type: 'quantitative', title: 'share of visible (query, key) pairs kept', axis: { format: '.0%' }, scale: { type: 'log', base: 2 } },
        y: { field: 'value', type: 'quantitative', title: 'value', scale: { zero: false } },
        color: { field: 'policy', type: 'nominal', title: 'policy', legend: LEGEND_BELOW },
        tooltip: [{ field: 'run' }, { field: 'policy' }, { field: 'budget', title: 'budget (uniform N)' }, { field: 'kept_share', title: 'kept share', format: '.1%' },
          { field: 'metric' }, { field: 'value', format: '.4g' }],
      },
    },
    resolve: { scale: { y: 'independent' } },
  }, 'Perplexity and KL: lower is better; top-1 agreement with the unedited model: higher is better. x: the realised share of visible (query, key) pairs kept.',
  'The top-N budget table has no defined value.');
}

// experts.csv and routing.csv of a mixture of experts (docs/method.md section 1).
function expertsSection() {
  if (!data.tables.experts) return;
  const s = section('experts', 'Mixture of experts',
    'Each routed layer\u2019s tokens per expert, as a share of the layer\u2019s token \u00d7 top-k choices over all sequences. ' +
    'On the bf16 path, a routing flip is a token whose set of experts the fp32 router logits of the same input would change.');
  const load = rows(data.tables.experts);
  figure(s, 'experts', perRun(load, [], {
    width: multi ? panelWidth(s, 2, false) : Math.min(PAGE_WIDTH - 200, 40 * (1 + Math.max(...load.map((r) => r.expert)))),
    height: { step: 18 },
    mark: 'rect',
    encoding: {
      x: { field: 'expert', type: 'ordinal', title: 'expert', axis: { labelAngle: 0, labelOverlap: true } },
      y: { field: 'layer', type: 'ordinal', title: 'layer' },
      color: { field: 'share', type: 'quantitative', title: 'share of choices', scale: { scheme: 'viridis' }, legend: LEGEND_BELOW },
      tooltip: [{ field: 'run' }, { field: 'layer' }, { field: 'expert' }, { field: 'tokens' }, { field: 'share', format: '.2%' }],
    },
  }, 2), 'A router that balances its load gives each of its E experts 1/E of the choices; a bright cell is an expert the layer favours.');
  const flips = rows(data.tables.routing);
  figureIf(hasFinite(flips, 'flip_share'), s, 'routing-flips', perRun(flips, [{ filter: finite('flip_share') }], {
    width: multi ? panelWidth(s, 2, false) : Math.min(PAGE_WIDTH - 200, 24 * flips.length + 80),
    height: 180,
    mark: 'bar',
    encoding: {
      x: { field: 'layer', type: 'ordinal', title: 'layer', axis: { labelAngle: 0, labelOverlap: true } },
      y: { field: 'flip_share', type: 'quantitative', title: 'tokens routed otherwise by fp32', axis: { format: '.1%' } },
      tooltip: [{ field: 'run' }, { field: 'layer' }, { field: 'tokens' }, { field: 'routing_flips', title: 'routing flips' }, { field: 'flip_share', format: '.2%' }],
    },
  }, 2), 'The share of each layer\u2019s tokens whose experts would change with fp32 router logits: how far the bf16 run\u2019s routing is from the exact one.',
  'Routing flips are counted on the bf16 path only; this run used fp32.');
}

// attngeom compare: other tools' head sets against our scores and types (docs/method.md section 6).
function compareSection() {
  if (!data.tables.compare) return;
  const s = section('compare', 'Head sets of other tools',
    'Each file\u2019s head set S (DuoAttention gates or Retrieval-Head mean scores \u2265 0.5, or the heads QRHead lists) against ' +
    'our top-|S| heads by each score, or the heads of each type: Jaccard, precision@k (k = our set\u2019s size), and the Spearman ' +
    'correlation of the per-head scores with its bootstrap CI. Beyond the paper (docs/method.md section 6).');
  const headers = [...(multi ? ['run'] : []), 'file', 'format', 'ours', '|S|', 'k', 'Jaccard', 'precision@k', 'Spearman [CI]'];
  const lines = rows(data.tables.compare).map((r) => [
    ...(multi ? [r.run] : []), { text: r.file, cls: 'mono' }, r.format, { text: r.ours, cls: 'mono' },
    { text: String(r.their_set), cls: 'num' }, { text: String(r.our_set), cls: 'num' },
    { text: fmt(r.jaccard, 3), cls: 'num' }, { text: fmt(r.precision_at_k, 3), cls: 'num' },
    { text: fmt(r.spearman, 3) + ' [' + fmt(r.spearman_lo, 3) + ', ' + fmt(r.spearman_hi, 3) + ']', cls: 'num' },
  ]);
  s.append(table(headers, lines, { scroll: true }));
}

// One sentence per attention profile of the generator (src/synth/synthetic.h).
const SYNTH_PROFILES = {
  'four-phase': 'a sink, a flat plateau, an oscillating band and a recency tail: the shape the paper fits to real rows (assumption A3), where separation should hold at small N.',
  uniform: 'every key weighs the same, so no top-N set stands out: the measured curves are the floor of chance separation.',
  bimodal: 'the sink and the last token hold most of the mass and the rest ties, so only N = 1 or 2 has a real gap and larger N select among ties.',
  'power-law': 'weights fall smoothly as (i + 1)^-\u03b3 from the sink on, with no gap between selected and unselected keys beyond the first few.',
};
const SYNTH_METRICS = ['Precision', 'Recall', 'F', 'Margin', 'Separated share'];

function synthSection() {
  const files = data.tables.synth || [];
  if (files.length === 0 && data.synth_skipped.length === 0) return;
  const s = section('synth', 'Synthetic ablations',
    'Synthetic heads from the generator (chosen value norms, sink, decay and attention profile) in the run\u2019s <span class="mono">synth/</span> folder, ' +
    'analysed like captured rows: the measured P, R, F, margin and share of separated samples against N (solid), with the ' + RECON + ' bounds over them (dashed): ' +
    'R1\u2019s envelope of F and R2\u2019s lower bound on the probability of perfect separation.');
  for (const f of files) {
    s.append(el('h3', { class: 'mono', text: 'synth/' + f.file }));
    s.append(el('p', { text: 'Settings: ' + f.settings.map((x) => (multi ? x.run + ': ' : '') + (x.text || '\u2014')).join('; ') + '.' }));
    // One row per drawn point: the measured value and each reconstructed bound as a series.
    const SERIES = [['value', 'measured'], ['lo', 'lower bound'], ['hi', 'upper bound']];
    const values = rows(f.table).filter((r) => r.n > 0).flatMap((r) =>  // n > 0: log axis
      SERIES.filter(([k]) => typeof r[k] === 'number' && isFinite(r[k])).map(([k, series]) => ({ run: r.run, profile: r.profile, n: r.n, metric: r.metric, series: series, v: r[k] })));
    const profiles = [...new Set(values.map((r) => r.profile))];
    const facet = { column: { field: 'metric', type: 'nominal', title: null, sort: SYNTH_METRICS } };
    if (f.settings.length > 1) facet.row = { field: 'run', type: 'nominal', title: null, sort: runs };
    figureIf(values.some((r) => r.series === 'measured'), s, 'synth-' + f.file.replace(/[^A-Za-z0-9]/g, '-'), {
      data: { values: values },
      facet: facet,
      spec: {
        width: panelWidth(s, SYNTH_METRICS.length, f.settings.length > 1),
        height: 160,
        mark: { type: 'line', strokeWidth: 1.6 },
        encoding: {
          x: { field: 'n', type: 'quantitative', title: 'N', scale: { type: 'log', base: 2 } },
          y: { field: 'v', type: 'quantitative', title: null },
          color: { field: 'profile', type: 'nominal', title: 'profile', legend: LEGEND_BELOW },
          strokeDash: { field: 'series', type: 'nominal', title: null, scale: { domain: SERIES.map(([, x]) => x), range: [[1, 0], [4, 3], [1, 3]] }, legend: LEGEND_BELOW },
          tooltip: [{ field: 'run' }, { field: 'profile' }, { field: 'n', title: 'N' }, { field: 'metric' }, { field: 'series' }, { field: 'v', title: 'value', format: '.4g' }],
        },
      },
      resolve: { scale: { y: 'independent' } },
    }, '<strong>Solid</strong>: measured; <strong>dashed</strong>: ' + RECON + ' lower bound; <strong>dotted</strong>: its upper bound. <strong>Colour</strong>: attention profile.', 'No defined value to draw.');
    s.append(el('ul', {}, profiles.map((p) => el('li', { html: '<strong>' + p + '</strong>: ' + (SYNTH_PROFILES[p] || 'a profile of the run\u2019s own generator.') }))));
  }
  if (data.synth_skipped.length > 0) {
    s.append(el('p', {
      class: 'empty',
      text: 'Not drawn (no profile and n columns, or none of the metrics above): ' + data.synth_skipped.map((x) => x.run + ': synth/' + x.file).join(', ') + '.',
    }));
  }
}
