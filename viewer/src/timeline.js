// Memory over time for one device: live bytes after every event (a step curve), primary
// iterations as alternating bands (warm-up tinted), the peak and every out-of-memory failure
// marked. Drag to zoom, wheel to zoom around the cursor, Shift+wheel or the arrow keys to pan,
// double-click or "Reset" for the whole run. It opens on the primary loop's iterations when start-up
// takes most of the run (a PyTorch program spends most of a short run importing and building its
// model), with "Loop" to come back to them. The full series stays in memory and is thinned again
// for the pixels at every zoom (decimate.js), so a million points stay interactive.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { h } from './dom.js';
import { decimateCurve } from './decimate.js';
import { BYTE_INCREMENTS, formatBytes, formatCount, formatTimeAxis, formatTimeTicks } from './format.js';

export const COLOURS = {
  line: '#0072B2',
  fill: 'rgba(0, 114, 178, 0.14)',
  band: 'rgba(0, 0, 0, 0.045)',
  warmup: 'rgba(230, 159, 0, 0.22)',
  peak: '#D55E00',
  oom: '#B00020',
  total: '#555555',
  loop: 'rgba(0, 0, 0, 0.35)',
  loopLeak: '#B00020',
  loopGrowth: '#D55E00',
};

export function bytesAxis() {
  return { values: (u, ticks) => ticks.map((v) => formatBytes(v)), incrs: BYTE_INCREMENTS, size: 80,
    grid: { stroke: '#e5e5e5' } };
}

// The primary loop's span with a margin, when the loop takes less than 80% of the run: what the
// chart opens on. Null when the whole run is the better view (no loop, or little before and after).
// `marks` (the out-of-memory failures' times) stay in view: a failure is the page's lead.
export function loopRange(iterations, [t0, t1], marks = []) {
  if (!iterations || iterations.length === 0) return null;
  const a = Math.min(iterations[0].start_ns, ...marks);
  const b = Math.max(iterations[iterations.length - 1].end_ns, ...marks);
  if (!(b > a) || b - a >= 0.8 * (t1 - t0)) return null;
  const margin = (b - a) * 0.03;
  return [Math.max(t0, a - margin), Math.min(t1, b + margin)];
}

export class Timeline {
  // series: {device, t, y, peak, coarse}; iterations: primary ones; warmup: how many are warm-up;
  // ooms: [{t_ns, index}] on this device; total: device memory or null; loops: the report's
  // loops[] (each judged on its own passes), drawn as a strip along the top when there are several.
  constructor({ series, iterations, warmup, ooms, total, loops = [], width = 1180, height = 300 }) {
    this.loops = loops.length > 1 || loops.some((l) => l.test) ? loops : [];
    this.full = series;
    this.iterations = iterations;
    this.warmup = warmup;
    this.ooms = ooms;
    this.total = total;
    const n = series.t.length;
    this.whole = [series.t[0] ?? 0, Math.max(series.t[n - 1] ?? 1, (series.t[0] ?? 0) + 1)];
    this.loop = loopRange(iterations, this.whole, ooms.map((o) => o.t_ns));
    this.range = this.loop ?? this.whole;
    this.status = h('span', { class: 'muted', 'aria-live': 'polite' });
    const button = (label, title, fn) => h('button', { type: 'button', title, onclick: fn }, label);
    const controls = h('div', { class: 'chart-controls' },
      button('◀', 'Pan left', () => this.pan(-0.25)),
      button('▶', 'Pan right', () => this.pan(0.25)),
      button('+', 'Zoom in', () => this.zoomBy(0.5)),
      button('−', 'Zoom out', () => this.zoomBy(2)),
      button('Reset', 'Show the whole run', () => this.reset()),
      this.loop ? button('Loop', 'Show the loop\'s iterations', () => this.showLoop()) : null,
      this.status);
    this.plotEl = h('div', { class: 'chart', tabindex: 0,
      'aria-label': 'Memory over time. Arrow keys pan, + and - zoom, 0 resets.' });
    this.el = h('div', {}, controls, this.plotEl);
    this.plot = new uPlot(this.options(width, height), this.dataFor(this.range, width), this.plotEl);
    this.plot.setScale('x', { min: this.range[0], max: this.range[1] });
    this.plotEl.addEventListener('wheel', (e) => this.wheel(e), { passive: false });
    this.plotEl.addEventListener('keydown', (e) => this.key(e));
    this.plotEl.addEventListener('dblclick', () => this.reset());
    this.updateStatus();
  }

