// Loads merged traces in two real trace viewers and prints, per trace, one JSON line of what
// each viewer made of it, next to an independent count over the raw JSON; tests/viewers.rs
// asserts on those lines.
//
//   node tests/viewers/check.mjs --catapult DIR --chromium PATH --out DIR TRACE...
//
// - Catapult (the engine of chrome://tracing): DIR/trace_viewer_full.html (from the PyPI wheel
//   torch-tb-profiler) with the webcomponents.js 0.7.24 polyfill, in headless Chromium driven by
//   puppeteer-core. The page is served from 127.0.0.1 (HTML imports need http); the trace is
//   imported with `new tr.Model()` + `tr.importer.Import#importTraces`, then shown in the
//   viewer's `tr-ui-timeline-view` and screenshotted into --out.
// - The engine of Chrome DevTools' Performance panel (npm @paulirish/trace_engine), in Node.
//
// Everything the script needs comes from tests/viewers/node_modules (tests/viewers/install.sh).

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';

import puppeteer from 'puppeteer-core';
import * as Trace from '@paulirish/trace_engine';
import { polyfillDOMRect } from '@paulirish/trace_engine/analyze-trace.mjs';

const require = createRequire(import.meta.url);

function parseArgs(argv) {
  const o = { traces: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--catapult') o.catapult = argv[++i];
    else if (a === '--chromium') o.chromium = argv[++i];
    else if (a === '--out') o.out = argv[++i];
    else o.traces.push(a);
  }
  if (!o.catapult || !o.chromium || !o.out || o.traces.length === 0) {
    throw new Error('usage: check.mjs --catapult DIR --chromium PATH --out DIR TRACE...');
  }
  return o;
}

function readJson(file) {
  let buf = fs.readFileSync(file);
  if (buf[0] === 0x1f && buf[1] === 0x8b) buf = zlib.gunzipSync(buf);
  return buf.toString('utf8');
}

// "[TP01-DP00] 1234" -> "[TP01-DP00]"; null for an unlabelled pid.
function labelOf(pid) {
  if (typeof pid !== 'string' || !pid.startsWith('[')) return null;
  const end = pid.indexOf(']');
  return end < 0 ? null : pid.slice(0, end + 1);
}

// The independent count over the raw JSON: per rank label, the slices a trace viewer must build
// (X events, B/E pairs) and the thread-scoped instants (i/I events, scope t or none: Kineto's
// [memory] events; Catapult makes each a zero-length slice on its thread); the flow ids (cat + id) with both a start and an end, and how many of
// those join two labels; every pid, and the process and thread names the metadata gives (the
// last name of each thread); the counter samples per rank label (a `C` event draws one sample
// per arg: Kineto's memory counter as merge writes it) and the counters' names.
function expected(doc) {
  const slices = {};
  const instants = {};
  const counters = {};
  const counterNames = {};
  const starts = new Map();
  const ends = new Map();
  const pids = new Set();
  const processNames = {};
  const threadNames = {};
  let unlabelled = 0;
  for (const e of doc.traceEvents) {
    if (e.pid !== undefined) pids.add(String(e.pid));
    if (e.ph === 'M' && e.name === 'process_name') processNames[String(e.pid)] = e.args.name;
    if (e.ph === 'M' && e.name === 'thread_name') {
      // A later name of the same thread replaces the earlier one (real traces hold both).
      (threadNames[String(e.pid)] ||= {})[String(e.tid)] = e.args.name;
    }
    const lab = labelOf(e.pid);
    if (lab === null) {
      unlabelled++;
      continue;
    }
    if (e.ph === 'X' || e.ph === 'B') slices[lab] = (slices[lab] || 0) + 1;
    if ((e.ph === 'i' || e.ph === 'I') && (e.s === undefined || e.s === 't')) {
      instants[lab] = (instants[lab] || 0) + 1;
    }
    if (e.ph === 'C') {
      counters[lab] = (counters[lab] || 0) + Object.keys(e.args || {}).length;
      (counterNames[lab] ||= new Set()).add(e.name);
    }
    if (e.ph === 's') starts.set(`${e.cat}|${JSON.stringify(e.id)}`, lab);
    if (e.ph === 'f') ends.set(`${e.cat}|${JSON.stringify(e.id)}`, lab);
  }
  let paired = 0;
  let crossRank = 0;
  for (const [k, lab] of starts) {
    if (!ends.has(k)) continue;
    paired++;
    if (ends.get(k) !== lab) crossRank++;
  }
  return {
    slices,
    instants,
    counters,
    counter_names: Object.fromEntries(
      Object.entries(counterNames).map(([lab, names]) => [lab, [...names].sort()]),
    ),
    unlabelled,
    pids: pids.size,
    process_names: processNames,
    thread_names: Object.fromEntries(
      Object.entries(threadNames).map(([pid, byTid]) => [pid, Object.values(byTid)]),
    ),
    flow_starts: starts.size,
    flow_ends: ends.size,
    flows_paired: paired,
    flows_cross_rank: crossRank,
    ranks: (doc.ranks || []).map((r) => r.label),
  };
}

