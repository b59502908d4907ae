// SPDX-License-Identifier: MIT
// The one-file HTML report in Debian's headless Chromium (docs/html.md,
// "Tests"): cumemtrace writes the report of gen_golden's traces; the page
// must load with no console error and no request at all besides itself, draw
// its charts, hold the scenario's exact peak and leak figures, zoom every
// chart on a drag, show the call sites of a clicked instant and the whole
// stack of a clicked flame-graph frame, and look like something.
//
// tests/data/blocks/h200_train_mlp.bin (a real H200 trace of PyTorch with
// the block layer) must show its section "Inside PyTorch's cache";
// tests/data/tensors/h100_frag_oom.bin (an H100's fragmentation OOM) its
// failure's advice from the replay of the usual settings.
//
//   node test_html.js CUMEMTRACE GEN_GOLDEN NODE_MODULES CHROMIUM OUTDIR BLOCKS_TRACE EXPANDABLE LEAK FRAG_OOM
'use strict';
const {execFileSync} = require('child_process');
const fs = require('fs');
const path = require('path');
const os = require('os');

const [cumemtrace, genGolden, nodeModules, chromium, outDir, blocksTrace, expandableTrace, leakTrace, fragOomTrace] =
  process.argv.slice(2);
let failures = 0, passes = 0;
function check(ok, what) {
  if (ok) { passes++; console.log('ok: ' + what); } else { failures++; console.log('FAIL: ' + what); }
}
function need(ok, what) {
  if (!ok) { console.log('FAIL: ' + what); process.exit(1); }
}

need(fs.existsSync(chromium), `no Chromium at ${chromium}: scripts/setup.sh installs Debian's chromium`);
need(fs.existsSync(path.join(nodeModules, 'puppeteer-core')),
  `no puppeteer-core in ${nodeModules}: run scripts/setup.sh (npm ci in analyzer/render/html)`);
const puppeteer = require(path.resolve(nodeModules, 'puppeteer-core'));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cmt-html-'));
execFileSync(genGolden, [dir]);
const mixed = path.join(dir, 'mixed.bin');
const ranks = ['rank0.bin', 'rank1.bin', 'rank2.bin'].map(f => path.join(dir, f));
const report = JSON.parse(execFileSync(cumemtrace, ['report', '--json', mixed]).toString());
// the scenario's figures (tests/golden/expected/report.json)
check(report.devices[0].peak_bytes === 642777088, 'report --json: device 0 peak 642777088 B');
check(report.leaks.bytes === 507510784, 'report --json: leaks 507510784 B');
const html = path.join(dir, 'mixed.html');
execFileSync(cumemtrace, ['report', '--format', 'html', '-o', html, mixed]);
const fragHtml = path.join(dir, 'frag.html');
execFileSync(cumemtrace, ['report', '--format', 'html', '-o', fragHtml, path.join(dir, 'frag.bin')]);
const jobHtml = path.join(dir, 'job.html');
execFileSync(cumemtrace, ['report', '--format', 'html', '-o', jobHtml, ...ranks]);
// the job view from summaries (docs/html.md, "A job from summaries")
const sumDir = path.join(dir, 'summaries');
execFileSync(cumemtrace, ['summarize', '-o', sumDir, ...ranks]);
const summaryHtml = path.join(dir, 'summaries.html');
execFileSync(cumemtrace, ['report', '--format', 'html', '-o', summaryHtml, sumDir]);
const blocksHtml = path.join(dir, 'blocks.html');
// a suppression of load_embeddings's 128 MiB (docs/report.md, "Suppressed")
const supp = path.join(dir, 'app.supp');
fs.writeFileSync(supp, '# The embeddings table, kept by design.\nleak:load_embeddings\n');
const suppHtml = path.join(dir, 'suppressed.html');
execFileSync(cumemtrace, ['report', '--format', 'html', '--suppressions', supp, '-o', suppHtml, mixed]);
execFileSync(cumemtrace, ['report', '--format', 'html', '-o', blocksHtml, blocksTrace]);
const expandableHtml = path.join(dir, 'expandable.html');
execFileSync(cumemtrace, ['report', '--format', 'html', '-o', expandableHtml, expandableTrace]);
// an H100 run keeping one 64 MiB output a step (tests/data/tensors)
const leakHtml = path.join(dir, 'tensor_leak.html');
execFileSync(cumemtrace, ['report', '--format', 'html', '-o', leakHtml, leakTrace]);
const fragOomHtml = path.join(dir, 'frag_oom.html');
execFileSync(cumemtrace, ['report', '--format', 'html', '-o', fragOomHtml, fragOomTrace]);
// the H200 run had no failure: the page's drawing of one, on its model with
// a failure of the form blocks_json.c writes added (verdict fragmentation)
const oomHtml = path.join(dir, 'blocks_oom.html');
{
  const page = fs.readFileSync(blocksHtml, 'utf8');
  const m = /(<script id="cmt-model" type="application\/json">)([^<]*)(<\/script>)/.exec(page);
  need(m, 'blocks.html holds its model');
  const mod = JSON.parse(m[2]);
  const d0 = mod.traces[0].report.blocks.devices[0];
  d0.failures.push({requested_bytes: 67108864, rounded_bytes: 67108864, device_free_bytes: 4194304, verdict: 'fragmentation',
    expandable_segments_would_serve: true, explanation: 'reserved 96.0 MiB, allocated 40.0 MiB: fragmentation inside the cache',
    stack: d0.at_peak.sites[0].stack, frames: d0.at_peak.sites[0].frames, site_frame: d0.at_peak.sites[0].site_frame,
    cache: Object.assign({}, d0.at_peak, {ts_ns: 9000000000})});
  const json = JSON.stringify(mod).replace(/</g, '\\u003c');
  fs.writeFileSync(oomHtml, page.slice(0, m.index) + m[1] + json + m[3] + page.slice(m.index + m[0].length));
}

