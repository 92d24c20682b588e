// Opens gpuleak's HTML report in headless Chromium from file://, with every non-file request
// refused, and checks what a user sees: the verdict in words, the leak table's rows, the stack on
// Enter, a zoomable timeline, the flame graph, and no console errors. Saves a screenshot. Then a
// run that ran out of memory: the page leads with the failure, and every label drawn on the
// timeline's canvas (device memory, OOM #1, peak) lies inside the plot, none cut at an edge.
// Usage: node viewer_test.mjs REPORT_HTML FROM_REPORT_HTML SCREENSHOT_PNG OOM_HTML
import { checker, launch, open as openPage } from './page.mjs';

const [reportHtml, fromReportHtml, screenshot, oomHtml] = process.argv.slice(2);
const { check, failures } = checker();
const browser = await launch();

// Every fillText on a timeline canvas, as drawn: the text's box from the context's own textAlign
// and measureText, and the plot area (uPlot's .u-over, in canvas pixels) it must stay inside.
function recordCanvasText() {
  window.__labels = [];
  const fill = CanvasRenderingContext2D.prototype.fillText;
  CanvasRenderingContext2D.prototype.fillText = function (text, x, y, ...rest) {
    const over = this.canvas.parentElement?.querySelector(':scope > .u-over');
    if (over) {
      const dpr = window.devicePixelRatio || 1;
      const w = this.measureText(text).width;
      const align = this.textAlign === 'start' ? 'left' : this.textAlign === 'end' ? 'right' : this.textAlign;
      const x0 = align === 'right' ? x - w : align === 'center' ? x - w / 2 : x;
      const px = (v) => parseFloat(v) * dpr;
      window.__labels.push({ text: String(text), x0, x1: x0 + w, plotLeft: px(over.style.left), plotRight:
        px(over.style.left) + px(over.style.width) });
    }
    return fill.call(this, text, x, y, ...rest);
  };
}

const open = (file) => openPage(browser, file, recordCanvasText);

