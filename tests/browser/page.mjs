// What the browser tests share: headless Chromium on a fresh profile, a page opened from file://
// with every other request refused and its console errors collected, and a check() that prints
// each result and counts the failures.
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, '../../viewer/package.json'));
const { chromium } = require('playwright-core');

export function checker() {
  const failures = [];
  const check = (ok, what) => {
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
    if (!ok) failures.push(what);
  };
  return { check, failures };
}

export async function launch() {
  const profile = mkdtempSync(join(tmpdir(), 'gpuleak-chromium-'));
  // --user-data-dir is given the Playwright way: a persistent context on a fresh profile.
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.GPULEAK_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  browser.cleanUp = async () => {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  };
  return browser;
}

// {page, errors, outside}: the page once the app says it is ready; `init` runs before its scripts.
export async function open(browser, file, init = null) {
  const page = await browser.newPage();
  if (init) await page.addInitScript(init);
  const errors = [];
  const outside = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  await page.route('**/*', (r) => {
    if (r.request().url().startsWith('file:')) return r.continue();
    outside.push(r.request().url());
    return r.abort();
  });
  await page.goto(pathToFileURL(file).href);
  await page.waitForFunction(() => window.__gpuleak?.ready === true, null, { timeout: 30000 });
  return { page, errors, outside };
}
