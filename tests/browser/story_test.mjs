// Issue #28 "one story for the user", as a PyTorch user meets the viewer: every finding and failure
// is named by the report's headline (the user's line), a leak is one finding with its library
// sites under it, the flame graph shows the leak and draws the caching allocator's cache apart
// (and only when asked), the timeline opens on the loop, the per-iteration chart stands at
// iteration numbers with the analysis's line through the bars, the temporal view has something to
// show when the program freed its leak at exit, and library frames hide with one toggle.
// Pages: a PyTorch-shaped report (torch_report.mjs), the issue's fixtures (tests/fixtures/issue28)
// and a capture of a caching allocator's blocks (prog_pool_blocks leak).
// Usage: node story_test.mjs TORCH_HTML OOM_HTML THREE_SITES_HTML POOL_HTML SCREENSHOT_DIR
import { checker, launch, open } from './page.mjs';

const [torchHtml, oomHtml, threeHtml, poolHtml, shots] = process.argv.slice(2);
const { check, failures } = checker();
const browser = await launch();
const LIBRARY = /alloc_block|DeviceCachingAllocator|empty_generic\(/;

// The drawn flame graph of a panel: the root's children as {label, bytes, frame} and every
// frame index drawn (the icicle keeps the tree it draws on its canvas).
async function flame(page, panel = '#flame') {
  return page.evaluate((sel) => {
    const ic = document.querySelector(`${sel} canvas.icicle`).icicle;
    const frames = [];
    const walk = (n) => { if (n.frame >= 0) frames.push(n.frame); n.children.forEach(walk); };
    walk(ic.root);
    return { root: ic.root.bytes, children: ic.root.children.map((c) => ({ label: ic.label(c), bytes: c.bytes, frame: c.frame })),
      frames, rootText: `${ic.label(ic.root)} · ${ic.bytesText(ic.root)}`, note: document.querySelector('#flame-note')?.textContent ?? '' };
  }, panel);
}

async function setChecked(page, id, on) {
  await page.evaluate(([i, v]) => {
    const box = document.getElementById(i);
    if (box.checked !== v) box.click();
  }, [id, on]);
}

try {
  // A PyTorch run: 40 s of start-up, a 4 s loop, a leak freed at exit, 1.9 GiB of cache at exit.
  const t = await open(browser, torchHtml);
  const verdict = await t.page.textContent('#verdict');
  check(/One line of code keeps memory alive/.test(verdict) && /The largest, train\.py:52 in train_step, grows/.test(verdict),
    'the verdict names one finding at the user\'s line, train.py:52');
  check(/through 3 library call sites/.test(verdict), 'the verdict counts the library sites under it');
  check(!LIBRARY.test(verdict), 'the verdict names no allocator frame');
  const rows = t.page.locator('#leak-table > tbody > tr.site-row');
  check((await rows.count()) === 1, `one leak row for one user line (${await rows.count()})`);
  const row = (await rows.first().textContent()) ?? '';
  check(/^▸ train\.py:52 in train_step/.test(row) && /\+72\.0 KiB per iteration/.test(row) && /freed at exit/.test(row),
    `the row leads with the headline and its rate (${row.slice(0, 90)})`);
  await rows.first().click();
  const sites = await t.page.locator('#leak-table > tbody > tr.stack-row:not([hidden]) tr.site-row').allTextContents();
  check(sites.length === 3 && ['Linear.forward', 'GELU.forward', 'mse_loss'].every((f, i) => sites[i].includes(`via ${f}`)),
    `its three library sites are listed under it (${sites.map((s) => s.slice(2, 60)).join(' | ')})`);
  await t.page.locator('#leaks').screenshot({ path: `${shots}/story-leaks.png` });

  // The time axis opens on the loop; Reset shows the whole run, Loop comes back.
  const axis = await t.page.evaluate(() => {
    const u = window.__gpuleak.plots[0];
    const its = window.__gpuleak.model.primary;
    return { min: u.scales.x.min, max: u.scales.x.max, loop0: its[0].start_ns, loop1: its[its.length - 1].end_ns,
      run: window.__gpuleak.model.report.run.duration_ns };
  });
  check(axis.min >= axis.loop0 - 0.05 * (axis.loop1 - axis.loop0) && axis.max <= axis.loop1 + 0.05 * (axis.loop1 - axis.loop0),
    `the time axis opens on the loop (${(axis.min / 1e9).toFixed(2)}..${(axis.max / 1e9).toFixed(2)} s of a ${(axis.run / 1e9).toFixed(1)} s run)`);
  const status = (await t.page.textContent('#memory .chart-controls')) ?? '';
  check(/showing the loop; Reset shows the whole run/.test(status) && /Loop/.test(status), 'it says so, with a Loop button');

  // The per-iteration chart: x is the iteration number (10,000 of 20,480 kept), the fitted line is
  // the report's slope through the median of y - slope x and meets the bars.
  const bars = await t.page.evaluate(() => {
    const u = window.__gpuleak.plots[1];
    const [x, , y, fit] = u.data;
    const slope = window.__gpuleak.model.report.devices[0].growth_bytes_per_iteration;
    const gaps = [];
    for (let i = 0; i < x.length; i++) if (fit[i] !== null && y[i] !== null) gaps.push(Math.abs(fit[i] - y[i]));
    gaps.sort((a, b) => a - b);
    const n = x.length;
    return { n, lastX: x[n - 1], slopeDrawn: (fit[n - 1] - fit[n - 2]) / (x[n - 1] - x[n - 2]), slope,
      medianGap: gaps[gaps.length >> 1], maxGap: gaps[gaps.length - 1] };
  });
  check(bars.n === 10000 && bars.lastX === 20479, `the bars stand at iteration numbers (${bars.n} points, the last at ${bars.lastX})`);
  check(Math.abs(bars.slopeDrawn - bars.slope) < 1e-6 * bars.slope, 'the line has the report\'s slope');
  check(bars.maxGap <= 20 * 1024 * 1024 && bars.medianGap <= 10 * 1024 * 1024,
    `the line meets the bars (median gap ${(bars.medianGap / 1048576).toFixed(1)} MiB, largest ${(bars.maxGap / 1048576).toFixed(1)} MiB; segments step by 20 MiB)`);
  await t.page.evaluate(() => window.scrollTo(0, 0));
  await t.page.screenshot({ path: `${shots}/story-top.png` });

  // The flame graph opens on the last iteration, where the leak is, with the cache not drawn.
  const moment = await t.page.$eval('#flame-moment', (s) => s.options[s.selectedIndex].text);
  check(/^the last iteration \(#20479/.test(moment), `the flame graph opens on the last iteration (${moment})`);
  let f = await flame(t.page);
  check(f.children[0]?.frame >= 0 && /main \(train\.py:80\)/.test(f.children[0].label),
    `its widest box is the program's stack, not the cache (${f.children.map((c) => c.label).join(', ')})`);
  check(f.children.every((c) => !/other call sites|cache/.test(c.label)), 'no "(other call sites)" or cache box by default');
  check(/Not drawn: 660 MiB .*PyTorch's caching allocator's cache/.test(f.note), `the page says what it left out (${f.note.slice(0, 100)})`);
  await t.page.locator('#flame').screenshot({ path: `${shots}/story-flame.png` });
  await setChecked(t.page, 'flame-show-cache', true);
  f = await flame(t.page);
  check(f.children.some((c) => /not leaking: smaller call sites and PyTorch's caching allocator's cache/.test(c.label)),
    'the cache switch draws the rest beside the stacks, named');
  // At the end of the run: the tensors and the cuBLAS workspace by site, the cache as its own box.
  await t.page.$eval('#flame-moment', (s) => {
    s.value = [...s.options].find((o) => /^the end of the run/.test(o.text)).value;
    s.dispatchEvent(new Event('change'));
  });
  f = await flame(t.page);
  const cache = f.children.find((c) => c.frame === -3);
  check(cache && /^cached by PyTorch's caching allocator, not in tensors$/.test(cache.label) &&
    cache.bytes === Math.round(1.9 * 2 ** 30) - 65 * 2 ** 20, `at the end the cache is its own box (${cache?.label}: ${cache?.bytes})`);
  check(!f.children.some((c) => c.frame === -2), 'and no "(other call sites)" box hides it');
  await setChecked(t.page, 'flame-show-cache', false);
  f = await flame(t.page);
  check(f.children.length > 0 && f.children.every((c) => c.frame >= 0) && /265 MiB drawn of 2\.10 GiB/.test(f.rootText),
    `without the cache: only stacks, the root says how much it draws (${f.rootText})`);
  // Hide library frames: only the user's frames and each site's headline remain.
  await setChecked(t.page, 'flame-hide-library', true);
  const kept = await t.page.evaluate(() => {
    const ic = document.querySelector('#flame canvas.icicle').icicle;
    const labels = [];
    const walk = (n) => { if (n.frame >= 0) labels.push(ic.label(n)); n.children.forEach(walk); };
    walk(ic.root);
    return labels;
  });
  check(kept.length > 0 && kept.every((l) => /train\.py|model\.py/.test(l)), `hide library frames keeps the user's frames (${kept.join(', ')})`);
  check(t.errors.length === 0 && t.outside.length === 0, `PyTorch page: no console errors, no request (${t.errors.join(' | ')})`);

  // The OOM fixture: the banner and every row lead with infer.py:20, not c10's alloc_block.
  const o = await open(browser, oomHtml);
  const lead = (await o.page.textContent('#verdict .oom-lead')) ?? '';
  check(/failed on GPU 0 \(NVIDIA H200\) at infer\.py:20 in infer/.test(lead) && !LIBRARY.test(lead),
    `the OOM banner leads with the headline (${lead.slice(0, 110)})`);
  check(/Live then, by call site: 768 MiB in 12 allocations at infer\.py:20/.test(lead), 'its live-by-site names the headline');
  const oomRows = await o.page.locator('#oom tr.site-row').allTextContents();
  check(oomRows.length === 2 && oomRows.every((r) => /^▸ infer\.py:20 in infer/.test(r)), 'the OOM cards\' rows lead with the headline');
  const failed = await o.page.locator('#oom summary').first().textContent();
  check(/^The failed request's stack: infer\.py:20 in infer/.test(failed), 'the failed request is named by its headline');
  const stack = await o.page.evaluate(() => { const d = document.querySelector('#oom details'); d.open = true; return d.textContent; });
  check(/DeviceCachingAllocator::alloc_block \(libc10_cuda\.so\)/.test(stack) && /AllocParams&/.test(stack),
    'its stack reads C++ names short, the whole name beside them');
  f = await flame(o.page);
  check(f.children.every((c) => c.frame >= 0), `the OOM flame graph draws the listed stacks only (${f.children.map((c) => c.label).join(', ')})`);
  await o.page.evaluate(() => window.scrollTo(0, 0));
  await o.page.screenshot({ path: `${shots}/story-oom.png` });
  check(o.errors.length === 0, `OOM page: no console errors ${o.errors.join(' | ')}`);

  // Three library sites under one line (the gate's 18 MiB case): one finding.
  const s = await open(browser, threeHtml);
  const threeRows = s.page.locator('#leak-table > tbody > tr.site-row');
  check((await threeRows.count()) === 1 && /train\.py:52 in train_step/.test(await threeRows.first().textContent()) &&
    /\+18\.0 MiB per iteration/.test(await threeRows.first().textContent()), 'three sites at train.py:52: one row of 18 MiB per iteration');
  check(s.errors.length === 0, `three-sites page: no console errors ${s.errors.join(' | ')}`);

  // A capture with a caching allocator's blocks: the view's own snapshots and temporal view.
  const p = await open(browser, poolHtml);
  const pm = await p.page.$eval('#flame-moment', (el) => el.options[el.selectedIndex].text);
  check(/^the last iteration/.test(pm), `from a capture too the flame graph opens on the last iteration (${pm})`);
  f = await flame(p.page);
  check(f.children.every((c) => c.frame >= 0) && /held in no tensor \(its cache\)/.test(f.note), `the cache is left out and said (${f.note.slice(0, 90)})`);
  await setChecked(p.page, 'flame-show-cache', true);
  f = await flame(p.page);
  const pc = f.children.find((c) => c.frame === -3);
  check(pc && pc.bytes === 120 * 2 ** 20, `with the switch: the cache, 8 segments of 20 MiB less 40 MiB of tensors (${pc?.bytes})`);
  const temporal = (await p.page.textContent('#temporal')) ?? '';
  check(/still alive at the end of iteration 39: 3[0-9]\.0 MiB/.test(temporal), `the temporal view opens on the leak (${temporal.match(/Allocations made[^.]*\./)?.[0]})`);
  await setChecked(p.page, 'temporal-hide-library', true);
  const tk = await p.page.evaluate(() => {
    const m = window.__gpuleak.model;
    const ic = document.querySelector('#temporal canvas.icicle').icicle;
    const out = [];
    const walk = (n) => { if (n.frame >= 0) out.push([m.frames.user[n.frame], m.frames.function[n.frame]]); n.children.forEach(walk); };
    walk(ic.root);
    return out;
  });
  check(tk.length > 0 && tk.every(([u, fn]) => u === 1 || /keep_tensor/.test(fn)),
    `the temporal view hides library frames too (${tk.map(([u, fn]) => `${fn}:${u}`).join(', ')})`);
  check(p.errors.length === 0, `capture page: no console errors ${p.errors.join(' | ')}`);
} finally {
  await browser.cleanUp();
}

console.log(failures.length ? `${failures.length} checks failed` : 'all checks passed');
process.exit(failures.length ? 1 : 0);
