// Live memory by call stack at a chosen moment: the last iteration, the end of the run, the peak,
// or an OOM. A framework allocator's cache (its segments' bytes no tensor fills) is no call site's
// memory: it is drawn as its own box, apart from the stacks, and only when asked for, so that on a
// PyTorch run the widest box is the user's memory and not the allocator's reserve.
import { h } from './dom.js';
import { Icicle } from './icicle.js';
import { buildStackTree, snapshotRows } from './stack_tree.js';
import { formatBytes, formatTimeAxis } from './format.js';
import { deviceName } from './summary.js';
import { hideLibraryControl, userFrameFilter } from './frame_filter.js';

function momentName(report, s) {
  const when = s.kind === 'end' ? 'the end of the run' : s.kind === 'peak' ? `the peak (${formatTimeAxis(s.t_ns)})`
    : s.kind === 'last_iteration' ? `the last iteration (#${s.iteration}, ${formatTimeAxis(s.t_ns)})`
      : `OOM #${s.oom_index + 1} (${formatTimeAxis(s.t_ns)})`;
  const dev = (report.devices ?? []).length > 1 ? `${deviceName(report, s.device)}: ` : '';
  return `${dev}${when}`;
}

function snapshotLabel(report, s) {
  return `${momentName(report, s)} — ${formatBytes(s.device_bytes ?? s.live_bytes)}`;
}

// The moment the panel opens on: an OOM; else, with leaks, the last iteration (where the report
// counts them: a program that frees them at exit leaves the end empty); else the end; else the peak.
export function defaultMoment(report, snapshots) {
  const leakDevice = (report.leak_groups ?? report.leaks ?? [])[0]?.device;
  const candidates = [
    snapshots.findIndex((s) => s.kind === 'oom'),
    leakDevice !== undefined ? snapshots.findIndex((s) => s.kind === 'last_iteration' && s.device === leakDevice) : -1,
    snapshots.findIndex((s) => s.kind === 'end' && s.live_bytes > 0),
    snapshots.findIndex((s) => s.kind === 'peak'),
  ];
  return Math.max(0, candidates.find((i) => i >= 0) ?? 0);
}

// The boxes beside the stacks for snapshot `s`: {other, extras, hidden} (hidden: bytes left out).
export function specialBoxes(model, s, showCache) {
  const owner = model.poolOwner;
  const extras = [];
  let hidden = 0;
  if (s.cache_bytes > 0) {
    if (showCache) extras.push({ label: `cached by ${owner}, not in tensors`, bytes: s.cache_bytes, count: 0 });
    else hidden += s.cache_bytes;
  }
  let other = s.other ?? null;
  if (other && other.bytes > 0) {
    const what = other.notLeaking ? 'not leaking' : 'the rest';
    if (other.mixed) {
      // The report cannot tell the cache from the smaller sites here: both, under the cache's switch.
      if (showCache) other = { ...other, label: `(${what}: smaller call sites and ${owner}'s cache)` };
      else { hidden += other.bytes; other = null; }
    } else if (other.notLeaking) {
      other = { ...other, label: '(not leaking: every other call site)' };
    }
  }
  return { other, extras, hidden };
}

export function flamePanel(model) {
  const snapshots = model.snapshots ?? [];
  if (snapshots.length === 0) return h('p', { class: 'muted' }, 'No device memory was live at the end, the peak or an OOM.');
  const icicle = new Icicle(model);
  const note = h('p', { class: 'muted small', id: 'flame-note' });
  const select = h('select', { id: 'flame-moment', 'aria-label': 'Moment' },
    snapshots.map((s, i) => h('option', { value: i }, snapshotLabel(model.report, s))));
  let hideLibrary = false;
  const cacheBox = h('input', { type: 'checkbox', id: 'flame-show-cache' });
  const anyCache = snapshots.some((s) => s.cache_bytes > 0 || (s.other?.mixed && s.other.bytes > 0));
  const show = () => {
    const s = snapshots[Number(select.value)];
    const { other, extras, hidden } = specialBoxes(model, s, cacheBox.checked);
    icicle.rootLabel = `live at ${momentName(model.report, s)}`;
    icicle.rootTotal = s.device_bytes ?? null;
    icicle.setTree(buildStackTree(model.sites, snapshotRows(s), other,
      { extras, keep: userFrameFilter(model, hideLibrary) }));
    const notes = [];
    if (hidden > 0) {
      notes.push((s.other?.mixed
        ? `Not drawn: ${formatBytes(hidden)} the report does not list by call site at this moment, most of it ${model.poolOwner}'s cache.`
        : `Not drawn: ${formatBytes(hidden)} that ${model.poolOwner} held in no tensor (its cache).`) +
        ' Tick "Show the allocator\'s cache" to draw it.');
    }
    if (!model.fromCapture) {
      notes.push(s.kind === 'end' ? 'From the report: the largest call sites live at the end.'
        : s.kind === 'last_iteration' ? 'From the report: the leaks at the last iteration (the report lists no other site there).'
          : 'From the report: the 20 largest call sites live at that moment.');
    }
    note.textContent = notes.join(' ');
  };
  const library = hideLibraryControl('flame-hide-library', false, (on) => { hideLibrary = on; show(); });
  select.value = String(defaultMoment(model.report, snapshots));
  select.addEventListener('change', show);
  cacheBox.addEventListener('change', show);
  const el = h('div', {},
    h('div', { class: 'flame-controls' },
      h('label', { class: 'control' }, 'Moment: ', select),
      library.el,
      anyCache ? h('label', { class: 'control' }, cacheBox, ' Show the allocator\'s cache') : null),
    note, icicle.el);
  queueMicrotask(show);
  return el;
}
