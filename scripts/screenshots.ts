// `npm run screenshots`: the README's pictures of the dashboard (docs/dashboard.png, light;
// docs/dashboard-dark.png; docs/dashboard-phone.png, 375 px wide; docs/dashboard-breakdowns.png, the
// breakdown tables and web vitals further down), taken in headless Chromium from
// the preview's sample events (/dashboard-demo/, last 30 days), so they show what a visitor sees.
import { createHandler } from '../lib/handler.ts';
import { nodeFiles } from '../lib/adapter/node.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import { launchChromium } from '../test/helpers/browser.ts';
import { buildPages, serveHandler } from '../test/helpers/pages.ts';
import { ROOT } from '../test/helpers/server.ts';

const SHOTS = [
  { file: 'docs/dashboard.png', colorScheme: 'light', viewport: { width: 1280, height: 1000 }, scale: 1 },
  { file: 'docs/dashboard-dark.png', colorScheme: 'dark', viewport: { width: 1280, height: 1000 }, scale: 1 },
  { file: 'docs/dashboard-phone.png', colorScheme: 'light', viewport: { width: 375, height: 812 }, scale: 2 },
  { file: 'docs/dashboard-breakdowns.png', colorScheme: 'light', viewport: { width: 1280, height: 1000 }, scale: 1, scrollTo: '.panel-breakdown' },
] as const;

buildPages();
const server = await serveHandler(createHandler({ store: createMemoryStore(), files: nodeFiles, log: () => {} }));
const browser = await launchChromium();
try {
  for (const shot of SHOTS) {
    const ctx = await browser.newContext({ viewport: shot.viewport, deviceScaleFactor: shot.scale, colorScheme: shot.colorScheme });
    const page = await ctx.newPage();
    await page.goto(`${server.url}/dashboard-demo/?range=30d`);
    await page.locator('.grid[aria-busy=false]').waitFor();
    await page.locator('.panel-activity canvas').waitFor();
    if ('scrollTo' in shot) await page.locator(shot.scrollTo).first().evaluate((el) => el.scrollIntoView({ block: 'start' }));
    await page.screenshot({ path: ROOT + shot.file });
    console.log(`wrote ${shot.file}`);
    await ctx.close();
  }
} finally {
  await browser.close();
  await server.close();
}
