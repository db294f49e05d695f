// Teams in the browser, with a real OpenID Connect provider: the owner invites from the project's
// settings, a second user signed in through the provider in another browser context accepts, and
// the project's dashboard renders for them; a share link renders its read-only dashboard signed
// out. The team pages are checked with axe-core in light and dark colour schemes.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { DASHBOARD_CLIENT_ID, OIDC_SCOPE, startOidc, type OidcServer } from './helpers/oidc.ts';
import { ROOT, startServer, type RunningServer } from './helpers/server.ts';
import { browserSuiteRuns, launchChromium } from './helpers/browser.ts';
import { buildPages } from './helpers/pages.ts';

const SUITE_LIMIT_MS = 180_000;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

interface Violation { id: string; impact: string; help: string; nodes: { target: string[] }[] }

if (browserSuiteRuns('Teams browser tests')) register();

function register() {
  let browser: Browser;
  let oidc: OidcServer;
  let server: RunningServer;
  let config: object;
  const contexts: BrowserContext[] = [];
  const problems: string[] = [];
  let watchdog: ReturnType<typeof setTimeout> | undefined;
  const axeSource = readFileSync(join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');
  const uid = (name: string) => `${name}-${Math.random().toString(36).slice(2, 8)}`;

  test.before(async () => {
    watchdog = setTimeout(() => {
      console.error(`teams browser tests: still running after ${SUITE_LIMIT_MS / 1000} s; stopping`);
      void browser?.close();
      void server?.stop('SIGKILL');
      void oidc?.close();
    }, SUITE_LIMIT_MS);
    buildPages();
    const port = await freePort();
    const back = `http://127.0.0.1:${port}/login/`;
    oidc = await startOidc({ redirectUris: [back], postLogoutRedirectUris: [back] });
    server = await startServer({ PORT: String(port), IDP_JWT_ISSUER: oidc.issuer });
    config = { mode: 'provider', issuer: oidc.issuer, clientId: DASHBOARD_CLIENT_ID, publishableKey: '', scope: `openid ${OIDC_SCOPE}` };
    browser = await launchChromium();
  });

  test.after(async () => {
    clearTimeout(watchdog);
    for (const ctx of contexts) await ctx.close().catch(() => {});
    await browser?.close().catch(() => {});
    await server?.stop();
    await oidc?.close();
  });

  async function newContext(): Promise<BrowserContext> {
    // axe-core goes in as an inline script, which the pages' CSP forbids: the test's browser bypasses it.
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
    contexts.push(ctx);
    // Generous: a loaded machine (two runtimes, a provider and a server) once needed more than 10 s.
    ctx.setDefaultTimeout(20_000);
    await ctx.route('**/assets/config.js', (route) => route.fulfill({ status: 200, contentType: 'application/javascript', body: `window.WATCHTOWER_CONFIG = ${JSON.stringify(config)};` }));
    ctx.on('page', (page) => {
      page.on('pageerror', (err) => problems.push(`page error on ${page.url()}: ${err.message}`));
      page.on('response', (r) => {
        if (r.status() >= 400 && !r.url().includes('/api/')) problems.push(`${r.status()} for ${r.url()}`);
      });
    });
    return ctx;
  }

  /** A user signed in through the provider in a browser context of their own, on the dashboard. */
  async function signIn(login: string, start = '/dashboard'): Promise<Page> {
    const page = await (await newContext()).newPage();
    await page.goto(server.url + start);
    await page.waitForURL(server.url + '/login/');
    await page.locator('#idp-sign-in [data-action=sign-in]').click();
    await page.waitForURL((u) => u.href.startsWith(oidc.issuer + '/interaction/'));
    await page.locator('input[name=login]').fill(login);
    await page.locator('input[name=password]').fill('any');
    await page.locator('button[type=submit]').click();
    await page.waitForURL((u) => u.href.startsWith(oidc.issuer + '/interaction/') || u.href.startsWith(server.url));
    if (page.url().startsWith(oidc.issuer)) await page.locator('button[type=submit]').click();
    await page.waitForURL((u) => u.href.startsWith(server.url) && !u.pathname.startsWith('/login'));
    return page;
  }

  /** Serious or critical axe violations, in light and then dark colour scheme. */
  async function axe(page: Page): Promise<string[]> {
    const found: string[] = [];
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.evaluate(() => document.querySelectorAll('details').forEach((d) => (d.open = true)));
      if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ content: axeSource });
      const violations = await page.evaluate(async () => {
        const a = (window as unknown as { axe: { run(ctx: Document, opts: object): Promise<{ violations: Violation[] }> } }).axe;
        return (await a.run(document, { resultTypes: ['violations'] })).violations;
      });
      for (const v of violations) if (v.impact === 'serious' || v.impact === 'critical') found.push(`${scheme} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')})`);
    }
    return found;
  }

  test('invite → accept as another user signed in through the provider → the project\'s dashboard renders for them; the share page renders signed out', async () => {
    const owner = await signIn(uid('owner'));
    await owner.locator('#app').waitFor({ state: 'visible' });
    // The project and its events, through the owner's own pages and the project's key.
    await owner.goto(server.url + '/projects/');
    await owner.locator('#app').waitFor({ state: 'visible' });
    await owner.locator('#create input[name=name]').fill('Team shop');
    await owner.locator('#create button[type=submit]').click();
    const card = owner.locator('[data-project]');
    await card.waitFor();
    const projectId = (await card.getAttribute('data-project'))!;
    const key = (await card.locator('code.key').textContent())!;
    const sent = await fetch(`${server.url}/api/events?key=${key}`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ events: [{ type: 'pageload', route: '/cart', data: { duration: 210 } }, { type: 'pageload', route: '/', data: { duration: 90 } }, { type: 'error', message: 'team-secret-message' }] }),
    });
    assert.is(sent.status, 200);

    await card.locator('select[aria-label="Role of the invited member"]').selectOption('member');
    await card.locator('[data-action=invite]').click();
    const inviteUrl = (await owner.locator('[data-project] .fresh-link code.link').textContent())!;
    assert.match(inviteUrl, /\/invite\/#[\w-]{20,}$/);
    await owner.locator('[data-project] [data-action=share]').click();
    await owner.locator('[data-project] .fresh-link code.link', { hasText: '/share/' }).waitFor();
    const shareUrl = (await owner.locator('[data-project] .fresh-link code.link').textContent())!;
    assert.match(shareUrl, /\/share\/[\w-]{20,}$/);
    assert.equal(await axe(owner), [], 'the project settings with their team');

    // The second user opens the link signed out, signs in through the provider and comes back to it.
    const memberLogin = uid('member');
    const member = await signIn(memberLogin, new URL(inviteUrl).pathname + new URL(inviteUrl).hash);
    await member.waitForURL((u) => u.pathname === '/invite/');
    await member.locator('#app').waitFor({ state: 'visible' });
    assert.match((await member.locator('#offer').textContent())!, /Team shop.*member/);
    assert.equal(await axe(member), [], 'the accept-invitation page');
    await member.locator('#accept').click();
    await member.waitForURL((u) => u.pathname === '/dashboard' && u.searchParams.get('project') === projectId);
    await member.locator('#app').waitFor({ state: 'visible' });
    await member.locator('[data-kpi=totalEvents]', { hasText: '3' }).waitFor();
    const option = await member.locator(`select[name=project] option[value="${projectId}"]`).textContent();
    assert.is(option, 'Team shop (shared, member)');
    assert.equal((await member.locator('#topbar nav a').allTextContents()), ['Dashboard', 'Issues', 'Funnels', 'Alerts', 'Projects']);

    // The member triages the shared project's issue; its page shows who changed the status.
    await member.goto(`${server.url}/issues/?project=${projectId}`);
    await member.locator('[data-issue] .issue-title').click();
    await member.locator('[data-action=resolve]').click();
    await member.locator('.status-history li', { hasText: `${memberLogin}: unresolved → resolved` }).waitFor();

    // The share link, in a context nobody signed in to.
    const visitor = await (await newContext()).newPage();
    await visitor.goto(shareUrl);
    await visitor.waitForFunction(() => document.body.dataset.shared === 'ready');
    assert.is(await visitor.locator('[data-kpi=totalEvents]').textContent(), '3');
    assert.not.match(await visitor.content(), /team-secret-message/, 'no raw events on a shared dashboard');
    assert.equal(await axe(visitor), [], 'the shared dashboard');
    assert.equal(problems.splice(0), []);
  });

  test.run();
}
