// axe-core on every page under pages/ (each directory with an index.html), in light and dark colour
// schemes, in headless Chromium: no serious or critical violation. Pages are opened signed in (with
// events to show), except those that send a signed-in visitor elsewhere (the sign-in page), which
// are opened signed out. Folded content (<details>) is opened first, so its tables are checked too.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { createMemoryStore } from '../lib/store/memory.ts';
import { app } from './helpers/app.ts';
import { browserSuiteRuns, launchChromium } from './helpers/browser.ts';
import { buildPages, DEV_CONFIG_SCRIPT, serveHandler } from './helpers/pages.ts';
import { ROOT } from './helpers/server.ts';

const USER = 'axe-user';
const SUITE_LIMIT_MS = 240_000;
const SCHEMES = ['light', 'dark'] as const;

/** The served path of every page: pages/<dir>/index.html → /<dir>/ (the dashboard is served at /dashboard). */
function pagePaths(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      if (!statSync(full).isDirectory() || full === join(ROOT, 'pages/src')) continue;
      if (readdirSync(full).includes('index.html')) found.push(`/${relative(join(ROOT, 'pages'), full).split('\\').join('/')}/`);
      walk(full);
    }
  };
  walk(join(ROOT, 'pages'));
  return found.map((p) => (p === '/dashboard/' ? '/dashboard' : p)).sort();
}

interface Violation { id: string; impact: string; help: string; nodes: { target: string[]; failureSummary?: string }[] }

if (browserSuiteRuns('Accessibility tests')) register();

function register() {
  let browser: Browser;
  let server: { url: string; close(): Promise<void> };
  let watchdog: ReturnType<typeof setTimeout> | undefined;
  const axeSource = readFileSync(join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');

  test.before(async () => {
    watchdog = setTimeout(() => {
      console.error(`accessibility tests: still running after ${SUITE_LIMIT_MS / 1000} s; stopping the browser and the server`);
      void browser?.close();
      void server?.close();
    }, SUITE_LIMIT_MS);
    buildPages();
    const built = app({ store: createMemoryStore() });
    // Something in every panel: page loads on two routes (with referrers), errors on two versions,
    // clicks, feedback, web vitals of every rating, from a browser (the User-Agent says which).
    const vitals = [['LCP', 1200], ['LCP', 3000], ['INP', 700], ['CLS', 0.05], ['FCP', 2000], ['TTFB', 2500]] as const;
    const events = Array.from({ length: 48 }, (_, i) => ({
      userId: USER, sessionId: `s${i % 4}`, route: i % 2 ? '/notes' : '/', deployVersion: i % 3 ? '1.4.0' : '2.0.0',
      ...[
        { type: 'pageload', referrer: i % 4 ? 'https://www.google.com' : undefined, data: { duration: 300 + i * 7, ttfb: 80 } },
        { type: 'click', data: { text: 'Save' } },
        { type: 'error', message: `TypeError: broke ${i}`, data: { stack: 'at x (app.js:1:1)' } },
        { type: 'feedback', data: { rating: 1 + (i % 5) } },
        { type: 'custom', data: { name: 'note_saved' } },
        { type: 'performance', data: { name: vitals[Math.floor(i / 6) % 6][0], value: vitals[Math.floor(i / 6) % 6][1] } },
      ][i % 6],
    }));
    const ua = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
    assert.is((await built.send('POST', '/api/events', { body: { events }, headers: { 'user-agent': ua } })).status, 200);
    server = await serveHandler(built.handler);
    browser = await launchChromium();
  });

  test.after(async () => {
    clearTimeout(watchdog);
    await browser?.close().catch(() => {});
    await server?.close();
  });

  async function open(path: string, scheme: 'light' | 'dark', signedIn: boolean): Promise<Page> {
    // axe-core is injected as an inline script, which the pages' Content-Security-Policy forbids:
    // the test's browser bypasses it (the pages' own scripts are still checked against it elsewhere).
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: scheme, bypassCSP: true });
    ctx.setDefaultTimeout(15_000);
    await ctx.route('**/assets/config.js', (route) => route.fulfill({ status: 200, contentType: 'application/javascript', body: DEV_CONFIG_SCRIPT }));
    if (signedIn) await ctx.addInitScript((user) => localStorage.setItem('service_idp_user_id', user), USER);
    const page = await ctx.newPage();
    await page.goto(server.url + path);
    // Ready: the page's guard (if any) gone, no panel still loading.
    await page.waitForFunction(() => {
      const guard = document.getElementById('guard');
      return document.readyState === 'complete' && (!guard || guard.hidden) && !document.querySelector('[aria-busy=true]');
    });
    return page;
  }

  async function violations(page: Page): Promise<Violation[]> {
    await page.evaluate(() => document.querySelectorAll('details').forEach((d) => (d.open = true)));
    await page.addScriptTag({ content: axeSource });
    const result = await page.evaluate(async () => {
      const axe = (window as unknown as { axe: { run(ctx: Document, opts: object): Promise<{ violations: Violation[] }> } }).axe;
      return (await axe.run(document, { resultTypes: ['violations'] })).violations;
    });
    return result.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  }

  test('every page is found, the dashboard and the preview among them', () => {
    const paths = pagePaths();
    for (const p of ['/landing/', '/login/', '/dashboard', '/demo/', '/dashboard-demo/']) assert.ok(paths.includes(p), `${p} in ${paths.join(' ')}`);
  });

  for (const path of pagePaths()) {
    for (const scheme of SCHEMES) {
      test(`axe: ${path} (${scheme}) has no serious or critical violation`, async () => {
        let page = await open(path, scheme, true);
        // A page that sends a signed-in visitor elsewhere is checked as a signed-out visitor sees it.
        if (new URL(page.url()).pathname !== path) {
          await page.context().close();
          page = await open(path, scheme, false);
          assert.is(new URL(page.url()).pathname, path, 'the page stays where it is for a signed-out visitor');
        }
        if (path === '/dashboard') await page.locator('#app').waitFor({ state: 'visible' });
        if (path === '/dashboard' || path === '/dashboard-demo/') {
          // The breakdowns and vitals are checked with data in them, every rating shown.
          for (const key of ['pages', 'referrers', 'browsers', 'os', 'devices', 'versions']) {
            assert.ok(await page.locator(`.panel-bd-${key} tbody th`).count() > 0, `${path}: ${key} has rows`);
          }
          assert.ok(await page.locator('.panel-vitals tbody th').count() > 0, `${path}: vitals per page`);
          for (const rating of ['good', 'needs-improvement', 'poor']) {
            assert.ok(await page.locator(`.panel-vitals .vital-${rating}`).count() > 0, `${path}: a ${rating} vital`);
          }
        }
        const found = await violations(page);
        await page.context().close();
        const report = found.map((v) => `${v.id} (${v.impact}): ${v.help}\n${v.nodes.slice(0, 5).map((n) => `    ${n.target.join(' ')}: ${n.failureSummary?.split('\n').slice(1).join(' ').trim()}`).join('\n')}`);
        assert.ok(report.length === 0, `${path} ${scheme}:\n${report.join('\n')}`);
      });
    }
  }

  test.run();
}