// A static file server for the viewer page, its two scripts and the trace being checked.
function serve(files) {
  const server = http.createServer((req, res) => {
    const f = files[req.url.split('?')[0]];
    if (f === undefined) {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': f.type });
    res.end(f.body());
  });
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok(server)));
}

const PAGE = `<!DOCTYPE html><html><head><meta charset="utf-8">
<script>window.__hideTraceViewerPolyfillWarning = true;</script>
<script src="/webcomponents.min.js"></script>
<link rel="import" href="/trace_viewer_full.html">
<style>html, body { margin: 0; width: 100%; height: 100%; overflow: hidden; }
#trace-viewer { width: 100%; height: 100%; }</style>
</head><body></body></html>`;

// Runs in the page: imports the trace, reports the model, shows it in the timeline view.
async function importInPage() {
  const text = await (await fetch('/trace.json')).text();
  const model = new tr.Model();
  const t0 = performance.now();
  new tr.importer.Import(model).importTraces([text]);
  const importMs = performance.now() - t0;
  const labelOf = (pid) => {
    const s = String(pid);
    const end = s.indexOf(']');
    return s.startsWith('[') && end > 0 ? s.slice(0, end + 1) : null;
  };
  const processes = model.getAllProcesses();
  processes.sort(tr.model.Process.compare);
  const procs = processes.map((p) => {
    let slices = 0;
    for (const t of Object.values(p.threads)) slices += t.sliceGroup.slices.length;
    // The counter tracks the viewer built for the process, and their samples (every series).
    let counterSamples = 0;
    const counterNames = [];
    for (const c of Object.values(p.counters)) {
      counterNames.push(c.name);
      for (const series of c.series) counterSamples += series.samples.length;
    }
    return {
      pid: String(p.pid),
      name: p.name === undefined ? null : String(p.name),
      sort_index: p.sortIndex,
      threads: Object.keys(p.threads).length,
      slices,
      counter_samples: counterSamples,
      counter_names: counterNames,
    };
  });
  const pidOf = (slice) => String(slice.parentContainer.parent.pid);
  let crossRank = 0;
  let halfOpen = 0;
  for (const f of model.flowEvents) {
    if (!f.startSlice || !f.endSlice) {
      halfOpen++;
      continue;
    }
    if (labelOf(pidOf(f.startSlice)) !== labelOf(pidOf(f.endSlice))) crossRank++;
  }
  const viewer = document.createElement('tr-ui-timeline-view');
  const container = document.createElement('track-view-container');
  container.id = 'track_view_container';
  viewer.track_view_container = container;
  Polymer.dom(viewer).appendChild(container);
  viewer.id = 'trace-viewer';
  viewer.globalMode = true;
  Polymer.dom(document.body).appendChild(viewer);
  viewer.model = model;
  return {
    import_ms: Math.round(importMs),
    warnings: model.importWarnings.map((w) => `${w.type}: ${w.message}`),
    processes: procs,
    flows: model.flowEvents.length,
    flows_cross_rank: crossRank,
    flows_half_open: halfOpen,
  };
}

