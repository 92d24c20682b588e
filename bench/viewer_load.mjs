// How long gpuleak's HTML report takes to open, and to respond, in headless Chromium.
//
//   node bench/viewer_load.mjs [--runs N] [--template viewer/prebuilt/viewer.html] [PAGE.html ...]
//
// With pages, measures those (e.g. from `gpuleak view`). Without, builds two synthetic pages the
// way the CLI does (same document layout, same escaping) and measures them:
//   typical: 1 GPU, 100,000 timeline points, 1,000 iterations, 1,000 call sites 24 frames deep;
//   large:   1 GPU, 1,000,000 timeline points, 2,000 iterations, 10,000 call sites 32 frames deep.
// Prints one line per page: HTML size, time to interactive (navigation start to the app ready),
// the app's own parse and render time, a timeline zoom, and a flame graph switch. Needs Chromium
// (/usr/bin/chromium or $GPULEAK_CHROMIUM) and viewer/node_modules (npm ci).
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { chromium } = createRequire(join(root, 'viewer/package.json'))('playwright-core');

const args = process.argv.slice(2);
let runs = 3;
let template = join(root, 'viewer/prebuilt/viewer.html');
const pages = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--runs') runs = Number(args[++i]);
  else if (args[i] === '--template') template = args[++i];
  else pages.push(resolve(args[i]));
}

// A deterministic pseudo-random sequence, so that every run measures the same page.
function rng(seed) {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296);
}

function syntheticDocument({ points, iterations, sites, depth }) {
  const rnd = rng(42);
  const duration = 600e9;
  const t = new Array(points);
  const y = new Array(points);
  let live = 2 ** 30;
  for (let i = 0; i < points; i++) {
    t[i] = Math.round((i / points) * duration);
    live = Math.max(0, live + Math.round((rnd() - 0.499) * 64 * 2 ** 20));
    y[i] = live;
  }
  const its = { loops: ['step'], loop: [], index: [], primary: [], start_ns: [], end_ns: [],
    devices: [{ index: 0, live_end_bytes: [], peak_bytes: [], allocated_bytes: [], freed_bytes: [], alloc_count: [], free_count: [] }] };
  for (let i = 0; i < iterations; i++) {
    const s = (i / iterations) * duration;
    const e = ((i + 1) / iterations) * duration - 1;
    its.loop.push(0); its.index.push(i); its.primary.push(1); its.start_ns.push(Math.round(s)); its.end_ns.push(Math.round(e));
    const d = its.devices[0];
    d.live_end_bytes.push(2 ** 30 + i * 2 ** 20); d.peak_bytes.push(2 ** 31 + i * 2 ** 20);
    d.allocated_bytes.push(2 ** 31); d.freed_bytes.push(2 ** 31 - 2 ** 20); d.alloc_count.push(500); d.free_count.push(499);
  }
  // Frames: a shared trunk (main, train loop), then per-site frames from a pool of modules.
  const frames = { function: [], file: [], line: [], module: [], kind: [], address: [] };
  const frame = (fn, file, line, module, kind) => {
    frames.function.push(fn); frames.file.push(file); frames.line.push(line); frames.module.push(module);
    frames.kind.push(kind); frames.address.push(null);
    return frames.function.length - 1;
  };
  const trunk = [frame('main', 'train.py', 200, null, 'python'), frame('train', 'train.py', 120, null, 'python')];
  const siteFrames = [];
  const siteIds = [];
  for (let s = 0; s < sites; s++) {
    const stack = [];
    for (let d = 0; d < depth - trunk.length; d++) {
      const shared = d > depth / 2 ? (s % 50) * 100 + d : s * 1000 + d;  // outer frames shared by groups
      stack.push(frame(`fn_${shared}<at::Tensor, float>(long)`, `src/module_${shared % 97}/file_${shared}.cpp`, 10 + d,
        `libmod${shared % 13}.so`, 'native'));
    }
    siteFrames.push([...stack, ...trunk.slice().reverse()]);
    siteIds.push(s.toString(16).padStart(16, '0'));
  }
  const snapshot = (kind, scale) => ({
    kind, device: 0, t_ns: kind === 'end' ? duration : duration / 2, live_bytes: 0, live_count: 0,
    site: siteFrames.map((_, s) => s), bytes: siteFrames.map((_, s) => Math.round(scale * (1 + (s % 1000)) * 2 ** 16)),
    count: siteFrames.map(() => 3), other: { sites: 0, bytes: 0, count: 0 },
  });
  const snapshots = [snapshot('end', 1), snapshot('peak', 2)];
  for (const s of snapshots) s.live_bytes = s.bytes.reduce((a, b) => a + b, 0);
  const temporal = { loop: 'step', iterations, start_ns: its.start_ns, end_ns: its.end_ns,
    site: [], device: [], birth_iteration: [], death_iteration: [], count: [], bytes: [] };
  for (let i = 0; i < iterations; i++) {
    for (let k = 0; k < 5; k++) {
      temporal.site.push((i * 7 + k) % sites); temporal.device.push(0); temporal.birth_iteration.push(i);
      temporal.death_iteration.push(k === 0 ? -1 : Math.min(iterations, i + k)); temporal.count.push(1);
      temporal.bytes.push(2 ** 20);
    }
  }
  const leakStack = siteFrames[0].map((f) => ({ kind: frames.kind[f], function: frames.function[f], file: frames.file[f],
    line: frames.line[f], module: frames.module[f] }));
  const report = {
    schema: 'gpuleak.report/1', verdict: 'leak', iteration_source: 'nvtx',
    run: { command: ['python3', 'train.py'], program: 'train.py', pid: 4242, host: 'bench', duration_ns: duration,
      gpuleak_version: 'bench', allocator_mode: 'per-tensor (cudaMallocAsync)', capture: { events: points, events_dropped: 0 } },
    analysis: { primary_loop: 'step', primary_iterations: iterations, warmup_iterations: 5, live_at_exit_sites: sites },
    devices: [{ index: 0, name: 'NVIDIA H200', total_bytes: 150754820096, peak_live_bytes: Math.max(...y.slice(0, 1000)),
      live_at_exit_bytes: y[points - 1], verdict: 'leak', growth_bytes_per_iteration: 2 ** 20, growth_r2: 0.99,
      forecast: { iterations_left: 120000, seconds_left: 72000, bytes_per_iteration: 2 ** 20 } }],
    leaks: [{ site_id: siteIds[0], stack: leakStack, device: 0, bytes_per_iteration: 2 ** 20, live_bytes: 2 ** 30,
      live_count: iterations, first_iteration: 0, confidence: 0.98 }],
    live_at_exit: [], advice: [], oom: null,
  };
  const view = { schema: 'gpuleak.view/1',
    timeline: [{ device: 0, t_ns: t, live_bytes: y, source_points: points, decimated: false, peak: { t_ns: t[1], bytes: y[1] } }],
    snapshots, temporal, sites: { site_id: siteIds, frames: siteFrames }, frames };
  return { schema: 'gpuleak.html/1', report, iterations: its, view };
}

