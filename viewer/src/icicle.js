// A canvas icicle (a flame graph drawn top-down): the root spans the full width and each frame's
// width is its share of live bytes. Only frames at least half a pixel wide are laid out, so ten
// thousand stacks draw in milliseconds. Click or Enter zooms into a frame; the keyboard moves a
// selection (arrows), Escape zooms out. Colours: native frames warm, Python frames cool, all light
// enough for dark text.
import { h, sizeCanvas } from './dom.js';
import { formatBytes, formatPercent, frameDetail, frameLabel, plural } from './format.js';
import { frameAt } from './data.js';

const ROW = 20;
const MAX_VISIBLE_ROWS = 28;

function hash(s) {
  let x = 2166136261;
  for (let i = 0; i < s.length; i++) x = Math.imul(x ^ s.charCodeAt(i), 16777619);
  return x >>> 0;
}

function colour(frame) {
  if (!frame) return '#d9d9d9';
  const key = frame.module || frame.file || '';
  const j = hash(key) % 40;
  if (frame.kind === 'python') return `hsl(${195 + (j % 30)}, 55%, ${78 + (j % 8)}%)`;
  return `hsl(${22 + j}, 80%, ${74 + (j % 10)}%)`;
}

export class Icicle {
  // model: for frame lookups; label(node) for the root and "other" nodes.
  constructor(model, { rootLabel = 'all live memory', onSelect = null } = {}) {
    this.model = model;
    this.rootLabel = rootLabel;
    this.rootTotal = null;
    this.onSelect = onSelect;
    this.canvas = h('canvas', { class: 'icicle', tabindex: 0, role: 'tree',
      'aria-label': 'Flame graph of live memory by call stack. Arrow keys move, Enter zooms, Escape zooms out.' });
    this.tip = h('div', { class: 'tooltip', role: 'tooltip', hidden: true });
    this.details = h('div', { class: 'icicle-details', 'aria-live': 'polite' });
    this.resetButton = h('button', { type: 'button', onclick: () => this.zoom(this.root) }, 'Reset zoom');
    this.scroller = h('div', { class: 'icicle-scroll' }, this.canvas, this.tip);
    this.el = h('div', { class: 'icicle-wrap' }, h('div', { class: 'icicle-bar' }, this.resetButton), this.scroller, this.details);
    this.rects = [];
    this.canvas.addEventListener('mousemove', (e) => this.hover(e));
    this.canvas.addEventListener('mouseleave', () => { this.tip.hidden = true; });
    this.canvas.addEventListener('click', (e) => {
      const n = this.hit(e);
      if (n) { this.select(n); this.zoom(n); }
    });
    this.canvas.addEventListener('keydown', (e) => this.key(e));
    this.canvas.icicle = this;  // for the browser test, which reads the drawn tree
    new ResizeObserver(() => this.draw()).observe(this.scroller);
  }

  setTree(root) {
    this.root = root;
    this.focus = root;
    this.selected = root;
    this.draw();
    this.describe(root);
  }

  label(node) {
    if (node.frame === -1) return this.rootLabel;
    if (node.label) return node.label;
    if (node.frame === -2) return node.sites ? `(${plural(node.sites, 'smaller call site')})` : '(other call sites)';
    return frameLabel(frameAt(this.model, node.frame), { short: true });
  }

  // A node's bytes; the root's also says how much of the moment's memory it draws (rootTotal).
  bytesText(node) {
    const total = node.frame === -1 ? this.rootTotal : null;
    return total > node.bytes ? `${formatBytes(node.bytes)} drawn of ${formatBytes(total)}` : formatBytes(node.bytes);
  }

  zoom(node) {
    this.focus = node;
    this.draw();
  }

  select(node) {
    this.selected = node;
    this.describe(node);
    this.draw();
    this.onSelect?.(node);
  }

  describe(node) {
    this.details.replaceChildren();
    if (!node || !this.root) return;
    const share = this.root.bytes ? node.bytes / this.root.bytes : 0;
    const frame = node.frame >= 0 ? frameAt(this.model, node.frame) : null;
    this.details.append(h('div', {},
      h('strong', {}, this.label(node)), ' — ',
      `${formatBytes(node.bytes)} (${formatPercent(share)} of ${formatBytes(this.root.bytes)})`,
      node.count ? `, ${plural(node.count, 'allocation')}` : '',
      frame ? h('div', { class: 'muted mono' }, frameDetail(frame)) : null));
  }