// memory mapped from another process (no golden trace has it): the mixed
// page's model with an "ipc" key of the form ipc_json.c writes added
const ipcHtml = path.join(dir, 'ipc.html');
{
  const page = fs.readFileSync(html, 'utf8');
  const m = /(<script id="cmt-model" type="application\/json">)([^<]*)(<\/script>)/.exec(page);
  need(m, 'mixed.html holds its model');
  const mod = JSON.parse(m[2]);
  const r = mod.traces[0].report, site = r.devices[0].top_sites_at_peak[0];
  r.ipc = {mapped_peak_bytes: 75497472, mapped_peak_time_ns: 1000, opened_bytes: 75497472, opened_count: 2,
    never_closed_bytes: 8388608, never_closed_count: 1, failed_opens: 1, failed_imports: 0, failed_closes: 0,
    unmatched_closes: 0, failed_exports: 0, imported_handles: 0, imported_handles_released: 0,
    mapped: [{bytes: 8388608, count: 1, never_closed_bytes: 8388608, never_closed_count: 1, closed: false,
      api: 'cuIpcOpenMemHandle', device: 1, handle: '0dada1fb6133793b', first_time_ns: 1000, stack_id: site.stack_id,
      frames: site.frames, site_frame: site.site_frame}],
    exported: [{api: 'cudaIpcGetMemHandle', time_ns: 500, device: 0, handle: 'a03f57390a42863b', allocation_found: true,
      bytes: 67108864, stack_id: site.stack_id, frames: site.frames, site_frame: site.site_frame}]};
  site.exported = true;
  const json = JSON.stringify(mod).replace(/</g, '\\u003c');
  fs.writeFileSync(ipcHtml, page.slice(0, m.index) + m[1] + json + m[3] + page.slice(m.index + m[0].length));
}

async function open(browser, file) {
  const page = await browser.newPage();
  const problems = [];
  page.on('console', m => { if (m.type() === 'error' || m.type() === 'warning') problems.push('console ' + m.type() + ': ' + m.text()); });
  page.on('pageerror', e => problems.push('page error: ' + e.message));
  page.on('requestfailed', r => problems.push('request failed: ' + r.url()));
  await page.setRequestInterception(true);
  page.on('request', r => {
    if (r.url() === 'file://' + file) r.continue();
    else { problems.push('request: ' + r.url()); r.abort(); }
  });
  await page.setViewport({width: 1400, height: 1000});
  const t0 = Date.now();
  // No time limit of our own: a page slow on a loaded machine is not a
  // failure (meson's test timeout catches a page that never gets ready).
  await page.goto('file://' + file, {waitUntil: 'load', timeout: 0});
  await page.waitForSelector('body[data-cmt-ready]', {timeout: 0});
  return {page, problems, ms: Date.now() - t0};
}

// non-transparent pixels of each chart's canvas
function inked(page) {
  return page.evaluate(() => window.cmtReport.charts.map(u => {
    const c = u.ctx.canvas, d = u.ctx.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i]) n++;
    return n;
  }));
}

