// check_report.mjs REPORT.html SCREENSHOT.png PATTERNS DIAGRAMS — loads keyplan's HTML
// review report in Debian's chromium (through playwright-core, no browser download) and
// checks the rendered DOM: exactly DIAGRAMS inline SVG diagrams, each with drawn
// content; exactly PATTERNS rows in the access-pattern table; no console error and no
// page error. Saves a full-page screenshot. Prints "ok ..." per check; exits 1 on the
// first failure.
import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';

const [report, screenshot, patterns, diagrams] = process.argv.slice(2);
const executablePath = process.env.KP_CHROMIUM || '/usr/bin/chromium';
const fail = (message) => { console.error(`FAIL: ${message}`); process.exitCode = 1; };

const browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-gpu'] });
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(pathToFileURL(report).href, { waitUntil: 'load' });
  const svgs = await page.$$eval('svg.diagram', (list) => list.map((s) => ({
    kind: s.getAttribute('data-diagram'),
    shapes: s.querySelectorAll('rect').length,
    width: s.getBoundingClientRect().width,
  })));
  if (svgs.length !== Number(diagrams)) fail(`${svgs.length} diagrams, expected ${diagrams}: ${JSON.stringify(svgs)}`);
  else console.log(`ok ${svgs.length} inline SVG diagrams: ${svgs.map((s) => s.kind).join(', ')}`);
  for (const s of svgs) if (s.shapes === 0 || s.width <= 0) fail(`diagram ${s.kind} draws nothing (${s.shapes} boxes, ${s.width}px wide)`);
  if (svgs.length && !svgs.some((s) => s.kind === 'model')) fail('no diagram of the model (data-diagram="model")');
  const rows = await page.$$eval('#patterns tbody tr.pattern', (list) => list.map((r) => r.cells[0].textContent));
  if (rows.length !== Number(patterns)) fail(`${rows.length} access-pattern rows, expected ${patterns}`);
  else console.log(`ok one row per access pattern (${rows.length})`);
  const rec = await page.textContent('.rec b');
  if (!rec || !rec.includes('Recommendation')) fail('no recommendation shown');
  else console.log(`ok ${rec.trim()}`);
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(`ok screenshot ${screenshot}`);
  if (errors.length) fail(`console errors: ${errors.join(' | ')}`);
  else console.log('ok no console errors');
} finally {
  await browser.close();
}
