// After `vite build`: checks that dist/index.html is one self-contained page with exactly one data
// placeholder, then copies it to prebuilt/viewer.html (the committed template the C++ build uses).
import { readFileSync, writeFileSync } from 'node:fs';

const html = readFileSync(new URL('../dist/index.html', import.meta.url), 'utf8');
const placeholder = '"__GPULEAK_DATA__"';
const count = html.split(placeholder).length - 1;
if (count !== 1) throw new Error(`dist/index.html has ${count} data placeholders, expected 1`);
for (const bad of ['src="http', 'href="http', ' src="/', "import('http", 'import("http']) {
  if (html.includes(bad)) throw new Error(`dist/index.html refers outside itself: ${bad}`);
}
writeFileSync(new URL('../prebuilt/viewer.html', import.meta.url), html);
console.log(`prebuilt/viewer.html: ${(html.length / 1024).toFixed(1)} KiB`);
