// The dashboard's Goals panel in headless Chromium against the fetch handler on a real HTTP server:
// a project with three goals and events sent with its key, this week and the week before. The rows
// hold the numbers GET /api/stats answers, with the conversion rate's change against the week
// before; the owner adds a goal through the form (and reads the server's refusal of a bad one),
// deletes one, and downloads the table as CSV; a viewer sees the numbers without the controls; a
// project without goals says how to add one; axe-core finds no serious or critical violation,
// light and dark.
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import type { Stats } from '../lib/stats.ts';
import { app } from './helpers/app.ts';
import { browserSuiteRuns, launchChromium } from './helpers/browser.ts';
import { buildPages, openSignedIn, seriousViolations, serveHandler } from './helpers/pages.ts';

const OWNER = 'goals-owner';
const VIEWER = 'goals-viewer';
const DAY = 86_400_000;
const SUITE_LIMIT_MS = 180_000;


if (browserSuiteRuns('Goals browser tests')) register();

function register() {
  let browser: Browser;
  let server: { url: string; close(): Promise<void> };
  let send: ReturnType<typeof app>['send'];
  let projectId = '';
  let emptyId = '';
  let watchdog: ReturnType<typeof setTimeout> | undefined;
  const as = (user: string) => ({ 'x-idp-user-id': user });

  test.before(async () => {
    watchdog = setTimeout(() => {
      console.error(`goals browser tests: still running after ${SUITE_LIMIT_MS / 1000} s; stopping`);
      void browser?.close();
      void server?.close();
    }, SUITE_LIMIT_MS);
    buildPages();
    // The server's clock is moved back to send the week before's events.
    let shift = 0;
    const built = app({ now: () => Date.now() + shift });
    send = built.send;
    const json = async (method: string, path: string, user: string | null, body?: unknown) => {
      const r = await send(method, path, { headers: user ? as(user) : {}, body });
      return { status: r.status, body: await r.json() };
    };
    const project = (await json('POST', '/api/projects', OWNER, { name: 'Shop' })).body;
    projectId = project.id;
    emptyId = (await json('POST', '/api/projects', OWNER, { name: 'Blog' })).body.id;
    for (const goal of [{ name: 'Signup', event: 'signup' }, { name: 'Pricing', page: '/pricing' }, { name: 'Docs', page: '/docs/**' }]) {
      assert.is((await json('POST', `/api/projects/${projectId}/goals`, OWNER, goal)).status, 201);
    }
    const { token } = (await json('POST', `/api/projects/${projectId}/invitations`, OWNER, { role: 'viewer' })).body;
    assert.is((await json('POST', `/api/invitations/${token}/accept`, VIEWER)).status, 200);
    const ingest = async (events: Record<string, unknown>[]) =>
      assert.is((await send('POST', `/api/events?key=${project.key}`, { body: { events } })).status, 200);
    // Ten days ago: two sessions on "/", one goes on to /pricing (Pricing 50%, Signup and Docs 0%).
    shift = -10 * DAY;
    await ingest([
      { type: 'pageload', sessionId: 'p', route: '/' }, { type: 'pageload', sessionId: 'p', route: '/pricing' },
      { type: 'pageload', sessionId: 'q', route: '/' },
    ]);
    // Now: four sessions on "/", three on /pricing (75%), one signs up twice (25%), one reads the docs (25%).
    shift = 0;
    await ingest(['a', 'b', 'c', 'd'].flatMap((s, i) => [
      { type: 'pageload', sessionId: s, route: '/' },
      ...(i < 3 ? [{ type: 'pageload', sessionId: s, route: '/pricing' }] : [{ type: 'pageload', sessionId: s, route: '/docs/a/b' }]),
      ...(i === 0 ? [{ type: 'custom', sessionId: s, name: 'signup' }, { type: 'custom', sessionId: s, name: 'signup' }] : []),
    ]));
    server = await serveHandler(built.handler);
    browser = await launchChromium();
  });

  test.after(async () => {
    clearTimeout(watchdog);
    await browser?.close().catch(() => {});
    await server?.close();
  });

  const open = (query: string, user = OWNER, scheme: 'light' | 'dark' = 'light'): Promise<Page> => openSignedIn(browser, `${server.url}/dashboard/${query}`, user, scheme);

  /** Each goal row's cells as shown: name, match, conversions, sessions, rate, change. */
  const rows = (page: Page) => page.locator('.goals-table tbody tr').evaluateAll((trs) =>
    trs.map((tr) => [...tr.querySelectorAll('th, td')].slice(0, 6).map((c) => (c.firstChild?.textContent ?? '').trim())));
  /** Waits until the comparison is drawn (a change other than "—" in the first row). */
  const compared = (page: Page) => page.waitForFunction(() => document.querySelector('.goals-table tbody tr [data-change]')?.getAttribute('data-change') !== '');

  test('the rows hold the numbers of GET /api/stats, with the rate\'s change against the week before', async () => {
    const page = await open(`?range=7d&project=${projectId}`);
    await compared(page);
    const api = (await (await send('GET', `/api/stats?from=${new Date(Date.now() - 7 * DAY).toISOString()}&project=${projectId}`, { headers: as(OWNER) })).json()) as Stats;
    assert.equal(api.goals?.map((g) => [g.name, g.conversions, g.sessions, g.conversionRate]), [
      ['Signup', 2, 1, 0.25], ['Pricing', 3, 3, 0.75], ['Docs', 1, 1, 0.25],
    ]);
    assert.equal(await rows(page), [
      ['Signup', 'event signup', '2', '1', '25%', '▲ +25 pts'],
      ['Pricing', 'page /pricing', '3', '3', '75%', '▲ +25 pts'],
      ['Docs', 'page /docs/**', '1', '1', '25%', '▲ +25 pts'],
    ]);
    await page.context().close();
  });

  test('the owner adds a goal, reads a refusal in words, deletes a goal, and downloads the table as CSV', async () => {
    const page = await open(`?range=7d&project=${projectId}`);
    await compared(page);
    const form = page.getByRole('form', { name: 'Add a goal' });
    await form.getByLabel('Goal name').fill('Home');
    await form.getByLabel('Page pattern or event name').fill('/');
    await form.getByRole('button', { name: 'Add goal' }).click();
    await page.waitForFunction(() => document.querySelectorAll('.goals-table tbody tr').length === 4);
    await page.waitForFunction(() => document.querySelector('.goals-table tbody tr:last-child [data-change]')?.getAttribute('data-change') === '0');
    assert.equal((await rows(page))[3], ['Home', 'page /', '4', '4', '100%', '0 pts']);

    await form.getByLabel('Goal name').fill('Bad');
    await form.getByLabel('Counts').selectOption('event');
    await form.getByLabel('Page pattern or event name').fill('a\\b');
    await form.getByRole('button', { name: 'Add goal' }).click();
    const alert = page.locator('[data-goals-error]');
    await alert.waitFor({ state: 'visible' });
    assert.match(await alert.textContent() ?? '', /^The goal could not be added: .*backslash/i);

    await page.getByRole('button', { name: 'Delete goal Docs' }).click();
    await page.waitForFunction(() => document.querySelectorAll('.goals-table tbody tr').length === 3);
    const listed = (await (await send('GET', `/api/projects/${projectId}/goals`, { headers: as(OWNER) })).json()) as { goals: { name: string }[] };
    assert.equal(listed.goals.map((g) => g.name), ['Signup', 'Pricing', 'Home']);
    await compared(page);

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download goals as CSV' }).click()]);
    assert.is(download.suggestedFilename(), 'watchtower-goals.csv');
    assert.is(readFileSync(await download.path(), 'utf8'),
      'Goal,Matches,Conversions,Sessions,Conversion rate %,Change (percentage points)\r\n' +
      'Signup,event signup,2,1,25,25\r\nPricing,page /pricing,3,3,75,25\r\nHome,page /,4,4,100,0\r\n');
    await page.context().close();
  });

  test('a viewer sees the numbers without the form or delete buttons; "all" and a project without goals say what to do', async () => {
    const viewer = await open(`?range=7d&project=${projectId}`, VIEWER);
    await compared(viewer);
    assert.is(await viewer.locator('.goals-table tbody tr').count(), 3);
    assert.is(await viewer.locator('.goal-form').isVisible(), false);
    assert.is(await viewer.getByRole('button', { name: /^Delete goal/ }).count(), 0);
    await viewer.context().close();

    const all = await open(`?range=all&project=${projectId}`);
    await all.waitForFunction(() => /not "all"/.test(document.querySelector('[data-goals-note]')?.textContent ?? ''));
    await all.context().close();

    const empty = await open(`?range=7d&project=${emptyId}`);
    await empty.waitForFunction(() => /^No goals yet\. Add one below/.test(document.querySelector('[data-goals-note]')?.textContent ?? ''));
    assert.is(await empty.locator('.goal-form').isVisible(), true);
    await empty.context().close();
  });

  for (const scheme of ['light', 'dark'] as const) {
    test(`axe: the dashboard with the Goals panel and its form (${scheme}) has no serious or critical violation`, async () => {
      const page = await open(`?range=7d&project=${projectId}`, OWNER, scheme);
      await compared(page);
      const found = await seriousViolations(page);
      await page.context().close();
      assert.equal(found, []);
    });
  }

  test.run();
}
