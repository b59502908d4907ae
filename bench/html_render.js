// SPDX-License-Identifier: MIT
// bench/html_render.js NODE_MODULES CHROMIUM FILE.html [LOADS]: loads the
// HTML report LOADS times (default 3) in headless Chromium and prints the
// milliseconds until its script is done and every chart drawn (the median
// and each load), and whether the page had console errors.
'use strict';
const path = require('path');
const [nodeModules, chromium, file, loads = '3'] = process.argv.slice(2);
const puppeteer = require(path.resolve(nodeModules, 'puppeteer-core'));
(async () => {
  const browser = await puppeteer.launch({executablePath: chromium, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage']});
  const times = [];
  let errors = 0;
  for (let i = 0; i < Number(loads); i++) {
    const page = await browser.newPage();
    page.on('console', m => { if (m.type() === 'error') errors++; });
    page.on('pageerror', () => errors++);
    await page.setViewport({width: 1400, height: 1000});
    const t0 = Date.now();
    await page.goto('file://' + path.resolve(file), {waitUntil: 'load'});
    await page.waitForSelector('body[data-cmt-ready]', {timeout: 60000});
    times.push(Date.now() - t0);
    await page.close();
  }
  await browser.close();
  const sorted = times.slice().sort((a, b) => a - b);
  console.log(JSON.stringify({median_ms: sorted[Math.floor(sorted.length / 2)], loads_ms: times, console_errors: errors}));
})().catch(e => { console.error(e); process.exit(1); });
