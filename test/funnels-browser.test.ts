// The funnel builder in headless Chromium: a funnel given in the URL is computed and shown as a
// table (steps, sessions, conversion, drop-off) with bars; changing the form runs it again and puts
// it in the URL, which a reload restores; the CSV download holds the same rows; a saved funnel is
// listed and loads back; axe-core finds no serious or critical violation, light and dark.
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { app } from './helpers/app.ts';
import { browserSuiteRuns, launchChromium } from './helpers/browser.ts';
import { buildPages, openSignedIn, seriousViolations, serveHandler } from './helpers/pages.ts';

const USER = 'funnel-user';
const SUITE_LIMIT_MS = 180_000;


if (browserSuiteRuns('Funnel browser tests')) register();

function register() {
  let browser: Browser;
  let server: { url: string; close(): Promise<void> };
  let projectId = '';
  let watchdog: ReturnType<typeof setTimeout> | undefined;

  test.before(async () => {
    watchdog = setTimeout(() => {
      console.error(`funnel browser tests: still running after ${SUITE_LIMIT_MS / 1000} s; stopping`);
      void browser?.close();
      void server?.close();
    }, SUITE_LIMIT_MS);
    buildPages();
    const built = app();
    const project = await (await built.send('POST', '/api/projects', { headers: built.as(USER), body: { name: 'Shop' } })).json();
    projectId = project.id;
    // Four sessions on "/", three on "/pricing" after it, one signs up: 4 → 3 → 1.
    const events = ['a', 'b', 'c', 'd'].flatMap((s, i) => [
      { type: 'pageload', sessionId: s, route: '/' },
      ...(i < 3 ? [{ type: 'pageload', sessionId: s, route: '/pricing' }] : []),
      ...(i < 1 ? [{ type: 'custom', sessionId: s, name: 'signup' }] : []),
    ]);
    assert.is((await built.send('POST', `/api/events?key=${project.key}`, { body: { events } })).status, 200);
    server = await serveHandler(built.handler);
    browser = await launchChromium();
  });

  test.after(async () => {
    clearTimeout(watchdog);
    await browser?.close().catch(() => {});
    await server?.close();
  });

  const open = (query: string, scheme: 'light' | 'dark' = 'light'): Promise<Page> => openSignedIn(browser, `${server.url}/funnels/${query}`, USER, scheme);

  const rows = (page: Page) => page.locator('.funnel-table tbody tr').evaluateAll((trs) =>
    trs.map((tr) => [...tr.querySelectorAll('th > span:first-child, td')].map((c) => c.textContent)));

  const query = () => `?project=${projectId}&days=7&window=30&step=${encodeURIComponent('page:/')}&step=${encodeURIComponent('page:/pricing')}&step=${encodeURIComponent('event:signup')}`;

  test('a funnel in the URL is shown as a table with bars; CSV holds the same rows', async () => {
    const page = await open(query());
    await page.locator('.funnel-table').waitFor();
    assert.equal(await rows(page), [
      ['1. Page /', '4', '100%', '—'],
      ['2. Page /pricing', '3', '75%', '1'],
      ['3. Event signup', '1', '25%', '2'],
    ]);
    assert.equal(await page.locator('.funnel-table .bar').evaluateAll((bars) => bars.map((b) => (b as HTMLElement).style.width)), ['100%', '75%', '25%']);
    assert.is(await page.locator('.funnel-table .bar-track').first().getAttribute('aria-hidden'), 'true');
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('[data-action=csv]').click()]);
    const csv = readFileSync(await download.path(), 'utf8');
    assert.is(csv, 'step,kind,match,sessions,conversionRate,dropOff\r\n1,page,/,4,1,0\r\n2,page,/pricing,3,0.75,1\r\n3,event,signup,1,0.25,2\r\n');
    await page.context().close();
  });

  test('editing the form runs the funnel again and keeps it in the URL, which a reload restores', async () => {
    const page = await open(query());
    await page.locator('.funnel-table').waitFor();
    await page.locator('.funnel-step').nth(2).getByRole('button', { name: 'Remove step 3' }).click();
    await page.locator('input[name=window]').fill('5');
    await page.getByRole('button', { name: 'Show funnel' }).click();
    await page.waitForFunction(() => document.querySelectorAll('.funnel-table tbody tr').length === 2);
    const url = new URL(page.url());
    assert.equal(url.searchParams.getAll('step'), ['page:/', 'page:/pricing']);
    assert.is(url.searchParams.get('window'), '5');
    await page.reload();
    await page.locator('.funnel-table').waitFor();
    assert.equal((await rows(page)).map((r) => r[0]), ['1. Page /', '2. Page /pricing']);
    assert.is(await page.locator('input[name=window]').inputValue(), '5');
    await page.context().close();
  });

  test('a saved funnel is listed and loads back into the form', async () => {
    const page = await open(query());
    await page.locator('.funnel-table').waitFor();
    await page.locator('input[name=name]').fill('Signup');
    await page.getByRole('button', { name: 'Save funnel' }).click();
    await page.locator('[data-funnel]').waitFor();
    await page.goto(`${server.url}/funnels/?project=${projectId}`);
    await page.getByRole('button', { name: 'Load Signup' }).click();
    await page.locator('.funnel-table').waitFor();
    assert.is(await page.locator('.funnel-table tbody tr').count(), 3);
    await page.context().close();
  });

  for (const scheme of ['light', 'dark'] as const) {
    test(`axe: the builder with a result (${scheme}) has no serious or critical violation`, async () => {
      const page = await open(query(), scheme);
      await page.locator('.funnel-table').waitFor();
      const found = await seriousViolations(page);
      await page.context().close();
      assert.equal(found, []);
    });
  }

  test.run();
}