// Runs in a blank page: decodes the screenshot (a PNG data URL) and counts its pixels that
// are not the background (the most common colour), and its distinct colours (up to 256).
async function inkInPage(url) {
  const img = new Image();
  img.src = url;
  await img.decode();
  const c = document.createElement('canvas');
  c.width = img.width;
  c.height = img.height;
  const g = c.getContext('2d');
  g.drawImage(img, 0, 0);
  const px = g.getImageData(0, 0, c.width, c.height).data;
  const count = new Map();
  for (let i = 0; i < px.length; i += 4) {
    const rgb = (px[i] << 16) | (px[i + 1] << 8) | px[i + 2];
    count.set(rgb, (count.get(rgb) || 0) + 1);
  }
  const most = Math.max(...count.values());
  return { width: c.width, height: c.height, ink: c.width * c.height - most, colours: Math.min(count.size, 256) };
}

async function catapult(browser, server, trace, shot) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const port = server.address().port;
  await page.goto(`http://127.0.0.1:${port}/`, { waitUntil: 'load', timeout: 120000 });
  await page.waitForFunction(() => window.tr && tr.Model && tr.importer && window.Polymer, {
    timeout: 120000,
  });
  // The import runs from a promise the page itself holds, and its result is polled for:
  // awaited straight through `evaluate`, Chromium 148 now and then dropped the pending
  // promise ("Promise was collected") while the page fetched a large trace.
  await page.addScriptTag({ content: importInPage.toString() });
  await page.evaluate(() => {
    window.__checked = importInPage().then(
      (r) => (window.__result = r),
      (e) => (window.__failed = String((e && e.stack) || e)),
    );
  });
  await page.waitForFunction(() => window.__result || window.__failed, { timeout: 300000 });
  const r = await page.evaluate(() => {
    if (window.__failed) throw new Error(window.__failed);
    return window.__result;
  });
  // Let the timeline lay out and draw (it draws on animation frames).
  await page.evaluate(
    () => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(ok, 500)))),
  );
  const png = await page.screenshot({ encoding: 'base64' });
  fs.writeFileSync(shot, Buffer.from(png, 'base64'));
  r.screenshot = shot;
  r.page_errors = errors;
  await page.close();
  const blank = await browser.newPage();
  r.pixels = await blank.evaluate(inkInPage, `data:image/png;base64,${png}`);
  await blank.close();
  return r;
}

async function devtools(events) {
  const model = Trace.TraceModel.Model.createWithAllHandlers();
  const t0 = performance.now();
  await model.parse(events);
  const parsed = model.parsedTrace().data;
  const names = {};
  for (const [pid, e] of parsed.Meta.processNames) names[String(pid)] = e.args.name;
  const threads = {};
  for (const [pid, m] of parsed.Meta.threadsInProcess) {
    threads[String(pid)] = [...m.values()].map((e) => e.args.name);
  }
  let entries = 0;
  const perPid = {};
  for (const [pid, p] of parsed.Renderer.processes) {
    let n = 0;
    for (const t of p.threads.values()) n += t.entries.length;
    perPid[String(pid)] = n;
    entries += n;
  }
  return {
    parse_ms: Math.round(performance.now() - t0),
    process_names: names,
    thread_names: threads,
    entries,
    entries_per_pid: perPid,
    flows: parsed.Flows.flows.length,
  };
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  fs.mkdirSync(o.out, { recursive: true });
  polyfillDOMRect();
  const polyfill = require.resolve('webcomponents.js/webcomponents.min.js');
  let current = '';
  const server = await serve({
    '/': { type: 'text/html', body: () => PAGE },
    '/webcomponents.min.js': { type: 'text/javascript', body: () => fs.readFileSync(polyfill) },
    '/trace_viewer_full.html': {
      type: 'text/html',
      body: () => fs.readFileSync(path.join(o.catapult, 'trace_viewer_full.html')),
    },
    '/trace.json': { type: 'application/json', body: () => current },
  });
  const browser = await puppeteer.launch({
    executablePath: o.chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--js-flags=--max-old-space-size=8192'],
  });
  try {
    for (const trace of o.traces) {
      const t0 = Date.now();
      current = readJson(trace);
      const doc = JSON.parse(current);
      const shot = path.join(o.out, `${path.basename(trace).replace(/\.json(\.gz)?$/, '')}.png`);
      const out = {
        trace,
        expected: expected(doc),
        catapult: await catapult(browser, server, trace, shot),
        devtools: await devtools(doc.traceEvents),
      };
      out.seconds = (Date.now() - t0) / 1000;
      current = '';
      console.log(JSON.stringify(out));
    }
  } finally {
    await browser.close();
    server.close();
  }
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