(async () => {
  const browser = await puppeteer.launch({executablePath: chromium, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage']});
  try {
    const {page, problems, ms} = await open(browser, html);
    console.log(`mixed.html: ${fs.statSync(html).size} bytes, ready in ${ms} ms`);
    const ink = await inked(page);
    check(ink.length === 3, `three timelines drawn (device 0, device 1, pinned host): ${ink.length}`);
    check(ink.every(n => n > 2000), `every timeline has ink: ${ink.join(', ')}`);
    const peakCard = await page.$eval('.card[data-peak-bytes][data-device="0"]', e => e.textContent);
    check(peakCard.includes('613.0 MiB') && peakCard.includes('642777088 B') && peakCard.includes('1.536 s'),
      'the peak card: 613.0 MiB, 642777088 B, at 1.536 s: ' + peakCard);
    const leakCard = await page.$eval('.card[data-leak-bytes]', e => e.textContent);
    check(leakCard.includes('507510784 B') && leakCard.includes('102 allocations'), 'the leak card: 507510784 B in 102: ' + leakCard);
    const leakTotal = await page.$eval('.leak-total', e => e.getAttribute('data-leak-bytes'));
    check(leakTotal === '507510784', 'the leaks section: 507510784');
    const body = await page.evaluate(() => document.body.innerText);
    check(/remember_batch\s+cache\.c:19/.test(body), 'the growing site by name and line');
    // a call site's row names where it was called from before it is opened
    // (issue 33 item 7: rows of one helper read the same until expanded)
    const summaries = await page.evaluate(() => Array.from(document.querySelectorAll('td details > summary')).map(e => e.textContent));
    check(summaries.includes('forward  model.c:57 · from train_step  train.c:88'),
      'a site row: the site and its caller: ' + summaries.slice(0, 6).join(' | '));
    check(body.includes('try_huge_batch'), 'the failed allocation\'s site');

    // drag across the first chart: every chart zooms to the same range
    const over = await page.$('.u-over');
    const box = await over.boundingBox();
    const before = await page.evaluate(() => window.cmtReport.charts.map(u => [u.scales.x.min, u.scales.x.max]));
    await page.mouse.move(box.x + box.width * 0.25, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2, {steps: 8});
    await page.mouse.up();
    const after = await page.evaluate(() => window.cmtReport.charts.map(u => [u.scales.x.min, u.scales.x.max]));
    const w0 = before[0][1] - before[0][0], w1 = after[0][1] - after[0][0];
    check(w1 > 0.2 * w0 && w1 < 0.3 * w0, `a drag over a quarter zooms to a quarter: ${w0.toFixed(3)} s -> ${w1.toFixed(3)} s`);
    check(after.every(r => Math.abs(r[0] - after[0][0]) < 1e-9 && Math.abs(r[1] - after[0][1]) < 1e-9), 'every chart follows');
    await page.mouse.click(box.x + box.width * 0.5, box.y + box.height / 2, {clickCount: 2});
    const reset = await page.evaluate(() => { const u = window.cmtReport.charts[0]; return [u.scales.x.min, u.scales.x.max]; });
    check(Math.abs(reset[1] - reset[0] - w0) < 1e-6, 'a double click zooms out');

    // a click on an instant: what was live then
    await page.mouse.click(box.x + box.width * 0.6, box.y + box.height / 2);
    const instant = await page.$eval('.instant', e => e.hidden ? '' : e.innerText);
    check(instant.includes('Call sites holding memory throughout') && instant.includes('load_weights'),
      'a clicked instant lists the call sites live then: ' + instant.slice(0, 120).replace(/\n/g, ' '));

    // the flame graph drawn to scale: the root spans it, a frame's width is its share
    const widths = await page.evaluate(() => {
      const box = document.querySelector('#flame-0-0 svg');
      const gs = Array.from(box.querySelectorAll('g'));
      const w = g => Number(g.querySelector('rect').getAttribute('width'));
      return {svg: Number(box.getAttribute('width')), root: w(gs[0]), weights: w(gs.find(g => /^load_weights/.test(g.textContent)))};
    });
    check(Math.abs(widths.root - widths.svg) < 0.5 && Math.abs(widths.weights - widths.svg * 268435456 / 642777088) < 0.5,
      `the icicle to scale: root ${widths.root} of ${widths.svg}, load_weights ${widths.weights.toFixed(1)}`);

    // a click on a flame-graph frame: its whole stack
    const clicked = await page.evaluate(() => {
      const g = Array.from(document.querySelectorAll('#flame-0-0 g')).find(e => /^load_weights/.test(e.textContent));
      if (!g) return false;
      g.querySelector('rect').dispatchEvent(new MouseEvent('click', {bubbles: true}));
      return true;
    });
    check(clicked, 'the flame graph has a load_weights frame');
    await page.waitForFunction(() => { const s = document.querySelector('.flame-stack'); return s && !s.hidden; }, {timeout: 0});
    const stack = await page.$eval('.flame-stack', e => e.innerText);
    check(stack.includes('256.0 MiB (268435456 B)') && stack.includes('/src/app/model.c:31') && stack.includes('/src/app/main.c:40'),
      'the clicked frame shows its bytes and its stack with file:line: ' + stack.replace(/\n/g, ' | '));

    const png = path.join(outDir, 'html_report_mixed.png');
    await page.screenshot({path: png, fullPage: true});
    check(fs.statSync(png).size > 60000, `the screenshot is not blank (${fs.statSync(png).size} bytes): ${png}`);
    check(problems.length === 0, 'no console error, no request: ' + problems.join('; '));

    const sp = await open(browser, suppHtml);
    const spTotal = await sp.page.$eval('.suppressed-total', e => e.getAttribute('data-suppressed-bytes'));
    check(spTotal === '134217728', 'suppressed.html: 134217728 B suppressed: ' + spTotal);
    const spLeaks = await sp.page.$eval('.leak-total', e => e.getAttribute('data-leak-bytes'));
    check(spLeaks === '373293056', 'suppressed.html: the leaks without them, 373293056: ' + spLeaks);
    const spBody = await sp.page.$eval('.suppressed', e => e.innerText);
    check(spBody.includes('app.supp:2 (The embeddings table)') && spBody.includes('load_embeddings'),
      'suppressed.html: the row names its suppression and site: ' + spBody);
    check(sp.problems.length === 0, 'suppressed.html: no console error, no request: ' + sp.problems.join('; '));
    await sp.page.close();

    const job = await open(browser, jobHtml);
    const jobInk = await inked(job.page);
    check(jobInk.length === 4 && jobInk.every(n => n > 2000), `the job: a chart of every rank, then one per rank, drawn: ${jobInk.join(', ')}`);
    const jobPeaks = await job.page.$$eval('.card[data-peak-bytes]', es => es.map(e => e.getAttribute('data-peak-bytes')));
    check(jobPeaks.join(',') === '1619001344,2699034624,3779067904', 'the job\'s peaks by rank: ' + jobPeaks.join(','));
    const axes = await job.page.evaluate(() => window.cmtReport.charts.map(u => u.data[0][0]));
    check(axes.every(x => Math.abs(x - axes[0]) < 0.01), 'the ranks share one time axis: ' + axes.join(', '));
    check(job.problems.length === 0, 'the job: no console error, no request: ' + job.problems.join('; '));
    await job.page.screenshot({path: path.join(outDir, 'html_report_job.png'), fullPage: false});
    // the job view drawn from the traces too, with the same figures
    const traceRankPeaks = await job.page.$$eval('#job-0 [data-rank-peak]', es => es.map(e => e.getAttribute('data-rank-peak')));
    check(traceRankPeaks.join(',') === '1619001344,2699034624,3779067904', 'the job view from the traces: the peaks by rank: ' + traceRankPeaks.join(','));
    const fromSummaries = await open(browser, summaryHtml);
    const rankPeaks = await fromSummaries.page.$$eval('[data-rank-peak]', es => es.map(e => e.getAttribute('data-rank-peak')));
    check(rankPeaks.join(',') === '1619001344,2699034624,3779067904', 'from summaries: the peaks by rank: ' + rankPeaks.join(','));
    const heatInk = await fromSummaries.page.$eval('#job-0 canvas.job-heat', c => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i]) n++;
      return n;
    });
    check(heatInk > 1000, 'from summaries: the ranks\' heat map drawn: ' + heatInk + ' pixels');
    check(fromSummaries.problems.length === 0, 'from summaries: no console error, no request: ' + fromSummaries.problems.join('; '));
    await fromSummaries.page.screenshot({path: path.join(outDir, 'html_report_summaries.png'), fullPage: false});

    // frag.bin's stream-ordered pool: reserved and used over time, from the
    // driver's 123 device samples (tests/golden/gen_golden.c, frag_trace)
    const frag = await open(browser, fragHtml);
    const pool = await frag.page.evaluate(() => {
      const u = window.cmtReport.charts.find(c => c.cmtPool);
      if (!u) return null;
      const c = u.ctx.canvas, d = u.ctx.getImageData(0, 0, c.width, c.height).data;
      let ink = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i]) ink++;
      const max = a => a.reduce((m, v) => Math.max(m, v), 0);
      return {ink, device: u.cmtPool.device, n: u.data[0].length, reserved: max(u.data[1]), used: max(u.data[2]),
        lastReserved: u.data[1][u.data[1].length - 1], lastUsed: u.data[2][u.data[2].length - 1],
        help: u.root.parentNode.previousSibling.textContent};
    });
    check(pool !== null, 'frag.bin: a pool chart');
    if (pool) {
      check(pool.ink > 2000, `the pool chart has ink: ${pool.ink}`);
      check(pool.device === 0 && pool.n === 123, `device 0, 123 samples: device ${pool.device}, ${pool.n}`);
      check(pool.reserved === 67108864 && pool.used === 33554432 && pool.lastReserved === 67108864 && pool.lastUsed === 0,
        `pool reserved at most 67108864 B, used 33554432 B, at the end 67108864 B and 0 B: ${pool.reserved}, ${pool.used}, ${pool.lastReserved}, ${pool.lastUsed}`);
      check(pool.help.includes('64.0 MiB (67108864 B) reserved at 20.4 ms') && pool.help.includes('32.0 MiB (33554432 B) in use at 10.4 ms'),
        'the pool chart says its peaks: ' + pool.help);
    }
    // "Fragmentation over time" (issue 33 item 3): its checkpoints drawn as
    // steps with their points, its time ticks by magnitude (distinct, with a
    // unit), not 24 ticks of "0.001" on a run of a few milliseconds
    const fc = await frag.page.evaluate(() => window.cmtReport.fragCharts.map(u => ({
      ticks: (u.axes[0]._values || []).slice(), n: u.data[0].length,
      steps: u.series.slice(1).map(x => !!(x.points && x.points.show) && x.paths === window.cmtReport.stepped),
      span: u.data[0][u.data[0].length - 1] - u.data[0][0]})));
    check(fc.length === 1 && fc[0].n >= 2, 'frag.bin: one fragmentation chart: ' + JSON.stringify(fc));
    if (fc.length) {
      const t = fc[0].ticks;
      check(t.length >= 3 && new Set(t).size === t.length && t.every(x => /^(0|[0-9]+(\.[0-9]+)? (s|ms|us|ns))$/.test(x)),
        'fragmentation chart: distinct ticks with a unit: ' + t.join(' | ') + ' over ' + fc[0].span + ' s');
      check(fc[0].steps.every(x => x), 'fragmentation chart: steps with their checkpoints: ' + fc[0].steps);
    }
    const fragBefore = await frag.page.evaluate(() => window.cmtReport.charts.map(u => [u.scales.x.min, u.scales.x.max]));
    const fover = await frag.page.$('.u-over');
    const fbox = await fover.boundingBox();
    await frag.page.mouse.move(fbox.x + fbox.width * 0.25, fbox.y + fbox.height / 2);
    await frag.page.mouse.down();
    await frag.page.mouse.move(fbox.x + fbox.width * 0.5, fbox.y + fbox.height / 2, {steps: 8});
    await frag.page.mouse.up();
    const fragAfter = await frag.page.evaluate(() => window.cmtReport.charts.map(u => [u.scales.x.min, u.scales.x.max]));
    check(fragAfter.length === fragBefore.length && fragAfter[0][1] - fragAfter[0][0] < 0.3 * (fragBefore[0][1] - fragBefore[0][0]) &&
      fragAfter.every(r => Math.abs(r[0] - fragAfter[0][0]) < 1e-9 && Math.abs(r[1] - fragAfter[0][1]) < 1e-9),
      'the pool chart follows a zoom of the timeline');
    check(frag.problems.length === 0, 'frag.bin: no console error, no request: ' + frag.problems.join('; '));

    // the block layer of a real H200 run (train_mlp.py, 2.11.0+cu130): the
    // figures of `report --json`'s "blocks" (docs/report.md)
    const bl = await open(browser, blocksHtml);
    const blk = await bl.page.evaluate(() => {
      const s = document.querySelector('section.blocks[data-device="0"]');
      if (!s) return null;
      const rows = sel => Array.from(s.querySelectorAll(sel + ' tbody tr')).map(tr => Array.from(tr.cells).map(c => c.innerText));
      return {title: s.querySelector('h3').textContent, sections: document.querySelectorAll('section.blocks').length,
        allocated: s.querySelector('.card[data-peak-allocated-bytes]').getAttribute('data-peak-allocated-bytes'),
        allocatedText: s.querySelector('.card.blocks-allocated').textContent,
        reserved: s.querySelector('.card[data-peak-reserved-bytes]').textContent,
        leaked: s.querySelector('.card[data-leaked-bytes]').textContent,
        unallocated: s.querySelector('.card[data-unallocated-bytes]').textContent,
        text: s.innerText, classes: rows('.blocks-classes'), sites: rows('.blocks-sites'), leaks: rows('.blocks-leaks'),
        failures: s.querySelector('.blocks-failures').textContent};
    });
    check(blk !== null, 'blocks.html: a section inside PyTorch\'s cache for device 0');
    if (blk) {
      check(blk.sections === 1 && blk.title === 'Device 0: inside PyTorch\'s cache', 'one such section, titled: ' + blk.title);
      check(blk.allocated === '8831542784' && blk.allocatedText.includes('8.2 GiB') && blk.allocatedText.includes('8831542784 B at 8.057 s'),
        'peak allocated (tensors) 8831542784 B at 8.057 s: ' + blk.allocatedText);
      check(blk.reserved.includes('10687086592 B'), 'peak reserved (segments) 10687086592 B: ' + blk.reserved);
      check(blk.leaked.includes('72351744 B in 7 tensors'), 'tensors never released: 72351744 B in 7: ' + blk.leaked);
      check(blk.text.includes('reserved but unallocated 1.6 GiB (1717131776 B)') && blk.unallocated.includes('1717131776 B (caching and fragmentation)'),
        'reserved but unallocated at the peak: 1717131776 B: ' + blk.unallocated);
      check(blk.classes.length === 3 && blk.classes[0].join('|') === 'small|4|8.0 MiB (8388608 B)|6.4 MiB (6727168 B)|1.6 MiB (1661440 B)|1.1 MiB (1171456 B)' &&
        blk.classes[2].join('|') === 'huge|126|9.8 GiB (10540285952 B)|8.2 GiB (8824815616 B)|1.6 GiB (1715470336 B)|64.0 MiB (67108864 B)',
        'unallocated by size class: ' + blk.classes.map(c => c.join('|')).join('; '));
      check(blk.sites.length === 10 && blk.sites[0][0] === '3.0 GiB (3222208512 B)' && blk.sites[0][1] === '96' &&
        /main\.<locals>\.step\s+train_mlp\.py:70/.test(blk.sites[0][2]),
        'the tensors at the peak by Python line: ' + blk.sites[0].join(' | '));
      check(blk.leaks.length === 3 && blk.leaks.map(l => l[0] + ' ' + l[1]).join(', ') ===
        '33.0 MiB (34603008 B) 2, 32.0 MiB (33554432 B) 1, 4.0 MiB (4194304 B) 4', 'the tensors never released by site: ' + blk.leaks.map(l => l[0] + ' ' + l[1]).join(', '));
      check(blk.failures === 'none', 'no failed allocation in this run');
    }
    // the tensors first (issue 27): the categories at the tensors' peak, a
    // stacked chart of them, each phase's peak, what was alive at exit
    const tz = await bl.page.evaluate(() => {
      const s = document.querySelector('section.tensors[data-device="0"]');
      if (!s) return null;
      const rows = sel => Array.from(document.querySelectorAll(sel + ' tbody tr')).map(tr => Array.from(tr.cells).map(c => c.innerText));
      const all = Array.from(document.querySelectorAll('section h3')).map(h => h.textContent);
      return {title: s.querySelector('h3').textContent, first: all.indexOf('Device 0: PyTorch\'s tensors') < all.indexOf('Device 0: what was live at the peak'),
        peak: s.querySelector('.card[data-peak-allocated-bytes]').getAttribute('data-peak-allocated-bytes'),
        reserve: s.querySelector('.card[data-reserve-bytes]').getAttribute('data-reserve-bytes'),
        leak: s.querySelector('.card[data-leak-bytes]').getAttribute('data-leak-bytes'),
        cats: rows('section.tensors .tensors-categories'), phases: rows('section.tensors .tensors-phases'),
        alive: rows('.tensors-alive'), charts: s.querySelectorAll('.chart-box .uplot').length,
        overview: document.querySelector('.card[data-tensors-peak-bytes]').getAttribute('data-tensors-peak-bytes'),
        segmentLeaks: document.querySelector('.cards .card[data-leak-bytes][data-trace]').textContent,
        headings: Array.from(document.querySelectorAll('h2, h3, h4')).map(h => h.textContent)};
    });
    check(tz !== null, 'blocks.html: a section of PyTorch\'s tensors for device 0');
    if (tz) {
      check(tz.first, 'the tensors come before the driver\'s view of the device');
      // the segments' leaks say what they cover beside the tensors' (issue 33), as the text does
      check(tz.segmentLeaks.startsWith('Leaks outside PyTorch\'s cache (live at exit)') &&
        tz.headings.includes('Leaks outside PyTorch\'s cache (live at exit)') && !tz.headings.includes('Leaks: live at exit'),
        'the segments\' leaks card and section: ' + tz.segmentLeaks + ' / ' + tz.headings.join('|'));
      check(tz.peak === '8831542784' && tz.overview === '8831542784', 'the tensors\' peak: max_memory_allocated(), 8831542784 B');
      check(tz.reserve === '1717131776', 'the cache\'s reserve beside them: 1717131776 B');
      check(tz.leak === '0', 'nothing kept step after step');
      const cat = name => (tz.cats.find(r => r[0].trim() === name) || [])[1];
      check(cat('parameters') === '1.5 GiB (1611104256 B)' && cat('optimizer state') === '3.0 GiB (3222208512 B)',
        'parameters and AdamW\'s state at the peak: ' + tz.cats.map(r => r.join('|')).join('; '));
      check(tz.charts === 1, 'a stacked chart of the categories over time');
      check(tz.phases.length === 4 && tz.phases.map(r => r[0]).join(',') === 'setup,forward,backward,optimizer',
        'each phase\'s peak: ' + tz.phases.map(r => r[0]).join(','));
      check(tz.alive.length === 4 && tz.alive.every(r => r[3] === 'alive at exit, not a leak') &&
        tz.alive.filter(r => r[2] === 'cublas').length === 2,
        'the tensors alive at exit, none a leak: ' + tz.alive.map(r => r.join('|')).join('; '));
    }
    // its tensors replayed under the usual settings (report --json's "whatif")
    const wi = await bl.page.evaluate(() => {
      const s = document.querySelector('section.whatif[data-device="0"]');
      if (!s) return null;
      return {title: s.querySelector('h3').textContent,
        recorded: s.querySelector('.card[data-recorded-reserved-bytes]').getAttribute('data-recorded-reserved-bytes'),
        recordedText: s.querySelector('.card.whatif-recorded').textContent,
        best: s.querySelector('.card.whatif-best').textContent,
        rows: Array.from(s.querySelectorAll('.whatif-settings tbody tr')).map(tr => Array.from(tr.cells).map(c => c.innerText))};
    });
    check(wi !== null, 'blocks.html: a what-if section for device 0');
    if (wi) {
      check(wi.title === 'Device 0: what if (PyTorch\'s caching allocator replayed)', 'what-if title: ' + wi.title);
      check(wi.recorded === '10687086592' && wi.recordedText.includes('replayed to the byte'),
        'recorded reserve 10687086592 B, replayed to the byte: ' + wi.recordedText);
      check(wi.best.includes('expandable_segments:True') && wi.best.includes('-1.7 GiB against the recorded run'),
        'expandable segments fit with the least reserve: ' + wi.best);
      check(wi.rows.length === 6 && wi.rows[0][0] === 'the defaults (recorded)' && wi.rows[0][1] === '10.0 GiB (10687086592 B)' &&
        wi.rows[1][0] === 'expandable_segments:True' && wi.rows[1][1] === '8.3 GiB (8900313088 B)' && wi.rows[1][5] === '121 mappings' &&
        wi.rows[5][6].startsWith('no (garbage collection inert'),
        'the settings replayed: ' + wi.rows.map(x => x.slice(0, 2).join(' ')).join('; '));
    }
    check(bl.problems.length === 0, 'blocks.html: no console error, no request: ' + bl.problems.join('; '));
    await bl.page.screenshot({path: path.join(outDir, 'html_report_blocks.png'), fullPage: true});
    // expandable_segments on the H200: its reservations and the 127 TiB
    // between cuBLAS's workspaces are address space, said apart, not holes
    const ex = await open(browser, expandableHtml);
    const exText = await ex.page.evaluate(() => document.body.innerText);
    check(exText.includes('Device 0 at exit: address space reserved (VMM) 314.6 GiB (337758912512 B), mapped 8.3 GiB ' +
      '(8896118784 B); address space between allocations 127.1 TiB (139801489307648 B): not memory, no hole is counted in it') &&
      !/TiB[^\n]* free between live allocations/.test(exText),
      'expandable.html: address space reserved and between allocations said apart, no TiB of holes');
    check(ex.problems.length === 0, 'expandable.html: no console error, no request: ' + ex.problems.join('; '));
    // the leak in tensors: the card, the leaks' table at the allocating line
    // with what it held when the work ended and the bytes per step
    const lk = await open(browser, leakHtml);
    const lz = await lk.page.evaluate(() => {
      const rows = sel => Array.from(document.querySelectorAll(sel + ' tbody tr')).map(tr => Array.from(tr.cells).map(c => c.innerText));
      const c = document.querySelector('section.tensors .card[data-leak-bytes]');
      return {card: c && c.getAttribute('data-leak-bytes'), leaks: rows('.tensors-leaks'), alive: rows('.tensors-alive'),
        overview: (document.querySelector('.card[data-tensor-leak-bytes]') || {getAttribute: () => null}).getAttribute('data-tensor-leak-bytes')};
    });
    check(lz.card === '805306368' && lz.overview === '805306368', 'tensor_leak.html: 768 MiB kept step after step: ' + lz.card);
    check(lz.leaks.length === 1 && lz.leaks[0][0] === '768.0 MiB (805306368 B)' && lz.leaks[0][1] === '12' &&
      lz.leaks[0][2].startsWith('+64.0 MiB per step') && /Block\.forward\s+torch_workloads\.py:98/.test(lz.leaks[0][4]),
      'tensor_leak.html: the leak at its line: ' + lz.leaks.map(r => r.join('|')).join('; '));
    check(lz.alive.length === 3 && lz.alive.every(r => r[3] === 'alive at exit, not a leak'),
      'tensor_leak.html: what was alive at exit, no leak: ' + lz.alive.map(r => r.join('|')).join('; '));
    check(lk.problems.length === 0, 'tensor_leak.html: no console error, no request: ' + lk.problems.join('; '));
    const oom = await open(browser, oomHtml);
    const oomRow = await oom.page.evaluate(() => Array.from(document.querySelectorAll('section.blocks .blocks-failures tbody tr'))
      .map(tr => Array.from(tr.cells).map(c => c.innerText)));
    check(oomRow.length === 1 && oomRow[0][0] === '9.000 s' && oomRow[0][1] === '64.0 MiB (67108864 B)' && oomRow[0][3] === '4.0 MiB (4194304 B)' &&
      oomRow[0][4] === 'fragmentation' && oomRow[0][5].includes('fragmentation inside the cache') &&
      oomRow[0][5].includes('expandable_segments:True') && /train_mlp\.py:70/.test(oomRow[0][6]),
      'a failure of the block layer: when, asked, free, its verdict, why and its site: ' + JSON.stringify(oomRow));
    check(oom.problems.length === 0, 'blocks_oom.html: no console error, no request: ' + oom.problems.join('; '));
    // the H100's fragmentation OOM: the advice is what the replay found, each setting listed
    const fo = await open(browser, fragOomHtml);
    const fov = await fo.page.evaluate(() => {
      const lists = Array.from(document.querySelectorAll('ul.replayed')).map(u => Array.from(u.children).map(li => li.textContent));
      const cells = Array.from(document.querySelectorAll('td')).map(td => td.innerText);
      return {lists, tries: cells.filter(t => /Try: set PYTORCH_CUDA_ALLOC_CONF/.test(t))};
    });
    const replayed = ['the defaults (recorded): fails here (fragmentation)', 'expandable_segments:True: no failure, reserved peak 77.9 GiB',
      'max_split_size_mb:128: no failure, reserved peak 78.3 GiB', 'max_split_size_mb:512: no failure, reserved peak 78.3 GiB',
      'roundup_power2_divisions:4: fails before it (capacity)', 'garbage_collection_threshold:0.6: fails here (fragmentation)'];
    check(fov.lists.length === 2 && fov.lists.every(l => JSON.stringify(l) === JSON.stringify(replayed)),
      'frag_oom.html: the forensics\' case and the block layer\'s failure list each setting replayed: ' + JSON.stringify(fov.lists));
    check(fov.tries.length === 2 && fov.tries.every(t => t.includes('Try: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True ' +
      '(replayed: no failure, reserved peak 77.9 GiB (83592478720 B), +8.0 MiB against the recorded run)')),
      'frag_oom.html: what to try, from the replay: ' + JSON.stringify(fov.tries));
    check(fo.problems.length === 0, 'frag_oom.html: no console error, no request: ' + fo.problems.join('; '));
    const ip = await open(browser, ipcHtml);
    const ipv = await ip.page.evaluate(() => {
      const tot = document.querySelector('.ipc-total');
      const rows = sel => Array.from(document.querySelectorAll(sel)).map(tr => Array.from(tr.cells).map(c => c.innerText));
      const secs = Array.from(document.querySelectorAll('section h3, section h2')).map(h => h.textContent);
      return {bytes: tot && tot.getAttribute('data-mapped-bytes'), text: tot && tot.textContent, secs,
        peakApi: rows('table tbody tr').filter(r => /exported to another process/.test(r.join(' '))).length,
        mapped: Array.from(document.querySelectorAll('table')).filter(t => /never closed: a leak of a mapping/.test(t.innerText)).length};
    });
    check(ipv.bytes === '75497472' && /8\.0 MiB \(8388608 B\) in 1 never closed/.test(ipv.text) && /1 failed opens/.test(ipv.text),
      'ipc.html: mapped from another process, its figures: ' + ipv.text);
    check(ipv.mapped === 1, 'ipc.html: the mapping never closed is said a leak of a mapping');
    check(ipv.peakApi >= 1, 'ipc.html: the exported site is marked at the peak');
    check(ipv.secs.some(h => /^Exported to other processes/.test(h)), 'ipc.html: the exports section: ' + ipv.secs.join(' | '));
    check(ip.problems.length === 0, 'ipc.html: no console error, no request: ' + ip.problems.join('; '));
  } finally {
    await browser.close();
    fs.rmSync(dir, {recursive: true, force: true});
  }
  console.log(`${passes} passed, ${failures} failed`);
  process.exit(failures ? 1 : 0);
})().catch(e => { console.log('FAIL: ' + (e.stack || e)); process.exit(1); });
