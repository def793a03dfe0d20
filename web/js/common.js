// attngeom report, part 1 of 6: constants, helpers and the data object.
//
// web/js/*.js are concatenated in the order common, tables, selection, heads,
// optional, main (src/report/CMakeLists.txt) and inlined into report.html as one
// script, wrapped in a function with 'use strict': they share one scope. The script
// draws the data object that `attngeom report` inlined as JSON
// (src/report/report_data.h) with the inlined Vega-Lite. Nothing is fetched.

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
// Legends below the figure: beside it they widen it past its card, or scroll out of view.
const LEGEND_BELOW = { orient: 'bottom', direction: 'horizontal', titleLimit: 400 };
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
const RUN = { field: 'run', type: 'nominal', title: 'run', scale: { domain: runs }, legend: multi ? LEGEND_BELOW : null };
const LOG_N = { field: 'n', type: 'quantitative', title: 'N (top-N set size)', scale: { type: 'log', base: 2 }, axis: { tickCount: 8 } };
const LABEL_COLOR = { field: 'label', type: 'nominal', title: 'type', scale: { domain: LABELS, range: LABEL_COLORS }, sort: LABELS };
const PAGE_WIDTH = 1150;  // px available for a figure inside a section
// The width of each of `columns` side-by-side panels, so that a faceted figure fits inside
// its section's card (at most PAGE_WIDTH): less each panel's y axis and the spacing between
// panels, and the run headers when the panels are also faceted by run. Such figures put their
// legends below the panels (LEGEND_BELOW).
function panelWidth(sectionEl, columns, runRows) {
  const card = Math.min(PAGE_WIDTH, sectionEl.clientWidth - 40);
  return Math.max(120, Math.floor((card - (runRows ? 40 : 0)) / columns) - 80);
}
const finite = (f) => 'isValid(datum["' + f + '"]) && isFinite(datum["' + f + '"])';

// One panel per run (wrapped, `columns` per row) when there are several; the plain
// chart for a single run, so that it carries no redundant run header.
function perRun(values, transform, spec, columns, resolve) {
  if (!multi) {
    return Object.assign({}, spec, { data: { values: values }, transform: transform.concat(spec.transform || []) });
  }
  return {
    data: { values: values },
    transform: transform,
    facet: { field: 'run', type: 'nominal', title: null, sort: runs },
    columns: columns,
    spec: spec,
    resolve: resolve,
  };
}
