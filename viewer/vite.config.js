// Builds the viewer into one self-contained file, dist/index.html: every script and style inline,
// nothing fetched at run time. A Content-Security-Policy that forbids all network access is added
// to the built page, so a report opened from disk can never reach out.
import { defineConfig } from 'vite';
import { viteSingleFile } from 'vite-plugin-singlefile';

const CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; font-src data:";

function offlineOnly() {
  return {
    name: 'gpuleak-offline-only',
    apply: 'build',
    transformIndexHtml(html) {
      return html.replace('<meta charset="utf-8" />',
        `<meta charset="utf-8" />\n    <meta http-equiv="Content-Security-Policy" content="${CSP}" />`);
    },
  };
}

export default defineConfig({
  plugins: [offlineOnly(), viteSingleFile({ removeViteModuleLoader: true })],
  build: { target: 'es2020', assetsInlineLimit: 100000000, cssCodeSplit: false, reportCompressedSize: false },
  test: { environment: 'node', include: ['test/**/*.test.js'] },
});
