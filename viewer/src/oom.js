// The out-of-memory record: what was asked for, what was free, what was live and from where, and
// what happened just before. One card per failure, newest first (as in the report).
import { h } from './dom.js';
import { formatBytes, formatCount, formatTimeAxis, plural } from './format.js';
import { deviceName } from './summary.js';
import { siteTable, stackList, topFrame } from './site_table.js';

function historyTable(history) {
  return h('table', { class: 'sites small' },
    h('thead', {}, h('tr', {}, ['time', 'op', 'kind', 'api', 'size', 'result', 'site'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, history.map((e) => h('tr', {},
      h('td', { class: 'num' }, formatTimeAxis(e.t_ns)), h('td', {}, e.op), h('td', {}, e.kind), h('td', { class: 'mono' }, e.api),
      h('td', { class: 'num' }, formatBytes(e.size)), h('td', { class: 'num' }, String(e.result)),
      h('td', { class: 'mono' }, e.site_id ?? '')))));
}

export function oomCards(report) {
  const events = report.oom?.events ?? [];
  return events.map((e, i) => {
    const free = e.total_bytes ? `${formatBytes(e.free_bytes)} free of ${formatBytes(e.total_bytes)}` : 'free memory unknown';
    const outcome = e.recovered
      ? 'The program recovered: a later allocation on this device succeeded.'
      : 'The program did not get memory on this device again.';
    return h('article', { class: `oom-card${e.recovered ? '' : ' unrecovered'}` },
      h('h3', {}, `OOM #${i + 1} at ${formatTimeAxis(e.t_ns)} on ${deviceName(report, e.device)}`),
      h('p', {}, `${e.api} asked for ${formatBytes(e.requested_bytes)} with ${free}. `,
        `gpuleak counted ${formatBytes(e.live_bytes)} live${Number.isFinite(e.live_count) ? ` in ${plural(e.live_count, 'allocation')}` : ''}. `,
        h('strong', {}, outcome)),
      h('details', {}, h('summary', {}, `The failed request's stack: ${topFrame(e)}`), stackList(e.stack)),
      h('h4', {}, 'Live at that moment, by call site'),
      siteTable({
        columns: [
          { title: 'call site', cell: topFrame },
          { title: 'bytes', num: true, cell: (r) => formatBytes(r.bytes) },
          { title: 'allocations', num: true, cell: (r) => formatCount(r.count) },
        ],
        rows: e.live_by_site ?? [],
        empty: 'Nothing was live.',
      }),
      (e.history ?? []).length
        ? h('details', {}, h('summary', {}, `The last ${plural(e.history.length, 'memory event')} before it`), historyTable(e.history))
        : null);
  });
}
