// check_report.mjs REPORT.html SCREENSHOT.png PATTERNS DIAGRAMS — loads keyplan's HTML
// review report in Debian's chromium (through playwright-core, no browser download) and
// checks the rendered DOM: exactly DIAGRAMS inline SVG diagrams, each with drawn
// content, the model's first and before the tables; exactly PATTERNS rows in the
// access-pattern table, each opening to the JSON it returns and the requests of every
// database; one bar per design in each load chart; risks listed once, grouped by
// severity; the recommendation not repeating a risk; a print stylesheet that hides the
// navigation; no console error and no page error. Saves a full-page screenshot and,
// with SHOT.png given, a screenshot of the top of the page with the first pattern
// open (the one docs/ keeps). Prints "ok ..." per check; exits 1 on any failure.
import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';

const [report, screenshot, patterns, diagrams, shot] = process.argv.slice(2);
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
  const order = await page.evaluate(() => {
    const model = document.querySelector('svg.diagram[data-diagram="model"]');
    const table = document.querySelector('#patterns table');
    return model && table ? Boolean(model.compareDocumentPosition(table) & Node.DOCUMENT_POSITION_FOLLOWING) : false;
  });
  if (!order) fail('the model diagram does not come before the access-pattern table');
  else console.log('ok the model diagram comes first');
  // each pattern opens to its response and the requests of every database compared
  const plans = await page.$$eval('#patterns tr.plan details', (list) => list.length);
  if (plans !== Number(patterns)) fail(`${plans} expandable plans, expected ${patterns}`);
  await page.click('#patterns tr.plan details summary');
  const opened = await page.$eval('#patterns tr.plan details', (d) => ({
    open: d.open,
    returns: d.querySelector('pre.returns')?.getBoundingClientRect().height || 0,
    text: d.querySelector('pre.returns')?.textContent || '',
    ops: d.querySelectorAll('ol.ops li').length,
    databases: d.querySelectorAll('h4').length,
  }));
  if (!opened.open || opened.returns <= 0 || !opened.text.trim().startsWith('{') || opened.ops < opened.databases || opened.databases < 1)
    fail(`the first pattern does not open to its response and requests: ${JSON.stringify(opened)}`);
  else console.log(`ok a pattern opens to its response and ${opened.ops} requests over ${opened.databases} databases`);
  const bars = await page.$$eval('svg.chart', (charts) => charts.map((c) => c.querySelectorAll('g.bar rect.io').length));
  const designs = await page.$$eval('table.totals', (ts) => ts.map((t) => t.tBodies[0].rows.length));
  if (!bars.length || bars.some((n, i) => n !== designs[i])) fail(`load charts ${JSON.stringify(bars)} against designs ${JSON.stringify(designs)}`);
  else console.log(`ok ${bars.length} load chart(s), one bar per design`);
  const risks = await page.$$eval('#risks li', (list) => list.map((l) => l.textContent.replace(/^[^:]*: /, '')));
  if (new Set(risks).size !== risks.length) fail('a risk is listed twice');
  const groups = await page.$$eval('#risks h3', (list) => list.map((h) => h.textContent));
  console.log(`ok ${risks.length} risks listed once (${groups.join(', ') || 'none'})`);
  const repeated = await page.$$eval('.rec li', (list) => list.map((l) => l.textContent));
  if (repeated.some((r) => risks.includes(r) || r.includes(' to review, first:'))) fail('the recommendation repeats a risk');
  await page.emulateMedia({ media: 'print' });
  const navShown = await page.$eval('nav', (n) => getComputedStyle(n).display !== 'none');
  if (navShown) fail('the print stylesheet keeps the navigation');
  else console.log('ok print stylesheet');
  await page.emulateMedia({ media: 'screen' });
  const rec = await page.textContent('.rec b');
  if (!rec || !rec.includes('Recommendation')) fail('no recommendation shown');
  else console.log(`ok ${rec.trim()}`);
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(`ok screenshot ${screenshot}`);
  if (shot) {
    await page.setViewportSize({ width: 1280, height: 1600 });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: shot, fullPage: false });
    console.log(`ok screenshot of the top ${shot}`);
  }
  if (errors.length) fail(`console errors: ${errors.join(' | ')}`);
  else console.log('ok no console errors');
} finally {
  await browser.close();
}
