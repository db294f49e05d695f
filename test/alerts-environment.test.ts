// Alert rules that watch one environment: errors grouped by the real processor reach the real
// engine with the environment of the event behind each transition; a rule with an environment hears
// an issue's first event there and its regressions there, and counts only that environment's
// errors and page loads for spikes and slow routes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { AlertEngine } from '../lib/alerts/engine.ts';
import { dashboardLinks } from '../lib/alerts/message.ts';
import { RecentMetrics } from '../lib/alerts/recent.ts';
import { type AlertRule, COOLDOWN_MS, parseAlertRule, patchAlertRule, publicRule } from '../lib/alerts/rules.ts';
import { HttpError } from '../lib/http.ts';
import { IssueProcessor } from '../lib/issues/processor.ts';
import { RecordIssueStore } from '../lib/issues/records.ts';
import { setStatus } from '../lib/issues/state.ts';
import { createMemoryRecords } from '../lib/records/memory.ts';
import { createMemoryStore } from '../lib/store/memory.ts';

const T0 = Date.parse('2026-05-16T12:00:00.000Z');
const rule = (id: string, over: Partial<AlertRule>): AlertRule => ({
  id, userId: 'u1', project: null, kind: 'new_issue', threshold: null, route: null, cooldownMs: 60_000,
  webhook: null, email: ['dev@example.com'], enabled: true, createdAt: new Date(T0).toISOString(), ...over,
});

test('parseAlertRule: an environment of 1–64 characters, kept by a patch, cleared with null, shown', () => {
  const ctx = { userId: 'u1', id: 'r1', now: T0 };
  const r = parseAlertRule({ on: 'error_spike', threshold: 5, environment: 'production', email: 'dev@example.com' }, ctx);
  assert.is(r.environment, 'production');
  assert.is(publicRule(r).environment, 'production');
  assert.is(patchAlertRule(r, { threshold: 9 }).environment, 'production');
  assert.is(patchAlertRule(r, { environment: null }).environment, null);
  assert.is(parseAlertRule({ on: 'new_issue', email: 'dev@example.com' }, ctx).environment, null);
  for (const environment of ['', 'x'.repeat(65), 7, ['production']]) {
    try {
      parseAlertRule({ on: 'new_issue', email: 'dev@example.com', environment }, ctx);
      assert.unreachable(JSON.stringify(environment));
    } catch (e) {
      assert.instance(e, HttpError);
      assert.match((e as Error).message, /"environment"/);
    }
  }
});

test('new_issue and regression rules with an environment hear the events of that environment only', async () => {
  const clock = { now: T0 };
  const rules = [
    rule('all', {}),
    rule('production', { environment: 'production' }),
    rule('staging', { environment: 'staging' }),
    rule('regression-all', { kind: 'regression' }),
    rule('regression-production', { kind: 'regression', environment: 'production' }),
  ];
  const engine = new AlertEngine({ rules: () => rules, links: dashboardLinks('http://watchtower.test'), now: () => clock.now });
  const records = createMemoryRecords();
  const issues = new RecordIssueStore(records);
  const events = createMemoryStore();
  const processor = new IssueProcessor({ issues, records, source: events, onTransition: (c) => engine.push(c) });
  await processor.drain();
  let n = 0;
  const error = async (environment: unknown) => {
    clock.now += COOLDOWN_MS;
    const raw = { type: 'error', message: 'TypeError: cart is undefined', ...(environment === undefined ? {} : { environment }) } as RawEvent;
    await events.insert([normalise(raw, { now: clock.now, owner: 'u1', newId: () => `e${++n}` })]);
    await processor.drain();
    return (await engine.tick()).map((x) => x.ruleId).sort();
  };
  const resolve = async () => {
    const [issue] = await issues.listIssues('u1', clock.now);
    await issues.putIssue(setStatus(issue, { status: 'resolved' }, clock.now));
  };

  assert.equal(await error('staging'), ['all', 'staging'], 'the new issue, first seen in staging');
  assert.equal(await error('staging'), []);
  assert.equal(await error('production'), ['production'], 'its first event in production');
  assert.equal(await error('production'), []);
  assert.equal(await error(undefined), []);
  assert.equal(await error(12), [], 'a number is no environment');
  await resolve();
  assert.equal(await error('staging'), ['regression-all'], 'a regression in staging');
  await resolve();
  assert.equal(await error('production'), ['regression-all', 'regression-production']);
});

test('error_spike and slow_route rules with an environment count that environment\'s events only', async () => {
  const metrics = new RecentMetrics();
  const rules = [
    rule('spike-production', { kind: 'error_spike', threshold: 5, environment: 'production' }),
    rule('spike-staging', { kind: 'error_spike', threshold: 5, environment: 'staging' }),
    rule('spike-all', { kind: 'error_spike', threshold: 5 }),
    rule('slow-production', { kind: 'slow_route', threshold: 1000, environment: 'production' }),
    rule('slow-staging', { kind: 'slow_route', threshold: 1000, environment: 'staging' }),
  ];
  const engine = new AlertEngine({ rules: () => rules, links: dashboardLinks('http://watchtower.test'), metrics, now: () => T0 });
  let n = 0;
  const ev = (raw: Record<string, unknown>): StoredEvent => normalise(raw as RawEvent, { now: T0 - 1000, owner: 'u1', newId: () => `m${++n}` });
  for (let i = 0; i < 4; i++) metrics.record(ev({ type: 'error', environment: 'staging' }));
  for (let i = 0; i < 3; i++) metrics.record(ev({ type: 'error', environment: 'production' }));
  for (let i = 0; i < 6; i++) metrics.record(ev({ type: 'pageload', route: '/cart', environment: 'staging', data: { duration: 3000 } }));
  for (let i = 0; i < 6; i++) metrics.record(ev({ type: 'pageload', route: '/cart', environment: 'production', data: { duration: 200 } }));
  assert.equal(metrics.errorCounts('u1', null, T0, 'production'), { last5Minutes: 3, previousHour: 0 });
  assert.equal(metrics.errorCounts('u1', null, T0), { last5Minutes: 7, previousHour: 0 });
  assert.equal(metrics.routeDurations('u1', null, T0, 'staging'), { '/cart': [3000, 3000, 3000, 3000, 3000, 3000] });
  const fired = (await engine.checkMetrics()).map((x) => x.ruleId).sort();
  assert.equal(fired, ['slow-staging', 'spike-all']);
});

test.run();
