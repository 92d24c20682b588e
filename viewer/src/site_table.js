// Tables of call sites (the leaks, what was live at the end, what was live at an OOM): one row per
// site, and its full stack on click, Enter or Space. Rows are reachable with Tab.
import { h } from './dom.js';
import { frameDetail, frameLabel, siteText } from './format.js';

export function stackList(stack) {
  if (!stack || stack.length === 0) return h('p', { class: 'muted' }, 'No stack was captured for this call site.');
  return h('ol', { class: 'stack', start: 0 },
    stack.map((f) => h('li', {},
      h('span', { class: `kind kind-${f.kind}` }, f.kind === 'python' ? 'py' : 'C++'), ' ',
      h('span', { class: 'mono' }, frameLabel(f, { short: true })),
      h('div', { class: 'muted mono small' }, frameDetail(f)))));
}

function siteDetail(row) {
  return [h('div', { class: 'muted small' }, `site ${row.site_id ?? ''}`), stackList(row.stack)];
}

// columns: [{title, num, cell(row) -> text}]; rows: objects with `stack` and `site_id`; detail(row):
// what a row opens to (default: its site id and stack).
export function siteTable({ id, caption, columns, rows, empty, limit = 200, detail = siteDetail }) {
  if (!rows || rows.length === 0) return h('p', { class: 'muted' }, empty);
  const body = h('tbody');
  const shown = rows.slice(0, limit);
  for (const row of shown) {
    const id = `stack-${Math.random().toString(36).slice(2)}`;
    const detailRow = h('tr', { class: 'stack-row', id, hidden: true },
      h('td', { colspan: columns.length }, detail(row)));
    const toggle = () => {
      const open = detailRow.hidden;
      detailRow.hidden = !open;
      tr.setAttribute('aria-expanded', String(open));
    };
    const tr = h('tr', { class: 'site-row', tabindex: 0, 'aria-expanded': 'false', 'aria-controls': id,
      title: detail === siteDetail ? 'Show the full stack' : 'Show the details', onclick: toggle,
      onkeydown: (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); toggle(); } } },
    columns.map((c, i) => h('td', { class: c.num ? 'num' : i === 0 ? 'site' : '' }, i === 0 ? [h('span', { class: 'chevron', 'aria-hidden': 'true' }, '▸ '), c.cell(row)] : c.cell(row))));
    body.append(tr, detailRow);
  }
  const more = rows.length > shown.length ? h('p', { class: 'muted' }, `${rows.length - shown.length} more not shown.`) : null;
  return h('div', { class: 'table-wrap' },
    h('table', { class: 'sites', id },
      caption ? h('caption', {}, caption) : null,
      h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : '' }, c.title)))),
      body),
    more);
}

// The frame the analysis chose to show (format.js siteText).
export const topFrame = siteText;
