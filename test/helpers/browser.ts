// Headless Chromium for the browser suites: where it is, whether a suite runs, and how it starts.
import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';

export const CHROMIUM = process.env.WATCHTOWER_CHROMIUM || '/usr/bin/chromium';

/**
 * Whether a browser suite runs: Chromium is there, or CI requires it (WATCHTOWER_REQUIRE_BROWSER=1,
 * and a missing browser then fails the suite instead of skipping it).
 */
export function browserSuiteRuns(suite: string): boolean {
  if (existsSync(CHROMIUM) || process.env.WATCHTOWER_REQUIRE_BROWSER === '1') return true;
  console.log(`${suite} not run: no Chromium at ${CHROMIUM} (set WATCHTOWER_CHROMIUM to its path; CI sets WATCHTOWER_REQUIRE_BROWSER=1 to make this a failure).`);
  return false;
}

/** Headless, without a sandbox (root) and without the background traffic a closed network refuses. */
export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--headless', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
    timeout: 30_000,
  });
}