try {
  const { page, errors, outside } = await open(reportHtml);
  const state = await page.evaluate(() => ({ error: window.__gpuleak.error ?? null, totalMs: window.__gpuleak.totalMs }));
  check(state.error === null, `the app started (${state.error ?? `${state.totalMs?.toFixed(0)} ms`})`);
  const verdict = await page.textContent('#verdict');
  check(/LEAK/.test(verdict) && /Leak found/.test(verdict), 'the verdict says "Leak found"');
  check(/cache_activation/.test(verdict), 'the verdict names the leaking function');
  check(/per iteration|per "/.test(verdict), 'the verdict gives a rate per iteration');

  const rows = page.locator('#leak-table > tbody > tr.site-row');
  check((await rows.count()) >= 1, `the leak table has rows (${await rows.count()})`);
  const first = (await rows.first().textContent()) ?? '';
  check(/cache_activation/.test(first), 'the first leak row is cache_activation');
  check(/MiB/.test(first), 'sizes are in binary units (MiB)');
  await rows.first().focus();
  await page.keyboard.press('Enter');
  check((await rows.first().getAttribute('aria-expanded')) === 'true', 'Enter opens the stack');
  const stack = (await page.locator('#leaks tr.stack-row:not([hidden])').first().textContent()) ?? '';
  check(/main/.test(stack), 'the stack shows the frames out to main');

  check((await page.locator('#memory .uplot').count()) >= 2, 'the timeline and the iteration bars are drawn');
  const zoom = await page.evaluate(async () => {
    const u = window.__gpuleak.plots[0];
    const before = u.scales.x.max - u.scales.x.min;
    u.setScale('x', { min: u.scales.x.min, max: u.scales.x.min + before / 4 });
    await new Promise((r) => setTimeout(r, 50));
    return { before, after: u.scales.x.max - u.scales.x.min, points: u.data[0].length };
  });
  check(zoom.after < zoom.before * 0.3, `the timeline zooms (${zoom.before} -> ${zoom.after} ns)`);
  const reset = await page.evaluate(async () => {
    document.querySelector('#memory .chart-controls button:nth-child(5)').click();
    await new Promise((r) => setTimeout(r, 50));
    const u = window.__gpuleak.plots[0];
    const t = window.__gpuleak.model.timelines[0].t;
    return { span: u.scales.x.max - u.scales.x.min, run: t[t.length - 1] - t[0] };
  });
  check(Math.abs(reset.span - reset.run) <= reset.run * 0.01, `Reset shows the whole run (${reset.span} of ${reset.run} ns)`);

  check((await page.locator('#flame canvas.icicle').count()) === 1, 'the flame graph is drawn');
  const flameText = (await page.textContent('#flame .icicle-details')) ?? '';
  check(/MiB/.test(flameText), `the flame graph describes its root (${flameText.slice(0, 60)})`);
  const temporal = (await page.textContent('#temporal')) ?? '';
  check(/still alive at the end of iteration \d+: [1-9][\d.]* MiB/.test(temporal),
    `the temporal view opens on what the iterations left at the last one (${temporal.match(/Allocations made[^.]*\./)?.[0]})`);

  // The advice section shows each finding of the report's advice[] (the leaky loop's 4 MiB
  // temporary, allocated and freed every iteration, is churn) and its sentence, as text.
  const advice = await page.evaluate(() => ({
    expected: (window.__gpuleak.model.report.advice ?? []).map((a) => [a.kind, a.message]),
    cards: [...document.querySelectorAll('#advice .advice-card')].map((c) => c.textContent),
  }));
  check(advice.cards.length === advice.expected.length,
    `one advice card per finding (${advice.cards.length} of ${advice.expected.length})`);
  check(advice.expected.some(([kind]) => kind === 'churn'), 'the leaky loop gets churn advice');
  check(advice.expected.every(([, message], i) => advice.cards[i]?.includes(message)), 'each card shows its sentence');
  check(errors.length === 0, `no console errors${errors.length ? `: ${errors.join(' | ')}` : ''}`);
  check(outside.length === 0, `no request left file://${outside.length ? `: ${outside.join(' ')}` : ''}`);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: screenshot, fullPage: false });
  await page.screenshot({ path: screenshot.replace(/\.png$/, '-full.png'), fullPage: true });
  console.log(`screenshot: ${screenshot}`);

  const r = await open(fromReportHtml);
  const v2 = await r.page.textContent('#verdict');
  check(/Leak found/.test(v2), 'from a report alone: the same verdict');
  check((await r.page.locator('#leak-table > tbody > tr.site-row').count()) >= 1, 'from a report alone: the leak table');
  check(r.errors.length === 0, `from a report alone: no console errors${r.errors.length ? `: ${r.errors.join(' | ')}` : ''}`);

  if (oomHtml) {
    const o = await open(oomHtml);
    const lead = (await o.page.textContent('#verdict')) ?? '';
    check(/Out of memory/.test(lead) && /failed on GPU 0/.test(lead), `an OOM run leads with the failure (${lead.slice(0, 120)})`);
    check(/Live then, by call site/.test(lead), 'the lead says what was live by call site');
    check(!/already past its memory|~0 iterations/.test(lead), 'no forecast for a device that ran out');
    const order = await o.page.evaluate(() => [...document.querySelectorAll('section[id]')].map((x) => x.id));
    check(order.indexOf('oom') >= 0 && order.indexOf('oom') < order.indexOf('leaks'),
      `the out-of-memory section comes before the leaks (${order.join(', ')})`);
    await o.page.evaluate(() => window.scrollTo(0, document.querySelector('#memory').offsetTop));
    // Then zoomed so that the failure stands at the plot's right edge: its label must turn left.
    const edge = await o.page.evaluate(async () => {
      const u = window.__gpuleak.plots[0];
      const t = window.__gpuleak.model.report.oom.events[0].t_ns;
      const span = u.scales.x.max - u.scales.x.min;
      window.__labels.splice(0);
      u.setScale('x', { min: u.scales.x.min, max: t + span * 0.002 });
      await new Promise((r) => setTimeout(r, 100));
      return window.__labels.filter((l) => /^OOM #/.test(l.text));
    });
    check(edge.length > 0 && edge.every((l) => l.x1 <= l.plotRight + 0.5),
      `"OOM #1" at the right edge still fits (${edge.map((l) => `${l.x0.toFixed(1)}..${l.x1.toFixed(1)} within ..${l.plotRight}`).join(', ')})`);
    await o.page.evaluate(async () => {
      window.__labels.splice(0);
      document.querySelector('#memory .chart-controls button:nth-child(5)').click();
      await new Promise((r) => setTimeout(r, 100));
    });
    const labels = await o.page.evaluate(() => window.__labels.filter((l) => /^(device memory|OOM #|peak )/.test(l.text)));
    const names = (re) => labels.filter((l) => re.test(l.text));
    check(names(/^device memory/).length > 0, 'the timeline labels the device memory line');
    check(names(/^OOM #1$/).length > 0, 'the timeline labels OOM #1');
    for (const l of labels) {
      check(l.x0 >= l.plotLeft - 0.5 && l.x1 <= l.plotRight + 0.5,
        `"${l.text}" fits the plot (${l.x0.toFixed(1)}..${l.x1.toFixed(1)} within ${l.plotLeft}..${l.plotRight})`);
    }
    check(o.errors.length === 0, `OOM run: no console errors${o.errors.length ? `: ${o.errors.join(' | ')}` : ''}`);
    await o.page.screenshot({ path: screenshot.replace(/\.png$/, '-oom.png'), fullPage: false });
    await o.page.evaluate(() => window.scrollTo(0, 0));
    await o.page.screenshot({ path: screenshot.replace(/\.png$/, '-oom-top.png'), fullPage: false });
  }
} finally {
  await browser.cleanUp();
}

console.log(failures.length ? `${failures.length} checks failed` : 'all checks passed');
process.exit(failures.length ? 1 : 0);
