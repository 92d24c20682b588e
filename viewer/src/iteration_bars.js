// Live bytes at the end of each primary iteration, by iteration number (a long run's report keeps a
// sample of its iterations, each with its own index: the bars stand at their numbers, not at their
// positions in the sample), with the analysis's fitted growth line over the post-warm-up
// iterations and the warm-up shaded. The line is the analysis's: the report's Theil-Sen slope
// (growth_bytes_per_iteration) through the median of y - slope x, which is where src/analysis puts
// its line (docs/report-format.md "Verdict rules"), not through the points' mean.
import uPlot from 'uplot';
import { formatBytes, formatCount } from './format.js';
import { COLOURS, bytesAxis } from './timeline.js';

function median(values) {
  const s = Float64Array.from(values).sort();
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// The fitted line's two ends over the post-warm-up points, or null when there is nothing to draw.
// xs: iteration numbers, ascending; ys: live bytes (null where unknown); points from iteration
// `firstFitted` on are fitted.
export function fitLine(xs, ys, firstFitted, slope) {
  const px = [];
  const py = [];
  xs.forEach((x, i) => {
    if (x >= firstFitted && ys[i] !== null && ys[i] !== undefined) { px.push(x); py.push(ys[i]); }
  });
  if (px.length < 2 || !Number.isFinite(slope)) return null;
  const intercept = median(py.map((y, i) => y - slope * px[i]));
  const at = (x) => intercept + slope * x;
  return { intercept, x0: px[0], y0: at(px[0]), x1: px[px.length - 1], y1: at(px[px.length - 1]) };
}

export function iterationBars({ iterations, slot, warmup, device, width = 1180, height = 220 }) {
  const values = iterations.map((it) => it.devices?.[slot]?.live_end_bytes ?? null);
  const x = iterations.map((it) => it.index);
  // The first fitted iteration's number (a sampled report keeps its first 1,000 iterations whole).
  const firstFitted = iterations[Math.min(warmup, iterations.length - 1)]?.index ?? 0;
  const warm = values.map((v, i) => (x[i] < firstFitted ? v : null));
  const fitted = values.map((v, i) => (x[i] >= firstFitted ? v : null));
  const slope = device?.growth_bytes_per_iteration ?? 0;
  const line = fitLine(x, values, firstFitted, slope);
  const fit = x.map((k) => (line && k >= line.x0 && k <= line.x1 ? line.intercept + slope * k : null));
  // Beyond a few thousand iterations bars are thinner than a pixel: draw lines (uPlot keeps each
  // pixel column's min and max) instead.
  const bars = iterations.length > 3000 ? undefined : uPlot.paths.bars({ size: [0.8, 48], gap: 1 });
  const r2 = device?.growth_r2;
  const opts = {
    width,
    height,
    cursor: { drag: { x: true, y: false } },
    scales: { x: { time: false, range: (u, min, max) => [min - 0.6, max + 0.6] }, y: { range: (u, min, max) => [0, Math.max(max, 1) * 1.1] } },
    axes: [
      { label: 'iteration', values: (u, ticks) => ticks.map((t) => (Number.isInteger(t) ? formatCount(t) : '')) },
      bytesAxis(),
    ],
    series: [
      { label: 'iteration', value: (u, v) => (v == null ? '–' : String(v)) },
      { label: 'warm-up (left out of the fit)', fill: '#E69F00', stroke: '#8a5a00', paths: bars, points: { show: false },
        value: (u, v) => (v == null ? '–' : formatBytes(v)) },
      { label: 'live at the end', fill: '#56B4E9', stroke: '#1f6f99', paths: bars, points: { show: false },
        value: (u, v) => (v == null ? '–' : formatBytes(v)) },
      { label: `fitted growth ${formatBytes(slope)} per iteration${Number.isFinite(r2) ? ` (R² ${r2.toFixed(2)})` : ''}`,
        stroke: COLOURS.peak, width: 2, dash: [8, 4], points: { show: false }, spanGaps: false,
        value: (u, v) => (v == null ? '–' : formatBytes(v)) },
    ],
    hooks: {
      drawClear: [(u) => {
        if (warmup <= 0 || x.length === 0) return;
        const { ctx } = u;
        const x0 = u.valToPos(x[0] - 0.5, 'x', true);
        const x1 = u.valToPos(firstFitted - 0.5, 'x', true);
        ctx.save();
        ctx.fillStyle = COLOURS.warmup;
        ctx.fillRect(Math.max(x0, u.bbox.left), u.bbox.top, x1 - Math.max(x0, u.bbox.left), u.bbox.height);
        ctx.restore();
      }],
    },
  };
  const el = document.createElement('div');
  el.className = 'chart';
  const plot = new uPlot(opts, [x, warm, fitted, fit], el);
  return { el, plot };
}