  // Lays out the visible frames: the focus's ancestors full width, the focus's subtree scaled.
  layout(width) {
    const rects = [];
    const minWidth = 0.5;
    const chain = [];
    for (let n = this.focus; n; n = n.parent) chain.unshift(n);
    chain.forEach((n, i) => rects.push({ node: n, x: 0, w: width, y: i * ROW, ghost: n !== this.focus }));
    const base = chain.length - 1;
    const scale = this.focus.bytes > 0 ? width / this.focus.bytes : 0;
    const stack = [[this.focus, 0]];
    while (stack.length) {
      const [node, x0] = stack.pop();
      let x = x0;
      for (const c of node.children) {
        const w = c.bytes * scale;
        if (w < minWidth) break;  // children are largest first
        rects.push({ node: c, x, w, y: (c.depth - this.focus.depth + base) * ROW, ghost: false });
        stack.push([c, x]);
        x += w;
      }
    }
    return rects;
  }

  draw() {
    if (!this.root) return;
    const width = Math.max(200, this.scroller.clientWidth - 2);
    this.rects = this.layout(width);
    const rows = this.rects.reduce((m, r) => Math.max(m, r.y / ROW + 1), 1);
    this.scroller.style.maxHeight = `${MAX_VISIBLE_ROWS * ROW + 2}px`;
    const ctx = sizeCanvas(this.canvas, width, rows * ROW);
    ctx.clearRect(0, 0, width, rows * ROW);
    ctx.font = '12px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    for (const r of this.rects) {
      const frame = r.node.frame >= 0 ? frameAt(this.model, r.node.frame) : null;
      ctx.fillStyle = r.node.frame === -2 ? '#e6e6e6' : r.node.frame === -3 ? '#d9d4e6'
        : r.node.frame === -1 ? '#cfd8dc' : colour(frame);
      if (r.ghost) ctx.fillStyle = '#eceff1';
      ctx.fillRect(r.x, r.y, Math.max(r.w - 1, 0.5), ROW - 1);
      if (r.node === this.selected) {
        ctx.strokeStyle = '#000';
        ctx.lineWidth = 2;
        ctx.strokeRect(r.x + 1, r.y + 1, Math.max(r.w - 3, 1), ROW - 3);
      }
      if (r.w > 30) {
        ctx.fillStyle = '#111';
        const text = `${this.label(r.node)} · ${this.bytesText(r.node)}`;
        ctx.save();
        ctx.beginPath();
        ctx.rect(r.x, r.y, r.w - 2, ROW);
        ctx.clip();
        ctx.fillText(text, r.x + 4, r.y + ROW / 2);
        ctx.restore();
      }
    }
  }

  hit(e) {
    const box = this.canvas.getBoundingClientRect();
    const x = e.clientX - box.left;
    const y = e.clientY - box.top;
    for (let i = this.rects.length - 1; i >= 0; i--) {
      const r = this.rects[i];
      if (x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + ROW) return r.node;
    }
    return null;
  }

  hover(e) {
    const n = this.hit(e);
    if (!n) { this.tip.hidden = true; return; }
    const share = this.root.bytes ? n.bytes / this.root.bytes : 0;
    this.tip.textContent = `${this.label(n)}\n${formatBytes(n.bytes)} · ${formatPercent(share)}` +
      (n.count ? ` · ${plural(n.count, 'allocation')}` : '');
    this.tip.hidden = false;
    const box = this.scroller.getBoundingClientRect();
    const left = Math.min(e.clientX - box.left + 12, box.width - 320);
    this.tip.style.left = `${Math.max(0, left)}px`;
    this.tip.style.top = `${e.clientY - box.top + this.scroller.scrollTop + 14}px`;
  }

  key(e) {
    const n = this.selected ?? this.root;
    let next = null;
    const siblings = n.parent ? n.parent.children : [n];
    const i = siblings.indexOf(n);
    if (e.key === 'ArrowUp') next = n.parent;
    else if (e.key === 'ArrowDown') next = n.children[0];
    else if (e.key === 'ArrowLeft') next = siblings[i - 1];
    else if (e.key === 'ArrowRight') next = siblings[i + 1];
    else if (e.key === 'Enter' || e.key === ' ') { this.zoom(n); e.preventDefault(); return; }
    else if (e.key === 'Escape') { this.zoom(this.focus.parent ?? this.root); e.preventDefault(); return; }
    else return;
    e.preventDefault();
    if (!next) return;
    if (!this.rects.some((r) => r.node === next)) this.focus = next.parent ?? this.root;
    this.select(next);
  }
}
