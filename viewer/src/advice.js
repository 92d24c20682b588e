// The loop advice: one card per finding of the report's advice[] (docs/advice.md), with its call
// site, the sentence the analysis wrote, its evidence and its estimated saving. Nothing here
// decides a finding: the page shows what src/analysis found.
import { h } from './dom.js';
import { formatBytes, formatCount, formatNs, formatPercent } from './format.js';
import { deviceName } from './summary.js';
import { siteTable, stackList, topFrame } from './site_table.js';

const TITLES = {
  churn: 'Allocated and freed every iteration',
  cache_thrash: 'Cache emptied and refilled every iteration',
  late_release: 'Released one iteration late',
  peak_composition: 'What the peak is made of',
  fragmentation: 'Fragmented or reserved memory',
  serialization: 'The loop waits on allocation calls',
};

export function adviceTitle(kind) {
  return TITLES[kind] ?? String(kind);
}

// An evidence or saving number read by the unit its name carries: "peak_bytes" -> "8.00 MiB",
// "peak_bytes_if_released" too; "_ns" a duration, "_share" a percentage.
export function evidenceText(name, value) {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  if (/(^|_)bytes(_|$)/.test(name)) return formatBytes(value);
  if (/(^|_)ns(_|$)/.test(name)) return formatNs(value);
  if (name.endsWith('_share')) return formatPercent(value);
  if (Number.isInteger(value)) return formatCount(value);
  return value.toFixed(2);
}

// "alloc_time_ns_per_iteration" -> "alloc time per iteration".
export function evidenceLabel(name) {
  return name.replace(/_ns(?=_|$)/, '').replace(/_bytes(?=_|$)/, '').replace(/_share$/, ' share').replace(/_/g, ' ');
}

function numbers(title, values) {
  const entries = Object.entries(values ?? {});
  if (entries.length === 0) return null;
  return h('table', { class: 'evidence small' },
    h('caption', {}, title),
    h('tbody', {}, entries.map(([k, v]) => h('tr', {}, h('th', { scope: 'row' }, evidenceLabel(k)),
      h('td', { class: 'num' }, evidenceText(k, v))))));
}

export function adviceCards(report) {
  const advice = report.advice ?? [];
  if (advice.length === 0) {
    return [h('p', { class: 'muted' }, 'No advice: the primary loop shows none of the patterns gpuleak looks for ',
      '(or it has too few iterations to tell).')];
  }
  return advice.map((a) => h('article', { class: `advice-card advice-${a.kind}` },
    h('h3', {}, h('span', { class: 'badge badge-advice' }, String(a.kind).replace(/_/g, ' ')), ' ', adviceTitle(a.kind),
      h('span', { class: 'muted small' }, ` · ${deviceName(report, a.device)}`)),
    h('p', {}, a.message),
    (a.stack ?? []).length
      ? h('details', {}, h('summary', {}, `Call site: ${topFrame(a)}`), stackList(a.stack))
      : null,
    h('div', { class: 'advice-numbers' }, numbers('Evidence', a.evidence), numbers('Estimated saving', a.saving)),
    (a.sites ?? []).length
      ? siteTable({
        columns: [
          { title: 'call site', cell: topFrame },
          { title: 'live at the peak', num: true, cell: (r) => formatBytes(r.bytes) },
          { title: 'this iteration', num: true, cell: (r) => formatBytes(r.this_iteration_bytes) },
          { title: 'earlier iterations', num: true, cell: (r) => formatBytes(r.earlier_iterations_bytes) },
          { title: 'before the loop', num: true, cell: (r) => formatBytes(r.before_loop_bytes) },
        ],
        rows: a.sites,
        empty: '',
      })
      : null));
}
