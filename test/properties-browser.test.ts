// The dashboard's event properties panel in headless Chromium against the fetch handler on a real
// HTTP server: custom events with properties sent with a project's key. Picking a property (and
// an event) shows the values GET /api/stats answers, puts the choice in the URL (a reload and
// back/forward restore it), and the table downloads as CSV; "all" says to choose a range; axe-core
// finds no serious or critical violation, light and dark.
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import type { Stats } from '../lib/stats.ts';
import { app } from './helpers/app.ts';
import { browserSuiteRuns, launchChromium } from './helpers/browser.ts';
import { buildPages, openSignedIn, seriousViolations, serveHandler } from './helpers/pages.ts';

const OWNER = 'props-owner';
const DAY = 86_400_000;
const SUITE_LIMIT_MS = 180_000;

if (browserSuiteRuns('Properties browser tests')) register();

function register() {
  let browser: Browser;
  let server: { url: string; close(): Promise<void> };
  let send: ReturnType<typeof app>['send'];
  let projectId = '';
  let watchdog: ReturnType<typeof setTimeout> | undefined;
  const as = (user: string) => ({ 'x-idp-user-id': user });

  test.before(async () => {
    watchdog = setTimeout(() => {
      console.error(`properties browser tests: still running after ${SUITE_LIMIT_MS / 1000} s; stopping`);
      void browser?.close();
      void server?.close();
    }, SUITE_LIMIT_MS);
    buildPages();
    const built = app();
    send = built.send;
    const project = await (await send('POST', '/api/projects', { headers: as(OWNER), body: { name: 'Shop' } })).json();
    projectId = project.id;
    const events = [
      ...['a', 'b', 'c'].map((s) => ({ type: 'custom', name: 'signup', sessionId: s, data: { plan: 'pro', seats: 3 } })),
      { type: 'custom', name: 'signup', sessionId: 'd', data: { plan: 'free', seats: 1 } },
      { type: 'custom', name: 'upgrade', sessionId: 'a', data: { plan: 'team' } },
      { type: 'pageload', sessionId: 'a', route: '/' },
    ];
    assert.is((await send('POST', `/api/events?key=${project.key}`, { body: { events } })).status, 200);
    server = await serveHandler(built.handler);
    browser = await launchChromium();
  });

  test.after(async () => {
    clearTimeout(watchdog);
    await browser?.close().catch(() => {});
    await server?.close();
  });

  const open = (query: string, scheme: 'light' | 'dark' = 'light'): Promise<Page> => openSignedIn(browser, `${server.url}/dashboard/${query}`, OWNER, scheme);
  const panel = (page: Page) => page.locator('.panel-properties');
  /** The value rows as shown: value, events, sessions. */
  const rows = (page: Page) => panel(page).locator('tbody tr').evaluateAll((trs) =>
    trs.map((tr) => [...tr.querySelectorAll('th, td')].map((c) => (c.firstChild?.textContent ?? '').trim())));
  const noted = (page: Page, pattern: RegExp) =>
    page.waitForFunction((src) => new RegExp(src).test(document.querySelector('[data-properties-note]')?.textContent ?? ''), pattern.source);

  test('picking a property shows the values GET /api/stats answers; the choice is in the URL and survives a reload', async () => {
    const page = await open(`?range=7d&project=${projectId}`);
    await noted(page, /^Choose a property/);
    const keys = await panel(page).locator('select[name=property]').locator('option').allTextContents();
    assert.equal(keys, ['Choose a property', 'plan', 'seats']);
    await panel(page).locator('select[name=property]').selectOption('plan');
    await noted(page, /^Values of “plan” on every custom event/);
    const api = (await (await send('GET', `/api/stats?from=${new Date(Date.now() - 7 * DAY).toISOString()}&project=${projectId}&property=plan`, { headers: as(OWNER) })).json()) as Stats;
    assert.equal(api.properties!.plan.map((r) => [r.name, String(r.events), String(r.sessions)]), await rows(page));
    assert.equal(await rows(page), [['pro', '3', '3'], ['free', '1', '1'], ['team', '1', '1']]);
    assert.match(page.url(), /property=plan/);

    await panel(page).locator('select[name=event]').selectOption('signup');
    await noted(page, /on “signup” events/);
    assert.equal(await rows(page), [['pro', '3', '3'], ['free', '1', '1']]);
    assert.match(page.url(), /event=signup/);
    await page.goBack();
    await noted(page, /on every custom event/);
    assert.is(await panel(page).locator('select[name=event]').inputValue(), '');

    const again = await open(`?range=7d&project=${projectId}&property=seats&event=signup`);
    await noted(again, /^Values of “seats” on “signup” events/);
    assert.equal(await rows(again), [['3', '3', '3'], ['1', '1', '1']]);
    const [download] = await Promise.all([again.waitForEvent('download'), again.getByRole('button', { name: 'Download event properties as CSV' }).click()]);
    assert.is(download.suggestedFilename(), 'watchtower-property-seats.csv');
    assert.is(readFileSync(await download.path(), 'utf8'), 'Value,Events,Sessions\r\n3,3,3\r\n1,1,1\r\n');
    await again.context().close();
    await page.context().close();
  });

  test('"all" says to choose a range', async () => {
    const page = await open(`?range=all&project=${projectId}&property=plan`);
    await noted(page, /not "all"/);
    assert.equal(await rows(page), [[`Choose a time range (not "all") to see this.`]]);
    await page.context().close();
  });

  for (const scheme of ['light', 'dark'] as const) {
    test(`axe: the dashboard with the properties panel (${scheme}) has no serious or critical violation`, async () => {
      const page = await open(`?range=7d&project=${projectId}&property=plan`, scheme);
      await noted(page, /^Values of “plan”/);
      const found = await seriousViolations(page);
      await page.context().close();
      assert.equal(found, []);
    });
  }

  test.run();
}
