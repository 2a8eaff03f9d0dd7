// Drives headless Chromium (from tests/browser/setup.sh) through a plan and prints what it saw as
// JSON: the value of every "eval" step, console errors, page errors and any request that is not
// the page itself (the viewer must fetch nothing).
//
//   node tests/browser/drive.mjs '{"html": "/tmp/x.html", "steps": [{"do": "eval", "js": "1+1"}]}'
//
// Steps: {"do": "eval", "js": "..."} (an expression; its value is recorded, promises awaited),
// {"do": "click", "sel": "..."}, {"do": "type", "sel": "...", "text": "..."}, {"do": "key", "key": "t"},
// {"do": "wait", "ms": 100}, {"do": "waitFor", "js": "..."} (until truthy),
// {"do": "screenshot", "path": "..."}, {"do": "dark", "on": true}, {"do": "downloads", "dir": "..."},
// {"do": "media", "type": "print"} (lay the page out as printed; null: as on screen),
// {"do": "pdf"} (print to an A4 PDF; its page count is recorded as a value).
// Optional plan keys: "ready" (an expression true once the page is ready; default: the viewer's
// own flag), "query" and "hash" (added to the page's URL), "width", "height", "clipboard" (true:
// the page may read and write the clipboard).
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const dir = process.env.PISESSION_BROWSER_DIR || join(process.env.HOME || '/root', '.cache', 'pisession-browser');
const require = createRequire(join(dir, 'package.json'));
const chromium = (await import(pathToFileURL(require.resolve('@sparticuz/chromium')).href)).default;
const puppeteer = (await import(pathToFileURL(require.resolve('puppeteer-core')).href)).default;

const plan = JSON.parse(process.argv[2]);
const profile = mkdtempSync(join(tmpdir(), 'pisession-chromium-'));
const browser = await puppeteer.launch({
  executablePath: await chromium.executablePath(),
  headless: true,
  args: [
    '--no-sandbox', '--headless', '--disable-gpu', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', `--user-data-dir=${profile}`,
  ],
});
const out = { values: [], consoleErrors: [], pageErrors: [], requests: [] };
try {
  if (plan.clipboard) {
    await browser.defaultBrowserContext().overridePermissions('file://', ['clipboard-read', 'clipboard-write', 'clipboard-sanitized-write']);
  }
  const page = await browser.newPage();
  await page.setViewport({ width: plan.width || 1400, height: plan.height || 900 });
  page.on('console', (msg) => { if (msg.type() === 'error' || msg.type() === 'warn') out.consoleErrors.push(msg.text()); });
  page.on('pageerror', (err) => out.pageErrors.push(String(err && err.message || err)));
  page.on('request', (req) => {
    const url = req.url();
    if (!url.startsWith('data:') && !url.startsWith('blob:') && url.replace(/[?#].*$/s, '') !== pathToFileURL(plan.html).href) {
      out.requests.push(url);
    }
  });
  const started = Date.now();
  await page.goto(pathToFileURL(plan.html).href + (plan.query || '') + (plan.hash || ''), { waitUntil: 'load', timeout: 120000 });
  await page.waitForFunction(plan.ready || 'document.body.dataset.ready === "true"', { timeout: 120000 });
  out.loadMs = Date.now() - started;
  out.readyMs = await page.evaluate(() => performance.now());
  for (const step of plan.steps || []) {
    if (step.do === 'eval') out.values.push(await page.evaluate(`(async () => (${step.js}))()`));
    else if (step.do === 'click') await page.click(step.sel);
    else if (step.do === 'type') await page.type(step.sel, step.text);
    else if (step.do === 'key') await page.keyboard.press(step.key);
    else if (step.do === 'wait') await new Promise((r) => setTimeout(r, step.ms));
    else if (step.do === 'waitFor') await page.waitForFunction(step.js, { timeout: 30000 });
    else if (step.do === 'screenshot') await page.screenshot({ path: step.path, fullPage: false });
    else if (step.do === 'media') await page.emulateMediaType(step.type || null);
    else if (step.do === 'pdf') {
      // Printed as Chrome prints (A4), pages counted from the PDF's page objects.
      const pdf = Buffer.from(await page.pdf({ format: 'A4', printBackground: true }));
      out.values.push((pdf.toString('latin1').match(/\/Type\s*\/Page(?![a-zA-Z])/g) || []).length);
    } else if (step.do === 'dark') await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: step.on ? 'dark' : 'light' }]);
    else if (step.do === 'downloads') {
      const cdp = await page.createCDPSession();
      await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: step.dir });
    } else throw new Error('unknown step ' + JSON.stringify(step));
  }
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(out) + '\n');