  options(width, height) {
    const self = this;
    return {
      width,
      height,
      legend: { show: true },
      cursor: { drag: { x: true, y: false, setScale: true }, bind: { dblclick: () => () => null } },
      scales: {
        x: { time: false },
        y: { range: (u, min, max) => [0, Math.max(max, 1) * 1.1] },
      },
      axes: [{ values: (u, ticks) => formatTimeTicks(ticks), grid: { stroke: '#eeeeee' } }, bytesAxis()],
      series: [
        { label: 'time', value: (u, v) => (v == null ? '–' : formatTimeAxis(v)) },
        {
          label: this.full.coarse ? 'live bytes (per iteration, from the report)' : 'live bytes',
          stroke: COLOURS.line,
          fill: COLOURS.fill,
          width: 1.5,
          paths: this.full.coarse ? undefined : uPlot.paths.stepped({ align: 1 }),
          points: { show: false },
          value: (u, v) => (v == null ? '–' : formatBytes(v)),
        },
      ],
      hooks: {
        drawClear: [(u) => self.drawBands(u)],
        draw: [(u) => self.drawMarkers(u)],
        setScale: [(u, key) => { if (key === 'x') self.onZoom(u); }],
      },
    };
  }

  // The points to draw for [x0, x1]: at most three per pixel column.
  dataFor([x0, x1], width) {
    const d = decimateCurve(this.full.t, this.full.y, x0, x1, Math.max(50, Math.round(width)));
    this.shown = d.t.length;
    return [d.t, d.y];
  }

  onZoom(u) {
    const { min, max } = u.scales.x;
    if (min === this.range[0] && max === this.range[1]) return;
    this.range = [min, max];
    // Re-thin for the new window once uPlot is done with this scale change.
    queueMicrotask(() => {
      u.setData(this.dataFor(this.range, u.bbox.width / (window.devicePixelRatio || 1)), false);
      u.setScale('x', { min: this.range[0], max: this.range[1] });
      this.updateStatus();
    });
  }

  setRange(x0, x1) {
    const t = this.full.t;
    const lo = t[0];
    const hi = t[t.length - 1];
    const span = Math.max(x1 - x0, 1);
    if (x0 < lo) [x0, x1] = [lo, lo + span];
    if (x1 > hi) [x0, x1] = [Math.max(lo, hi - span), hi];
    this.plot.setScale('x', { min: x0, max: x1 });
  }

  pan(fraction) {
    const [a, b] = this.range;
    const d = (b - a) * fraction;
    this.setRange(a + d, b + d);
  }

  zoomBy(factor, at = 0.5) {
    const [a, b] = this.range;
    const c = a + (b - a) * at;
    this.setRange(c - (c - a) * factor, c + (b - c) * factor);
  }

  reset() {
    const t = this.full.t;
    this.setRange(t[0], t[t.length - 1]);
  }

  showLoop() {
    if (this.loop) this.setRange(this.loop[0], this.loop[1]);
  }

  wheel(e) {
    e.preventDefault();
    if (e.shiftKey) return this.pan(Math.sign(e.deltaY || e.deltaX) * 0.1);
    const box = this.plot.over.getBoundingClientRect();
    const at = Math.min(1, Math.max(0, (e.clientX - box.left) / box.width));
    this.zoomBy(e.deltaY < 0 ? 0.8 : 1.25, at);
  }

  key(e) {
    const actions = { ArrowLeft: () => this.pan(-0.1), ArrowRight: () => this.pan(0.1), '+': () => this.zoomBy(0.5),
      '=': () => this.zoomBy(0.5), '-': () => this.zoomBy(2), 0: () => this.reset() };
    const f = actions[e.key];
    if (f) { e.preventDefault(); f(); }
  }

  updateStatus() {
    const total = this.full.sourcePoints ?? this.full.t.length;
    const thinned = this.full.decimated ? ` (the capture had ${formatCount(total)}; peaks kept)` : '';
    const [a, b] = this.range;
    const onLoop = this.loop && Math.abs(a - this.loop[0]) + Math.abs(b - this.loop[1]) < 1e-6 * (b - a + 1)
      ? ' · showing the loop; Reset shows the whole run' : '';
    this.status.textContent = `${formatCount(this.shown)} of ${formatCount(this.full.t.length)} points drawn${thinned}${onLoop}`;
  }

