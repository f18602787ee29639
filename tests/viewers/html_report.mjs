// Loads a rankprof HTML report in headless Chromium (puppeteer-core, network off) and reports
// how long it took to render, what it drew and a screenshot — for tests/groups.rs (#11).
//
// Usage: node html_report.mjs --chromium PATH --html FILE --out DIR
// Prints JSON: {"render_ms", "task_ms", "canvases": [{"id", "width", "height", "painted"}],
// "png", "errors"}.
// render_ms: navigation start to the end of the load event (the report's inline scripts,
// canvas drawing included, run before it), from the page's own Navigation Timing; task_ms:
// the main thread's busy time until then (DevTools TaskDuration), which a loaded machine does
// not inflate.
// painted: how many sampled pixels of the canvas are not white/transparent.

import fs from 'node:fs';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

function parseArgs(argv) {
  const o = {};
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--chromium') o.chromium = argv[++i];
    else if (argv[i] === '--html') o.html = argv[++i];
    else if (argv[i] === '--out') o.out = argv[++i];
  }
  return o;
}

const o = parseArgs(process.argv.slice(2));
const browser = await puppeteer.launch({
  executablePath: o.chromium,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 1800 });
  await page.setRequestInterception(true);
  page.on('request', (r) => (r.url().startsWith('file://') ? r.continue() : r.abort()));
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('file://' + path.resolve(o.html), { waitUntil: 'load' });
  const res = await page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const canvases = Array.from(document.querySelectorAll('canvas')).map((c) => {
      const g = c.getContext('2d');
      const img = g.getImageData(0, 0, c.width, c.height).data;
      let painted = 0;
      for (let i = 0; i < img.length; i += 4 * 97) {
        const white = img[i] > 250 && img[i + 1] > 250 && img[i + 2] > 250;
        if (img[i + 3] > 0 && !white) painted++;
      }
      return { id: c.id, width: c.width, height: c.height, painted };
    });
    return { render_ms: nav.loadEventEnd - nav.startTime, canvases };
  });
  // Main-thread busy time (parse, style, layout, script, paint) from the DevTools metrics:
  // what the page costs, apart from how busy the machine is.
  const m = await page.metrics();
  res.task_ms = Math.round(m.TaskDuration * 1000);
  const png = path.join(o.out, 'report.png');
  await page.screenshot({ path: png });
  res.png = png;
  res.errors = errors;
  fs.writeFileSync(path.join(o.out, 'result.json'), JSON.stringify(res));
  console.log(JSON.stringify(res));
} finally {
  await browser.close();
}
