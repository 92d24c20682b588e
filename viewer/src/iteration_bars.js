// Live bytes at the end of each primary iteration, with the analysis's fitted growth line over
// the post-warm-up iterations and the warm-up shaded. The line uses the report's slope
// (growth_bytes_per_iteration); least squares passes through the mean of the fitted points, which
// places it, so nothing about the fit is decided here.
import uPlot from 'uplot';
import { formatBytes, formatCount } from './format.js';
import { COLOURS, bytesAxis } from './timeline.js';

// The fitted line's two ends, or null when there is nothing to draw.
export function fitLine(values, warmup, slope) {
  const xs = [];
  const ys = [];
  values.forEach((v, i) => {
    if (i >= warmup && v !== null && v !== undefined) { xs.push(i); ys.push(v); }
  });
  if (xs.length < 2 || !Number.isFinite(slope)) return null;
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  const at = (x) => my + slope * (x - mx);
  return { x0: xs[0], y0: at(xs[0]), x1: xs[xs.length - 1], y1: at(xs[xs.length - 1]) };
}

export function iterationBars({ iterations, slot, warmup, device, width = 1180, height = 220 }) {
  const values = iterations.map((it) => it.devices?.[slot]?.live_end_bytes ?? null);
  const x = iterations.map((_, i) => i);
  const warm = values.map((v, i) => (i < warmup ? v : null));
  const fitted = values.map((v, i) => (i >= warmup ? v : null));
  const slope = device?.growth_bytes_per_iteration ?? 0;
  const line = fitLine(values, warmup, slope);
  const fit = x.map((i) => (line && i >= line.x0 && i <= line.x1
    ? line.y0 + (line.y1 - line.y0) * ((i - line.x0) / Math.max(line.x1 - line.x0, 1)) : null));
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
        if (warmup <= 0) return;
        const { ctx } = u;
        const x0 = u.valToPos(-0.5, 'x', true);
        const x1 = u.valToPos(warmup - 0.5, 'x', true);
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
