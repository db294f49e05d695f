// The dashboard's project switcher in a real browser (headless Chromium) against the fetch handler on
// a real HTTP server: a user with two projects and some events sent without a key. Choosing a
// project changes every headline number to that project's (as the API answers with `project=`),
// every request the page then makes carries the project, the URL restores it, and the panel shows
// the chosen project's script tag.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Stats } from '../lib/stats.ts';
import { app } from './helpers/app.ts';
import { browserSuiteRuns, launchChromium } from './helpers/browser.ts';
import { buildPages, DEV_CONFIG_SCRIPT, serveHandler } from './helpers/pages.ts';

const USER = 'projects-user';
const SUITE_LIMIT_MS = 120_000;

interface Project { id: string; name: string; key: string }

if (browserSuiteRuns('Dashboard project switcher tests')) register();

function register() {
  let browser: Browser;
  let server: { url: string; close(): Promise<void> };
  let send: ReturnType<typeof app>['send'];
  let shop: Project, blog: Project;
  const contexts: BrowserContext[] = [];
  const problems: string[] = [];
  let watchdog: ReturnType<typeof setTimeout> | undefined;

  test.before(async () => {
    watchdog = setTimeout(() => {
      console.error(`project switcher tests: still running after ${SUITE_LIMIT_MS / 1000} s; stopping the browser and the server`);
      void browser?.close();
      void server?.close();
    }, SUITE_LIMIT_MS);
    buildPages();
    const built = app();
    send = built.send;
    const create = async (name: string) => (await (await send('POST', '/api/projects', { body: { name }, headers: { 'x-idp-user-id': USER } })).json()) as Project;
    shop = await create('Shop');
    blog = await create('Blog');
    const ingest = async (path: string, events: Record<string, unknown>[]) =>
      assert.is((await send('POST', path, { body: { events } })).status, 200);
    await ingest(`/api/events?key=${shop.key}`, [
      { type: 'pageload', route: '/cart', data: { duration: 300 } },
      { type: 'error', message: 'shop failure', deployVersion: '1.0' },
      { type: 'click', data: { text: 'Buy' } },
    ]);
    await ingest(`/api/events?key=${blog.key}`, [
      { type: 'pageload', route: '/post', data: { duration: 100 } },
      { type: 'pageload', route: '/post', data: { duration: 120 } },
      { type: 'click', data: { text: 'Share' } },
      { type: 'click', data: { text: 'Like' } },
      { type: 'click', data: { text: 'Subscribe' } },
    ]);
    // Sent without a key: the user's, in no project.
    await ingest('/api/events', [{ type: 'custom', userId: USER }, { type: 'error', userId: USER, message: 'keyless' }]);
    server = await serveHandler(built.handler);
    browser = await launchChromium();
  });

  test.after(async () => {
    clearTimeout(watchdog);
    for (const ctx of contexts) await ctx.close().catch(() => {});
    await browser?.close().catch(() => {});
    await server?.close();
  });

  /** The signed-in dashboard at `path`, once its numbers and project list are drawn; every API request it makes is recorded. */
  async function open(path: string): Promise<{ page: Page; requests: URL[] }> {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    contexts.push(ctx);
    ctx.setDefaultTimeout(10_000);
    await ctx.route('**/assets/config.js', (route) => route.fulfill({ status: 200, contentType: 'application/javascript', body: DEV_CONFIG_SCRIPT }));
    await ctx.addInitScript((user) => localStorage.setItem('service_idp_user_id', user), USER);
    const page = await ctx.newPage();
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    const requests: URL[] = [];
    page.on('request', (r) => {
      const u = new URL(r.url());
      if (u.pathname.startsWith('/api/')) requests.push(u);
    });
    await page.goto(server.url + path);
    await page.locator('#app').waitFor({ state: 'visible' });
    await settled(page);
    return { page, requests };
  }

  const settled = (page: Page) => page.locator('.grid[aria-busy=false]').waitFor();
  const kpi = async (page: Page, name: string) => (await page.locator(`[data-kpi=${name}]`).textContent()) ?? '';
  const stats = async (query: string) => (await (await send('GET', `/api/stats${query}`, { headers: { 'x-idp-user-id': USER } })).json()) as Stats;
  const noProblems = () => assert.equal(problems.splice(0), [], 'no page errors');

  /** The headline numbers on the page equal the API's for the project (the "all" range: no span). */
  async function numbersAre(page: Page, project: string, events: number, errors: number) {
    const expected = await stats(project ? `?project=${project}` : '');
    assert.is(expected.totalEvents, events, 'the fixture, as the API counts it');
    assert.is(expected.totalErrors, errors);
    assert.is(await kpi(page, 'totalEvents'), String(events));
    assert.is(await kpi(page, 'totalErrors'), String(errors));
  }

  test('choosing a project changes the numbers to that project\'s, and every request carries it', async () => {
    const { page, requests } = await open('/dashboard?range=all');
    // Oldest first; both were created within the same millisecond here, so their order is the list's to choose.
    const names = await page.locator('select[name=project] option').allTextContents();
    assert.equal([names[0], ...names.slice(1).sort()], ['All projects', 'Blog', 'Shop']);
    await numbersAre(page, '', 10, 2);
    assert.ok(await page.locator('.panel-project').textContent().then((t) => t!.includes('Choose a project')), 'no project chosen: no script tag');
    assert.not.ok(await page.locator('.panel-project pre').isVisible());

    requests.length = 0;
    await page.selectOption('select[name=project]', shop.id);
    await settled(page);
    await page.waitForFunction((id) => new URL(location.href).searchParams.get('project') === id, shop.id);
    await numbersAre(page, shop.id, 3, 1);
    const asked = requests.filter((u) => u.pathname === '/api/stats' || u.pathname === '/api/events');
    assert.ok(asked.length >= 2, 'the numbers and the events were asked for again');
    assert.equal(asked.filter((u) => u.searchParams.get('project') !== shop.id).map(String), [], 'every request carries the project');
    const tag = await page.locator('.panel-project pre').textContent();
    assert.ok(tag!.includes(`data-key="${shop.key}"`) && tag!.includes(`src="${server.url}/sdk/watchtower.js"`), tag!);
    // The event list holds only the project's events.
    assert.is(await page.locator('table.events tbody tr').count(), 3);
    // The errors card leads to the issues of the project shown.
    assert.is(await page.locator('a[data-issues-link]').getAttribute('href'), `/issues/?project=${shop.id}`);

    await page.selectOption('select[name=project]', blog.id);
    await settled(page);
    await numbersAre(page, blog.id, 5, 0);
    assert.ok((await page.locator('.panel-project pre').textContent())!.includes(`data-key="${blog.key}"`));

    // Back to the first project, then to all of them, with the browser's history.
    await page.goBack();
    await settled(page);
    await page.waitForFunction(() => (document.querySelector('select[name=project]') as HTMLSelectElement).value !== '');
    assert.is(await page.locator('select[name=project]').inputValue(), shop.id);
    await numbersAre(page, shop.id, 3, 1);
    await page.goBack();
    await settled(page);
    await numbersAre(page, '', 10, 2);
    assert.is(await page.locator('a[data-issues-link]').getAttribute('href'), '/issues/');
    noProblems();
    await page.close();
  });

  test('the URL restores the project: numbers, switcher, script tag and the export carry it', async () => {
    const { page, requests } = await open(`/dashboard?range=all&project=${blog.id}`);
    assert.is(await page.locator('select[name=project]').inputValue(), blog.id);
    await numbersAre(page, blog.id, 5, 0);
    assert.ok((await page.locator('.panel-project pre').textContent())!.includes(blog.key));
    assert.ok(requests.some((u) => u.pathname === '/api/stats'));
    assert.equal(requests.filter((u) => (u.pathname === '/api/stats' || u.pathname === '/api/events') && u.searchParams.get('project') !== blog.id).map(String), []);
    const exported = page.waitForRequest((r) => r.url().includes('/api/events/export'));
    await page.click('button[data-export=ndjson]');
    assert.is(new URL((await exported).url()).searchParams.get('project'), blog.id);
    noProblems();
    await page.close();
  });

  test('a project that is not the user\'s says so instead of showing numbers', async () => {
    const { page } = await open('/dashboard?range=all&project=999999999999');
    assert.match((await page.locator('.problem[role=alert]').first().textContent())!, /404/);
    assert.ok((await page.locator('select[name=project] option:checked').textContent())!.includes('not found'));
    await page.close();
  });
}

test.run();