  drawBands(u) {
    const { ctx } = u;
    const { left, top, width, height } = u.bbox;
    const its = this.iterations;
    if (its.length === 0) return;
    // Only the iterations in view; stripes only when each is at least 3 pixels wide.
    const { min, max } = u.scales.x;
    let lo = 0;
    let hi = its.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (its[mid].end_ns < min) lo = mid + 1;
      else hi = mid;
    }
    const px = (v) => u.valToPos(v, 'x', true);
    let visible = 0;
    for (let i = lo; i < its.length && its[i].start_ns <= max && visible < 10000; i++) visible++;
    const stripes = visible > 0 && width / visible >= 3 * (window.devicePixelRatio || 1);
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    if (this.warmup > 0) {
      ctx.fillStyle = COLOURS.warmup;
      const x0 = px(its[0].start_ns);
      ctx.fillRect(x0, top, Math.max(px(its[Math.min(this.warmup, its.length) - 1].end_ns) - x0, 1), height);
    }
    if (stripes) {
      ctx.fillStyle = COLOURS.band;
      for (let i = Math.max(lo, this.warmup); i < its.length && its[i].start_ns <= max; i++) {
        if (i % 2 === 1) continue;
        const x0 = px(its[i].start_ns);
        ctx.fillRect(x0, top, Math.max(px(its[i].end_ns) - x0, 1), height);
      }
    }
    ctx.restore();
  }

  drawMarkers(u) {
    const { ctx } = u;
    const { left, top, width, height } = u.bbox;
    const dpr = window.devicePixelRatio || 1;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    ctx.font = `${12 * dpr}px system-ui, sans-serif`;
    // uPlot leaves the context's textAlign as its last axis label set it (right or center): every
    // label here says its own, and is kept inside the plot (fitLabel), never cut by the clip.
    ctx.textAlign = 'left';
    ctx.textBaseline = 'alphabetic';
    this.labels = [];
    if (this.total && this.total <= u.scales.y.max) {
      const y = u.valToPos(this.total, 'y', true);
      ctx.strokeStyle = COLOURS.total;
      ctx.setLineDash([6 * dpr, 4 * dpr]);
      ctx.beginPath();
      ctx.moveTo(left, y);
      ctx.lineTo(left + width, y);
      ctx.stroke();
      ctx.fillStyle = COLOURS.total;
      const below = y - top < 16 * dpr;  // no room above the line: write under it
      this.fillLabel(u, `device memory ${formatBytes(this.total)}`, left + 6 * dpr, below ? y + 14 * dpr : y - 4 * dpr);
    }
    ctx.setLineDash([4 * dpr, 3 * dpr]);
    for (const o of this.ooms) {
      if (o.t_ns < u.scales.x.min || o.t_ns > u.scales.x.max) continue;  // out of view: no label at an edge
      const x = u.valToPos(o.t_ns, 'x', true);
      ctx.strokeStyle = COLOURS.oom;
      ctx.lineWidth = 2 * dpr;
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      ctx.stroke();
      ctx.fillStyle = COLOURS.oom;
      // Right of its line, or left of it when that would cross the plot's right edge.
      this.fillLabel(u, `OOM #${o.index + 1}`, x + 4 * dpr, top + height - 8 * dpr, x - 4 * dpr);
    }
    ctx.setLineDash([]);
    // Each judged loop's span: a strip along the top, red when it leaks, orange when it grows,
    // labelled with its test (or function) where there is room.
    for (const l of this.loops) {
      const x0 = u.valToPos(l.start_ns, 'x', true), x1 = u.valToPos(l.end_ns, 'x', true);
      ctx.fillStyle = l.verdict === 'leak' ? COLOURS.loopLeak : l.verdict === 'growth' ? COLOURS.loopGrowth : COLOURS.loop;
      ctx.fillRect(x0, top, Math.max(x1 - x0, 2 * dpr), 4 * dpr);
      const label = `${l.test ?? l.function ?? l.name}: ${l.verdict}`;
      if (x1 - x0 > ctx.measureText(label).width + 8 * dpr) this.fillLabel(u, label, x0 + 2 * dpr, top + 16 * dpr);
    }
    const peak = this.full.peak;
    if (peak && peak.t_ns >= u.scales.x.min && peak.t_ns <= u.scales.x.max) {
      const x = u.valToPos(peak.t_ns, 'x', true);
      const y = u.valToPos(peak.bytes, 'y', true);
      ctx.fillStyle = COLOURS.peak;
      ctx.beginPath();
      ctx.arc(x, y, 4.5 * dpr, 0, 2 * Math.PI);
      ctx.fill();
      this.fillLabel(u, `peak ${formatBytes(peak.bytes)}`, x + 8 * dpr, Math.max(top + 12 * dpr, y - 6 * dpr), x - 8 * dpr);
    }
    ctx.restore();
  }

  // Draws `text` left-aligned at (x, y) when it fits in the plot, else ending at `xRight` (its
  // right edge: the other side of a marker line), and in any case clamped inside the plot. The
  // boxes drawn are kept in this.labels (canvas pixels) for the browser test.
  fillLabel(u, text, x, y, xRight = null) {
    const { ctx } = u;
    const { left, top, width, height } = u.bbox;
    const w = ctx.measureText(text).width;
    let x0 = x;
    if (x0 + w > left + width && xRight !== null) x0 = xRight - w;
    x0 = Math.max(left, Math.min(x0, left + width - w));
    ctx.fillText(text, x0, y);
    this.labels.push({ text, x0, x1: x0 + w, y, plot: { left, top, right: left + width, bottom: top + height } });
  }
}
