// The gpuleak HTML report: reads the data the CLI embedded and lays out the page. Every verdict,
// rate and forecast on it is the report's (src/analysis); this code only shows them.
import './style.css';
import { buildModel, readDocument } from './data.js';
import { h, section } from './dom.js';
import { allocatorNote, captureWarnings, deviceName, forecastSentences, verdictSummary } from './summary.js';
import { formatBytes, formatCount, formatNs, formatRate, plural } from './format.js';
import { Timeline } from './timeline.js';
import { iterationBars } from './iteration_bars.js';
import { siteTable, topFrame } from './site_table.js';
import { leakFindings, leakTable } from './leak_table.js';
import { flamePanel } from './flame_panel.js';
import { temporalPanel } from './temporal.js';
import { oomCards } from './oom.js';
import { adviceCards } from './advice.js';

function header(report) {
  const run = report.run ?? {};
  const facts = [
    run.host && `host ${run.host}`,
    run.pid && `pid ${run.pid}`,
    run.rank !== null && run.rank !== undefined && `rank ${run.rank}`,
    run.start_time && `started ${run.start_time.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}`,
    run.duration_ns !== undefined && `ran ${formatNs(run.duration_ns)}`,
    run.allocator_mode && `allocator: ${run.allocator_mode}`,
    `${plural(report.analysis?.primary_iterations ?? 0, 'iteration')} (${report.iteration_source ?? 'none'})`,
  ].filter(Boolean);
  return h('header', { class: 'page-header' },
    h('h1', {}, 'gpuleak report', run.program ? h('span', { class: 'program' }, ` — ${run.program}`) : null),
    run.command?.length ? h('p', { class: 'mono command', title: 'command line' }, run.command.join(' ')) : null,
    h('p', { class: 'muted' }, facts.join(' · ')));
}

function verdictCard(report) {
  const v = verdictSummary(report);
  const forecasts = forecastSentences(report);
  const warnings = captureWarnings(report);
  const note = allocatorNote(report);
  return h('section', { class: `verdict verdict-${v.verdict}`, id: 'verdict', 'aria-labelledby': 'verdict-title' },
    h('div', { class: 'verdict-head' },
      v.oom ? h('span', { class: 'badge badge-oom' }, 'OOM') : null,
      h('span', { class: `badge badge-${v.verdict}` }, v.verdict.toUpperCase()),
      h('h2', { id: 'verdict-title' }, v.title)),
    v.oom ? h('p', { class: 'verdict-text oom-lead' }, v.oom) : null,
    h('p', { class: 'verdict-text' }, v.sentence),
    v.keptBy ? h('p', { class: 'verdict-text kept-by mono' }, v.keptBy) : null,
    forecasts.map((f) => h('p', { class: 'forecast' }, f)),
    warnings.length ? h('ul', { class: 'warnings' }, warnings.map((w) => h('li', {}, w))) : null,
    note ? h('p', { class: 'muted allocator-note' }, `Note: ${note}`) : null);
}

function nav(model) {
  const links = [['memory', 'Memory over time'], ['leaks', 'Leaks'], ['advice', 'Advice'], ['flame', 'Flame graph'], ['temporal', 'Temporal view']];
  // A run that ran out of memory leads with it, here as on the page.
  if (model.report.oom) links.unshift(['oom', 'Out of memory']);
  return h('nav', { 'aria-label': 'Sections' }, links.map(([id, text]) => h('a', { href: `#${id}` }, text)));
}

function deviceFacts(report, d) {
  const facts = [
    `peak ${formatBytes(d.peak_live_bytes)}`,
    `at the end ${formatBytes(d.live_at_exit_bytes)}`,
    d.total_bytes ? `device memory ${formatBytes(d.total_bytes)}` : null,
    `verdict ${d.verdict}`,
    d.growth_bytes_per_iteration ? `fitted ${formatRate(d.growth_bytes_per_iteration)}` : null,
    d.untracked_bytes ? `${formatBytes(d.untracked_bytes)} used outside tracked allocations (NVML)` : null,
  ];
  return h('p', { class: 'muted' }, facts.filter(Boolean).join(' · '));
}

