// Live memory by call stack at a chosen moment: the end of the run, the peak, or an OOM.
import { h } from './dom.js';
import { Icicle } from './icicle.js';
import { buildStackTree, snapshotRows } from './stack_tree.js';
import { formatBytes, formatTimeAxis } from './format.js';
import { deviceName } from './summary.js';

function snapshotLabel(report, s) {
  const when = s.kind === 'end' ? 'end of run' : s.kind === 'peak' ? `peak (${formatTimeAxis(s.t_ns)})`
    : `OOM #${s.oom_index + 1} (${formatTimeAxis(s.t_ns)})`;
  const dev = (report.devices ?? []).length > 1 ? `${deviceName(report, s.device)}: ` : '';
  return `${dev}${when} — ${formatBytes(s.live_bytes)}`;
}

export function flamePanel(model) {
  const snapshots = model.snapshots ?? [];
  if (snapshots.length === 0) return h('p', { class: 'muted' }, 'No device memory was live at the end, the peak or an OOM.');
  const icicle = new Icicle(model);
  const note = h('p', { class: 'muted small' });
  const select = h('select', { id: 'flame-moment', 'aria-label': 'Moment' },
    snapshots.map((s, i) => h('option', { value: i }, snapshotLabel(model.report, s))));
  const show = () => {
    const s = snapshots[Number(select.value)];
    icicle.rootLabel = `live at ${snapshotLabel(model.report, s)}`;
    icicle.setTree(buildStackTree(model.sites, snapshotRows(s), s.other));
    note.textContent = model.fromCapture ? ''
      : s.kind === 'end' ? 'From the report: the largest call sites live at the end (the rest summed as other).'
        : 'From the report: the 20 largest call sites live at that moment.';
  };
  // Open on what explains the most: an OOM, else what was left at the end, else the peak.
  const preferred = [snapshots.findIndex((s) => s.kind === 'oom'),
    snapshots.findIndex((s) => s.kind === 'end' && s.live_bytes > 0), snapshots.findIndex((s) => s.kind === 'peak')];
  select.value = String(Math.max(0, preferred.find((i) => i >= 0) ?? 0));
  select.addEventListener('change', show);
  const el = h('div', {}, h('label', { class: 'control' }, 'Moment: ', select), note, icicle.el);
  queueMicrotask(show);
  return el;
}
