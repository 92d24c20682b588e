// The verdict and the forecast in plain words, from the report as src/analysis wrote it. These
// functions only phrase what the report says; they never weigh the evidence again.
import { forecastPhrase, formatBytes, formatCount, formatRate, plural, siteText } from './format.js';

const TITLES = {
  oom: 'Out of memory',
  leak: 'Leak found',
  growth: 'Memory grows, no single call site to blame',
  inconclusive: 'Inconclusive',
  clean: 'No leak found',
};

export function deviceName(report, index) {
  const d = (report.devices ?? []).find((x) => x.index === index);
  const name = d?.name ? ` (${d.name})` : '';
  return `GPU ${index}${name}`;
}

function iterationWord(report) {
  const loop = report.analysis?.primary_loop;
  return loop && loop !== 'auto' ? `"${loop}" iteration` : 'iteration';
}

// The newest out-of-memory failure as the page's lead: where it failed, what it asked for, what was
// live then by call site. Null when the run had none.
export function oomLead(report) {
  const events = report.oom?.events ?? [];
  if (events.length === 0) return null;
  const e = events[0];
  const free = e.total_bytes ? ` (${formatBytes(e.free_bytes)} free of ${formatBytes(e.total_bytes)})` : '';
  const sites = (e.live_by_site ?? []).slice(0, 3)
    .map((s) => `${formatBytes(s.bytes)} in ${plural(s.count, 'allocation')} at ${siteText(s)}`);
  const more = events.length > 1 ? ` ${plural(events.length - 1, 'earlier failure')} below.` : '';
  return `${e.api || 'An allocation'} of ${formatBytes(e.requested_bytes)} failed on ${deviceName(report, e.device)} ` +
    `at ${siteText(e)}, with ${formatBytes(e.live_bytes)} live${free}` +
    (e.recovered ? '; the program recovered.' : '.') +
    (sites.length ? ` Live then, by call site: ${sites.join('; ')}.` : '') + more;
}

// {verdict, title, sentence, oom}: the headline of the page. A run that ran out of memory leads
// with the failure (title "Out of memory", oom: its sentence); the verdict's sentence follows.
export function verdictSummary(report) {
  const verdict = report.verdict ?? 'inconclusive';
  const leaks = report.leaks ?? [];
  const iters = report.analysis?.primary_iterations ?? 0;
  const per = iterationWord(report);
  const oom = oomLead(report);
  let sentence;
  if (verdict === 'leak' && leaks.length > 0) {
    // The analysis's finding per user line (leak_groups) and its headline: the user's own frame,
    // decided once in src/analysis; one finding however many library sites it allocates through.
    // Reports older than leak_groups count their sites.
    const groups = report.leak_groups ?? [];
    const top = groups[0] ?? leaks[0];
    const n = groups.length || leaks.length;
    const what = groups.length
      ? (n === 1 ? 'One line of code keeps' : `${formatCount(n)} lines of code keep`)
      : (n === 1 ? 'One call site keeps' : `${formatCount(n)} call sites keep`);
    const through = (top.site_ids ?? []).length > 1 ? ` through ${plural(top.site_ids.length, 'library call site')}` : '';
    sentence =
      `${what} memory alive across iterations. The largest, ${siteText(top)}, grows by ` +
      `${formatRate(top.bytes_per_iteration).replace('per iteration', `per ${per}`)}${through} ` +
      `and holds ${formatBytes(top.live_bytes)} in ${plural(top.live_count, 'allocation')} at the last iteration.`;
  } else if (verdict === 'growth') {
    const grower = (report.devices ?? []).find((d) => d.verdict === 'growth') ?? report.devices?.[0];
    const rate = grower ? formatRate(grower.growth_bytes_per_iteration).replace('per iteration', `per ${per}`) : '';
    sentence =
      `Live memory rises (${rate}) but no call site passes the leak rules: ` +
      'typically a caching pool growing its reserve, fragmentation, or growth spread over many sites.';
  } else if (verdict === 'inconclusive') {
    const source = report.iteration_source ?? 'none';
    sentence =
      source === 'none'
        ? 'No iterations were found, so growth per iteration cannot be judged. Mark the loop ' +
          '(gpuleak_iteration_begin, or an NVTX range named "step") and run again.'
        : `Only ${plural(iters, 'iteration was', 'iterations were')} seen: too few after warm-up to judge growth. Run more iterations.`;
  } else {
    sentence = iters
      ? `Over ${plural(iters, 'iteration')}, live memory does not keep growing after warm-up.`
      : 'Nothing keeps growing.';
  }
  // Who keeps the largest leak (issue #30): its group's retained_by, as the analysis chose it.
  const kept = verdict === 'leak' ? (report.leak_groups ?? [])[0]?.retained_by : null;
  const when = { oom: ' (at the out-of-memory)', return: ' (when the main function returned)' }[kept?.event] ?? '';
  const keptBy = typeof kept?.text === 'string' && kept.text ? `Kept by ${kept.text}${when}.` : null;
  return { verdict, title: oom ? `${TITLES.oom}; verdict: ${verdict}` : TITLES[verdict] ?? verdict, sentence, oom, keptBy };
}

// One sentence per device with a forecast, in the shared words (format.js forecastPhrase); a
// device that ran out of memory in this run gets no forecast: the failure is the lead.
export function forecastSentences(report) {
  const out = [];
  const ranOut = new Set((report.oom?.events ?? []).map((e) => e.device));
  for (const d of report.devices ?? []) {
    const f = d.forecast;
    if (!f) continue;
    if (ranOut.has(d.index)) {
      out.push(`${deviceName(report, d.index)}: ran out of memory in this run.`);
      continue;
    }
    const facts = [d.name, d.total_bytes ? formatBytes(d.total_bytes) : null].filter(Boolean).join(', ');
    // What the forecast counted beyond the tracked live bytes (report 1.3).
    let held = '';
    if (f.fills === 'jax_arena') held = `, when JAX's arena is full (${formatBytes(f.pool_free_bytes ?? 0)} of it free at the last iteration)`;
    else if (f.held_elsewhere_bytes > 0) held = `, with the ${formatBytes(f.held_elsewhere_bytes)} held outside the tracked allocations`;
    out.push(`GPU ${d.index}${facts ? ` (${facts})` : ''}: ${forecastPhrase(f.iterations_left, f.seconds_left)} ` +
      `at ${formatRate(f.bytes_per_iteration)}${held}, if nothing else changes.`);
  }
  return out;
}

// The analysis's note on how the allocator's objects were seen (through PyTorch's trace, sampled,
// or hidden in segments, and how to see more): the sentence the text summary and the Markdown
// report print as their note. null when the report has none.
export function allocatorNote(report) {
  const note = report.run?.allocator_note;
  return typeof note === 'string' && note ? note : null;
}

// What the user should know about the capture itself before trusting it.
export function captureWarnings(report) {
  const w = [];
  const cap = report.run?.capture ?? {};
  if (cap.events_dropped > 0) w.push(`${plural(cap.events_dropped, 'memory event was', 'memory events were')} dropped (a buffer stayed full): numbers may be low.`);
  if (cap.tracking_disabled) w.push(`Tracking was turned off mid-run: ${cap.tracking_disabled}.`);
  if (cap.truncated) w.push('The capture ends mid-record: the program was killed while it was written.');
  for (const x of report.analysis?.warnings ?? []) w.push(x);
  return w;
}