// The CLI's escaping (src/output/view/html_document.cpp).
function embed(doc) {
  const json = JSON.stringify(doc).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
  return readFileSync(template, 'utf8').replace('"__GPULEAK_DATA__"', () => json);
}

const work = mkdtempSync(join(tmpdir(), 'gpuleak-bench-'));
if (pages.length === 0) {
  const cases = { typical: { points: 100_000, iterations: 1000, sites: 1000, depth: 24 },
    large: { points: 1_000_000, iterations: 2000, sites: 10_000, depth: 32 } };
  for (const [name, c] of Object.entries(cases)) {
    const path = join(work, `${name}.html`);
    writeFileSync(path, embed(syntheticDocument(c)));
    pages.push(path);
  }
}

const browser = await chromium.launch({
  executablePath: process.env.GPULEAK_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
try {
  for (const path of pages) {
    const m = { ready: [], app: [], parse: [], zoom: [], flame: [] };
    for (let r = 0; r < runs; r++) {
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      const errors = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      await page.route('**/*', (req) => (req.request().url().startsWith('file:') ? req.continue() : req.abort()));
      await page.goto(pathToFileURL(path).href, { waitUntil: 'commit', timeout: 300000 });
      await page.waitForFunction(() => window.__gpuleak?.ready, null, { timeout: 300000, polling: 20 });
      const t = await page.evaluate(async () => {
        const g = window.__gpuleak;
        const frame = () => new Promise((res) => requestAnimationFrame(() => res()));
        const out = { ready: g.readyAt, app: g.totalMs, parse: g.parseMs };
        const u = g.plots?.[0];
        if (u) {
          const t0 = performance.now();
          const span = u.scales.x.max - u.scales.x.min;
          u.setScale('x', { min: u.scales.x.min + span * 0.45, max: u.scales.x.min + span * 0.55 });
          await frame(); await frame();
          out.zoom = performance.now() - t0;
        }
        const select = document.getElementById('flame-moment');
        if (select && select.options.length > 1) {
          const t0 = performance.now();
          select.value = select.value === '0' ? '1' : '0';
          select.dispatchEvent(new Event('change'));
          await frame();
          out.flame = performance.now() - t0;
        }
        return out;
      });
      if (errors.length) throw new Error(`${path}: ${errors.join(' | ')}`);
      for (const k of Object.keys(m)) if (t[k] !== undefined) m[k].push(t[k]);
      await page.close();
    }
    const ms = (k) => (m[k].length ? `${median(m[k]).toFixed(0)} ms` : '–');
    const size = statSync(path).size / 2 ** 20;
    console.log(`${path.split('/').pop()}: ${size.toFixed(1)} MiB; interactive after ${ms('ready')} ` +
      `(JSON.parse ${ms('parse')}, app total ${ms('app')}); zoom ${ms('zoom')}; flame graph switch ${ms('flame')} ` +
      `(median of ${runs})`);
  }
} finally {
  await browser.close();
  rmSync(work, { recursive: true, force: true });
}
