// The leaks as findings: one row per user line (the report's leak_groups, decided in src/analysis),
// with the library call sites it allocates through listed under it, each with its own stack. A
// report from before leak_groups shows one row per site, as it counted them.
import { h } from './dom.js';
import { formatBytes, formatCount, formatPercent, formatRate, plural, siteText } from './format.js';
import { siteTable, stackList } from './site_table.js';

// The findings in the report's order: each leak_groups entry with `sites`, its entries of leaks[]
// (largest first, as its site_ids); without leak_groups, each leak as its own finding.
export function leakFindings(report) {
  const leaks = report.leaks ?? [];
  const groups = report.leak_groups;
  if (!Array.isArray(groups) || groups.length === 0) return leaks.map((l) => ({ ...l, sites: [l] }));
  return groups.map((g) => ({
    ...g,
    sites: (g.site_ids ?? []).map((id) => leaks.find((l) => l.site_id === id && l.device === g.device)).filter(Boolean),
  }));
}

// A leak's live_* are counted at the end of the last iteration, not at exit: a program may free
// its leak when it ends (every PyTorch program does), so the column says so.
function liveCell(r) {
  return formatBytes(r.live_bytes) + (r.live_at_exit_count === 0 && r.live_count > 0 ? ' (freed at exit)' : '');
}

function sitesDetail(finding) {
  const retained = finding.retained_by?.text
    ? h('p', { class: 'small kept-by mono' }, `Kept by ${finding.retained_by.text}`) : null;
  const sites = finding.sites;
  if (sites.length <= 1) {
    const only = sites[0] ?? finding;
    return [retained, h('div', { class: 'muted small' }, `site ${only.site_id ?? ''}`), stackList(only.stack)];
  }
  const columns = [
    { title: 'library call site', cell: siteText },
    { title: 'rate', num: true, cell: (r) => formatRate(r.bytes_per_iteration) },
    { title: 'live at last iteration', num: true, cell: (r) => formatBytes(r.live_bytes) },
    { title: 'allocations', num: true, cell: (r) => formatCount(r.live_count) },
  ];
  return [retained,
    h('p', { class: 'small' }, `${plural(sites.length, 'library call site')} under this line (click one for its stack):`),
    siteTable({ columns, rows: sites, empty: '' })];
}

export function leakTable(report) {
  const findings = leakFindings(report);
  const grouped = Array.isArray(report.leak_groups) && report.leak_groups.length > 0;
  const columns = [
    { title: grouped ? 'where (the user\'s line)' : 'call site', cell: siteText },
    { title: 'device', num: true, cell: (r) => String(r.device) },
    { title: 'rate', num: true, cell: (r) => formatRate(r.bytes_per_iteration) },
    { title: 'live at last iteration', num: true, cell: liveCell },
    { title: 'allocations', num: true, cell: (r) => formatCount(r.live_count) },
    { title: 'since iteration', num: true, cell: (r) => String(r.first_iteration) },
    { title: 'confidence', num: true, cell: (r) => formatPercent(r.confidence) },
  ];
  if (grouped) columns.push({ title: 'library sites', num: true, cell: (r) => String(r.sites.length) });
  return siteTable({
    id: 'leak-table',
    caption: grouped
      ? 'Lines whose memory keeps accumulating after warm-up, with the library call sites under each (click a row)'
      : 'Call sites whose memory keeps accumulating after warm-up (click a row for its stack)',
    columns, rows: findings, empty: 'No call site leaks.', detail: sitesDetail,
  });
}
