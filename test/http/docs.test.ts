import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import * as assert from 'uvu/assert';
import { serviceSuite, startService, type Service } from '../support/http.js';
import { distRoot } from '../support/process.js';
import { suiteWith, type Setup } from '../support/suites.js';

/** Debian's chromium (apt-get install chromium); with CI=true a missing one fails the run, elsewhere it skips. */
const chromiumBinary = (): { bin: string } | { skip: string } => {
  const onPath = spawnSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).stdout.trim();
  for (const c of [process.env['CHROMIUM_BIN'], '/usr/bin/chromium', onPath]) {
    if (c !== undefined && c !== '' && existsSync(c)) return { bin: c };
  }
  const reason = 'chromium not found (install it with: apt-get install chromium)';
  if (process.env['CI'] === 'true') throw new Error(`CI=true and ${reason}`);
  return { skip: reason };
};

const assets = serviceSuite('GET /docs and its assets');

assets.test('the page is HTML under a Content-Security-Policy that allows this origin only', async ({ svc }) => {
  const res = await svc.call('GET', '/docs');
  assert.is(res.status, 200);
  assert.is(res.headers.get('content-type'), 'text/html; charset=utf-8');
  const csp = res.headers.get('content-security-policy') ?? '';
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.is(res.headers.get('x-content-type-options'), 'nosniff');
  assert.not.match(res.text, /https?:\/\//, 'the page names no other host');
  assert.not.match(res.text, /<script>/, 'no inline script');
});

assets.test('/docs/ (with the slash) redirects to the page, relative to where it is served', async ({ svc }) => {
  for (const method of ['GET', 'HEAD'] as const) {
    const res = await svc.call(method, '/docs/');
    assert.is(res.status, 308, method);
    assert.is(res.headers.get('location'), '../docs', method);
    assert.is(new URL(res.headers.get('location') ?? '', `${svc.base}/docs/`).pathname, '/docs');
  }
});

assets.test('the assets come from the installed swagger-ui-dist; any other name is 404', async ({ svc }) => {
  const js = await svc.call('GET', '/docs/swagger-ui-bundle.js');
  assert.is(js.status, 200);
  assert.is(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
  assert.ok(js.text.length > 100_000);
  assert.is((await svc.call('GET', '/docs/swagger-ui.css')).headers.get('content-type'), 'text/css; charset=utf-8');
  assert.is((await svc.call('GET', '/docs/package.json')).status, 404);
  assert.is((await svc.call('GET', '/docs/..%2Fpackage.json')).status, 404);
  assert.is((await svc.call('POST', '/docs')).status, 405);
});

assets.run();

interface Browsing {
  readonly svc: Service;
  readonly browser: BrowserContext;
  readonly teardown: () => Promise<void>;
}

const chrome = chromiumBinary();
const setup: Setup<Browsing> =
  'skip' in chrome
    ? chrome
    : async () => {
        const svc = await startService();
        const profile = mkdtempSync(join(tmpdir(), 'chromium-profile-'));
        const browser = await chromium.launchPersistentContext(profile, {
          executablePath: chrome.bin,
          headless: true,
          args: [
            '--headless',
            '--no-sandbox',
            '--disable-gpu',
            '--disable-quic',
            '--no-first-run',
            '--disable-background-networking',
            '--disable-component-update',
            '--disable-sync',
          ],
        });
        return {
          svc,
          browser,
          teardown: async () => {
            await browser.close();
            await svc.close();
            rmSync(profile, { recursive: true, force: true });
          },
        };
      };

const { test, subject, run } = suiteWith('the docs page in headless chromium', setup);

test('renders the reference from /openapi.json with no console error and no request elsewhere', async (ctx) => {
  const { svc, browser } = subject(ctx);
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`failed: ${r.url()}`));
  page.on('request', (r) => {
    if (!r.url().startsWith(svc.base) && !r.url().startsWith('data:')) problems.push(`elsewhere: ${r.url()}`);
  });
  const res = await page.goto(`${svc.base}/docs`);
  assert.is(res?.status(), 200);
  await page.waitForSelector('.opblock-summary-path', { timeout: 30_000 });
  // Runs in the page: its elements typed by what is read of them (the DOM's types are not in this project's lib).
  type Element = { querySelector: (selector: string) => { textContent: string | null } | null };
  const operations = await page.$$eval('.opblock-summary', (els: Element[]) =>
    els.map((e) => {
      const method = e.querySelector('.opblock-summary-method')?.textContent ?? '';
      const path = e.querySelector('.opblock-summary-path')?.textContent ?? '';
      return `${method} ${path.replace(/\u200b/g, '')}`;
    }),
  );
  for (const op of ['GET /plants', 'POST /plants', 'DELETE /plants/{id}']) {
    assert.ok(operations.includes(op), `${op} is shown (shown: ${operations.join(', ')})`);
  }
  // Opening an operation renders its parameters and responses, still within the page's CSP.
  await page.click('#operations-plants-listPlants .opblock-summary');
  await page.waitForSelector('#operations-plants-listPlants .responses-wrapper', { timeout: 10_000 });
  const dir = join(distRoot, 'test-artifacts');
  mkdirSync(dir, { recursive: true });
  const shot = join(dir, 'docs.png');
  await page.screenshot({ path: shot, fullPage: true });
  process.stdout.write(`\n  docs page screenshot: ${shot}\n`);
  assert.equal(problems, []);
});

test('Authorize, then Try it out and Execute on each plant operation with the proposed values: 200, 200, 204', async (ctx) => {
  const { svc, browser } = subject(ctx);
  const page = await browser.newPage();
  await page.goto(`${svc.base}/docs`);
  await page.waitForSelector('.opblock-summary-path', { timeout: 30_000 });
  await page.click('.auth-wrapper .authorize');
  await page.fill('.auth-container input', svc.token.alice);
  await page.click('.auth-btn-wrapper .authorize');
  await page.click('.auth-btn-wrapper .btn-done');
  const statuses: string[] = [];
  const proposed: string[] = [];
  for (const op of ['createPlant', 'listPlants', 'deletePlant']) {
    const block = `#operations-plants-${op}`;
    await page.click(`${block} .opblock-summary`);
    await page.click(`${block} .try-out__btn`);
    // What Swagger UI proposes, unchanged: the request body and the parameters' values.
    const values = await page.$$eval(`${block} textarea.body-param__text, ${block} .parameters input`, (els) =>
      els.map((e) => (e as unknown as { value: string }).value),
    );
    proposed.push(`${op}: ${values.join(' | ').replace(/\s+/g, ' ')}`);
    await page.click(`${block} .execute`);
    const status = await page.waitForSelector(`${block} .live-responses-table .response .response-col_status`, {
      timeout: 10_000,
    });
    statuses.push(`${op} ${(await status.textContent())?.trim()}`);
  }
  process.stdout.write(`\n  proposed by Swagger UI: ${proposed.join('; ')}\n`);
  assert.equal(statuses, ['createPlant 200', 'listPlants 200', 'deletePlant 204'], proposed.join('; '));
});

run();
