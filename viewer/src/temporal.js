// The temporal view: allocations made in a chosen range of iterations that are still alive at the
// end of the range, or at the end of the run, as a flame graph. Leaks show up as memory that every
// range leaves behind; temporaries never appear. It opens on the post-warm-up iterations alive at
// the last one: a program that frees its leak when it exits (every PyTorch program does) would
// leave "alive at the end of the run" empty, and what a leak held is counted at the last
// iteration (the report's live_bytes).
import { h } from './dom.js';
import { Icicle } from './icicle.js';
import { buildStackTree, temporalRows } from './stack_tree.js';
import { formatBytes, plural } from './format.js';
import { deviceName } from './summary.js';
import { hideLibraryControl, userFrameFilter } from './frame_filter.js';

export function temporalPanel(model) {
  const t = model.temporal;
  if (!t) return h('p', { class: 'muted' }, 'This page was made from a report. Run `gpuleak view` on the capture (.gpuleak) for the temporal view.');
  if (!t.iterations) return h('p', { class: 'muted' }, 'No iterations were found, so there is no range to choose.');
  const last = t.iterations - 1;
  const devices = [...new Set(t.device)].sort((a, b) => a - b);
  const firstAfterWarmup = Math.min(model.warmup, last);
  const from = h('input', { type: 'range', min: 0, max: last, value: firstAfterWarmup, id: 'temporal-from', 'aria-label': 'First iteration' });
  const to = h('input', { type: 'range', min: 0, max: last, value: last, id: 'temporal-to', 'aria-label': 'Last iteration' });
  const fromOut = h('output', { for: 'temporal-from' });
  const toOut = h('output', { for: 'temporal-to' });
  const untilEnd = h('input', { type: 'radio', name: 'temporal-until', value: 'end', id: 'temporal-end' });
  const untilRange = h('input', { type: 'radio', name: 'temporal-until', value: 'range', checked: true, id: 'temporal-range' });
  const device = h('select', { 'aria-label': 'Device' }, (devices.length ? devices : [0]).map((d) => h('option', { value: d }, deviceName(model.report, d))));
  const summary = h('p', { 'aria-live': 'polite' });
  const icicle = new Icicle(model);
  let hideLibrary = false;
  const update = () => {
    let a = Number(from.value);
    let b = Number(to.value);
    if (a > b) [a, b] = [b, a];
    fromOut.textContent = String(a);
    toOut.textContent = String(b);
    const rows = temporalRows(t, Number(device.value), a, b, untilEnd.checked);
    const bytes = rows.reduce((s, r) => s + r.bytes, 0);
    const count = rows.reduce((s, r) => s + r.count, 0);
    const until = untilEnd.checked ? 'the end of the run' : `the end of iteration ${b}`;
    summary.textContent = `Allocations made in iterations ${a}–${b} and still alive at ${until}: ` +
      `${formatBytes(bytes)} in ${plural(count, 'allocation')} from ${plural(rows.length, 'call site')}.`;
    icicle.rootLabel = `made in iterations ${a}–${b}, alive at ${until}`;
    icicle.setTree(buildStackTree(model.sites, rows, null, { keep: userFrameFilter(model, hideLibrary) }));
  };
  const library = hideLibraryControl('temporal-hide-library', false, (on) => { hideLibrary = on; update(); });
  for (const el of [from, to, untilEnd, untilRange, device]) el.addEventListener('input', update);
  queueMicrotask(update);
  return h('div', {},
    h('div', { class: 'temporal-controls' },
      h('label', { class: 'control' }, 'From iteration ', from, ' ', fromOut),
      h('label', { class: 'control' }, 'to ', to, ' ', toOut),
      h('fieldset', { class: 'control' }, h('legend', {}, 'Still alive at'),
        h('label', {}, untilRange, ' the end of the range'), ' ',
        h('label', {}, untilEnd, ' the end of the run')),
      devices.length > 1 ? h('label', { class: 'control' }, 'Device ', device) : null,
      library.el),
    summary, icicle.el);
}
