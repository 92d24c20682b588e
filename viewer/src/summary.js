// The verdict and the forecast in plain words, from the report as src/analysis wrote it. These
// functions only phrase what the report says; they never weigh the evidence again.
import { formatBytes, formatCount, formatRate, formatSeconds, frameLabel } from './format.js';

const TITLES = {
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

// {verdict, title, sentence}: the headline of the page.
export function verdictSummary(report) {
  const verdict = report.verdict ?? 'inconclusive';
  const leaks = report.leaks ?? [];
  const iters = report.analysis?.primary_iterations ?? 0;
  const per = iterationWord(report);
  let sentence;
  if (verdict === 'leak' && leaks.length > 0) {
    const top = leaks[0];
    const where = frameLabel(top.stack?.[0]);
    const sites = leaks.length === 1 ? 'One call site keeps' : `${leaks.length} call sites keep`;
    sentence =
      `${sites} memory alive across iterations. The largest, ${where}, grows by ` +
      `${formatRate(top.bytes_per_iteration).replace('per iteration', `per ${per}`)} ` +
      `and holds ${formatBytes(top.live_bytes)} in ${formatCount(top.live_count)} allocations at the end.`;
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
        : `Only ${formatCount(iters)} iterations were seen: too few after warm-up to judge growth. Run more iterations.`;
  } else {
    sentence = iters
      ? `Over ${formatCount(iters)} iterations, live memory does not keep growing after warm-up.`
      : 'Nothing keeps growing.';
  }
  return { verdict, title: TITLES[verdict] ?? verdict, sentence };
}

// One sentence per device with a forecast: when it runs out at the fitted rate.
export function forecastSentences(report) {
  const out = [];
  for (const d of report.devices ?? []) {
    const f = d.forecast;
    if (!f) continue;
    const total = d.total_bytes ? ` of ${formatBytes(d.total_bytes)}` : '';
    const when =
      f.iterations_left === 0
        ? 'is already past its memory'
        : `runs out of memory${total} in about ${formatCount(f.iterations_left)} more iterations` +
          (f.seconds_left > 0 ? ` (≈ ${formatSeconds(f.seconds_left)})` : '');
    out.push(`At ${formatRate(f.bytes_per_iteration)}, ${deviceName(report, d.index)} ${when}, if nothing else changes.`);
  }
  return out;
}

// What the user should know about the capture itself before trusting it.
export function captureWarnings(report) {
  const w = [];
  const cap = report.run?.capture ?? {};
  if (cap.events_dropped > 0) w.push(`${formatCount(cap.events_dropped)} memory events were dropped (a buffer stayed full): numbers may be low.`);
  if (cap.tracking_disabled) w.push(`Tracking was turned off mid-run: ${cap.tracking_disabled}.`);
  if (cap.truncated) w.push('The capture ends mid-record: the program was killed while it was written.');
  for (const x of report.analysis?.warnings ?? []) w.push(x);
  const mode = report.run?.allocator_mode ?? '';
  if (mode.startsWith('segments') && (report.verdict === 'growth' || report.verdict === 'inconclusive')) {
    w.push('This run used a caching allocator, so gpuleak saw segments, not tensors. For per-tensor call sites ' +
      'run again with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync.');
  }
  return w;
}