function memorySection(model, width, plots) {
  const { report } = model;
  const blocks = (report.devices ?? []).map((d, slot) => {
    const series = model.timelines.find((t) => t.device === d.index);
    const ooms = (report.oom?.events ?? []).map((e, index) => ({ t_ns: e.t_ns, index, device: e.device }))
      .filter((o) => o.device === d.index);
    const parts = [h('h3', {}, deviceName(report, d.index)), deviceFacts(report, d)];
    if (series && series.t.length > 0) {
      if (series.coarse) parts.push(h('p', { class: 'note' }, 'From the report: one point per iteration (its peak and its end). Run `gpuleak view` on the capture for every event.'));
      const tl = new Timeline({ series, iterations: model.primary, warmup: model.warmup, ooms, total: d.total_bytes,
        loops: report.loops ?? [], width });
      plots.push(tl.plot);
      parts.push(h('h4', {}, 'Live device memory over time'), tl.el,
        h('p', { class: 'legend-note small muted' }, 'Shaded: iterations (orange: warm-up, left out of every fit). ',
          'Drag to zoom, wheel to zoom, Shift+wheel or ◀ ▶ to pan, double-click to reset.'));
    }
    if (model.primary.length > 0) {
      const bars = iterationBars({ iterations: model.primary, slot, warmup: model.warmup, device: d, width, height: 220 });
      plots.push(bars.plot);
      parts.push(h('h4', {}, 'Live at the end of each iteration'), bars.el);
      // A long run's report keeps a sample of its iterations (docs/report-format.md "iterations[]").
      const total = report.analysis?.iterations_total ?? 0;
      if (total > (report.iterations ?? []).length) {
        parts.push(h('p', { class: 'legend-note small muted' },
          `The report keeps ${formatCount(report.iterations.length)} of ${formatCount(total)} iterations (the first and ` +
          'last 1,000 and an even sample between); each stands at its own iteration number. The dashed line has the ' +
          'slope the analysis fitted over all of them.'));
      }
    }
    return h('div', { class: 'device' }, parts);
  });
  if (blocks.length === 0) blocks.push(h('p', { class: 'muted' }, 'No device memory was allocated.'));
  return section('memory', 'Memory over time', blocks);
}

function leaksSection(report) {
  const liveColumns = [
    { title: 'call site', cell: topFrame },
    { title: 'device', num: true, cell: (r) => String(r.device) },
    { title: 'live at exit', num: true, cell: (r) => formatBytes(r.live_bytes) },
    { title: 'allocations', num: true, cell: (r) => formatCount(r.live_count) },
  ];
  const live = report.live_at_exit ?? [];
  const liveSites = report.analysis?.live_at_exit_sites ?? live.length;
  const freedAtExit = (report.leaks ?? []).length > 0 && liveSites === 0
    ? ' — the leaks above were freed when the program exited' : '';
  return section('leaks', `Leaks (${leakFindings(report).length})`,
    leakTable(report),
    h('details', { class: 'live-at-exit', open: (report.leaks ?? []).length === 0 && live.length > 0 },
      h('summary', {}, `Still live when the program exited, by call site (${plural(liveSites, 'call site')})${freedAtExit}`),
      siteTable({ columns: liveColumns, rows: live, empty: 'Nothing was live when the program exited.', limit: 100 })));
}

function render(root, doc) {
  const started = performance.now();
  const model = buildModel(doc);
  const { report } = model;
  const width = Math.max(600, Math.min(1180, root.clientWidth - 40));
  const plots = [];
  root.replaceChildren(...[
    header(report),
    verdictCard(report),
    nav(model),
    memorySection(model, width, plots),
    // A run that ran out of memory: the failures right after the timeline, before the leaks.
    report.oom ? section('oom', 'Out of memory', oomCards(report)) : null,
    leaksSection(report),
    section('advice', `Advice (${(report.advice ?? []).length})`, adviceCards(report)),
    section('flame', 'Flame graph: live memory by stack', flamePanel(model)),
    section('temporal', 'Temporal view: what a range of iterations left behind', temporalPanel(model)),
    h('footer', { class: 'muted small' },
      `${report.schema} · made by gpuleak ${report.run?.gpuleak_version ?? ''} from ${model.fromCapture ? 'a capture' : 'a report'}. `,
      'Every verdict, rate and forecast here comes from gpuleak\'s analysis; the page only draws it.'),
  ].filter(Boolean));
  return { model, plots, renderMs: performance.now() - started };
}

function main() {
  const root = document.getElementById('app');
  const started = performance.now();
  try {
    const doc = readDocument(document.getElementById('gpuleak-data').textContent);
    if (!doc) {
      root.replaceChildren(h('p', {}, 'This is the gpuleak viewer template without data. Make a report with ',
        h('code', {}, 'gpuleak view CAPTURE -o report.html'), '.'));
      window.__gpuleak = { ready: true, empty: true };
      return;
    }
    const parsedMs = performance.now() - started;
    const out = render(root, doc);
    // readyAt: since navigation start (performance's time origin), for bench/viewer_load.mjs.
    window.__gpuleak = { ready: true, ...out, parseMs: parsedMs, totalMs: performance.now() - started, readyAt: performance.now() };
  } catch (e) {
    root.replaceChildren(h('p', { class: 'error' }, `This report could not be shown: ${e.message}`));
    window.__gpuleak = { ready: true, error: String(e) };
    throw e;
  }
}

main();
