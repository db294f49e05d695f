// Seeded property test: the tag distributions, affected users and sessions (in all and per day) that
// issues keep equal what is counted directly from the raw error events, including when grouping
// fails to write a slice mid-way (as a crash between grouping and its write would) and a new
// processor takes over from the stored progress.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type StoredEvent } from '../lib/event.ts';
import { IssueProcessor } from '../lib/issues/processor.ts';
import { RecordIssueStore } from '../lib/issues/records.ts';
import { EXACT_SESSIONS } from '../lib/issues/sessions.ts';
import { type Issue, publicIssue } from '../lib/issues/state.ts';
import { addTags, publicTags, TAG_NAMES, TAG_VALUES, type IssueTags } from '../lib/issues/tags.ts';
import { createMemoryRecords } from '../lib/records/memory.ts';
import type { RecordStore, StoredRecord } from '../lib/records/types.ts';
import { createMemoryStore } from '../lib/store/memory.ts';

const T0 = Date.parse('2026-05-14T09:00:00.000Z');
const BUGS = ['TypeError: cart is undefined', 'RangeError: quantity out of range', 'SyntaxError: bad coupon code', 'Error: payment declined'];
const FNS = ['addToCart', 'setQuantity', 'applyCoupon', 'pay'];

function random(seed: number) {
  let s = seed;
  const next = () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
  return { next, pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)], int: (n: number) => Math.floor(next() * n) };
}

/** Errors of the 4 bugs over 4 days, oldest first; bug 3 has more sessions than a day counts exactly. */
function makeEvents(seed: number, total: number): { bug: number; event: StoredEvent }[] {
  const r = random(seed);
  const out: { bug: number; event: StoredEvent }[] = [];
  for (let i = 0; i < total; i++) {
    const bug = r.int(BUGS.length);
    const at = T0 + Math.floor((i / total) * 4 * 86_400_000);
    const sessions = bug === 3 ? 600 : 40;
    const raw: Record<string, unknown> = {
      type: 'error',
      message: BUGS[bug],
      data: { stack: `${BUGS[bug]}\n    at ${FNS[bug]} (https://shop.example/app.js:1:1)` },
      sessionId: r.next() < 0.9 ? `s-${bug}-${r.int(sessions)}` : undefined,
      deployVersion: r.pick(['1.0.0', '1.1.0', '2.0.0', undefined]),
      // Pages: more than a tag counts, so that later ones land in `other`.
      route: r.next() < 0.8 ? `/page-${r.int(30)}` : undefined,
      environment: r.pick(['production', 'staging', 'production', undefined, 7, '', 'x'.repeat(65)]),
    };
    const user = r.pick(['ada', 'bob', 'cy', 'dee', 'eve', '', undefined, 42, `u-${r.int(30)}`]);
    if (user !== undefined) raw.userId = user;
    const event = normalise(raw as { type: string }, { now: at, owner: 'owner-1', newId: () => `e${seed}-${i}` });
    event.client = {
      browser: r.pick(['Chrome', 'Firefox', 'Safari', null]),
      os: r.pick(['Windows', 'macOS', 'Linux', 'Android', null]),
      device: r.pick(['desktop', 'mobile', null]),
      ...(r.next() < 0.7 ? { country: r.pick(['DE', 'FR', 'US', 'BR']) } : {}),
    } as StoredEvent['client'];
    out.push({ bug, event });
  }
  return out;
}

/** The reference, straight from the events: each tag's TAG_VALUES places, the least counted value giving its place to a new one. */
function expected(events: readonly StoredEvent[]) {
  const value: Record<string, (e: StoredEvent) => unknown> = {
    browser: (e) => e.client?.browser,
    os: (e) => e.client?.os,
    device: (e) => e.client?.device,
    release: (e) => e.deployVersion,
    environment: (e) => (typeof e.environment === 'string' && e.environment.length <= 64 ? e.environment : null),
    page: (e) => e.route,
    country: (e) => (e.client as { country?: string } | undefined)?.country,
  };
  const tags: Record<string, { values: Map<string, number>; other: number }> = {};
  for (const name of TAG_NAMES) {
    const t = (tags[name] = { values: new Map<string, number>(), other: 0 });
    for (const e of events) {
      const v = value[name](e);
      if (typeof v !== 'string' || v === '') continue;
      if (t.values.has(v)) t.values.set(v, t.values.get(v)! + 1);
      else {
        // Full: the least counted value (the earliest placed among equals) gives its place.
        if (t.values.size >= TAG_VALUES) {
          const [least, n] = [...t.values].reduce((a, b) => (b[1] < a[1] ? b : a));
          t.other += n;
          t.values.delete(least);
        }
        t.values.set(v, 1);
      }
    }
  }
  const distinct = (es: readonly StoredEvent[], of: (e: StoredEvent) => unknown) =>
    new Set(es.map(of).filter((v) => typeof v === 'string' && v !== '')).size;
  const days = [...new Set(events.map((e) => e.receivedAt.slice(0, 10)))].sort();
  const onDay = (d: string) => events.filter((e) => e.receivedAt.startsWith(d));
  return {
    count: events.length,
    tags,
    users: distinct(events, (e) => e.userId),
    sessions: distinct(events, (e) => e.sessionId),
    dailySessions: days.map((d) => [d, distinct(onDay(d), (e) => e.sessionId)]),
    dailyUsers: days.map((d) => [d, distinct(onDay(d), (e) => e.userId)]),
  };
}

/** A count as kept: exact up to EXACT_SESSIONS, else within 15% (the day sketches are the small ones). */
function near(actual: number, want: number, what: string): void {
  if (want <= EXACT_SESSIONS) assert.is(actual, want, what);
  else assert.ok(Math.abs(actual - want) <= want * 0.15 && actual > EXACT_SESSIONS, `${what}: ${actual} for ${want}`);
}

function check(issues: Issue[], made: { bug: number; event: StoredEvent }[], seed: number): void {
  assert.is(issues.length, BUGS.length, `seed ${seed}`);
  for (let bug = 0; bug < BUGS.length; bug++) {
    const issue = issues.find((i) => i.title === BUGS[bug])!;
    assert.ok(issue, BUGS[bug]);
    const want = expected(made.filter((m) => m.bug === bug).map((m) => m.event));
    const shown = publicIssue(issue);
    const what = `seed ${seed}, ${BUGS[bug]}`;
    assert.is(shown.count, want.count, what);
    for (const name of TAG_NAMES) {
      const tag = shown.tags[name];
      assert.equal(new Map(tag.values.map((v) => [v.value, v.count])), want.tags[name].values, `${what}: ${name}`);
      assert.is(tag.other, want.tags[name].other, `${what}: ${name} other`);
      assert.is(tag.truncated, want.tags[name].other > 0);
      assert.ok(tag.values.every((v, i) => i === 0 || tag.values[i - 1].count >= v.count), 'by count');
    }
    near(shown.users.count, want.users, `${what}: users`);
    near(shown.sessions.count, want.sessions, `${what}: sessions`);
    assert.is(shown.sessions.exact, want.sessions <= EXACT_SESSIONS);
    assert.equal(shown.dailySessions.map(([d]) => d), want.dailySessions.map(([d]) => d));
    shown.dailySessions.forEach(([d, n], i) => near(n, want.dailySessions[i][1] as number, `${what}: sessions on ${d}`));
    shown.dailyUsers.forEach(([d, n], i) => near(n, want.dailyUsers[i][1] as number, `${what}: users on ${d}`));
  }
}

/** A processor over `records` and `source`, grouping the slices it can. */
const processorOn = (records: RecordStore, source: ReturnType<typeof createMemoryStore>) =>
  new IssueProcessor({ issues: new RecordIssueStore(records), records, source, onError: () => {} });

for (const seed of [1, 7, 42]) {
  test(`seed ${seed}: tag distributions, users and sessions equal the counts of the raw events`, async () => {
    const made = makeEvents(seed, 3000);
    const records = createMemoryRecords();
    const source = createMemoryStore({ capacity: 100_000 });
    await processorOn(records, source).drain();
    for (let i = 0; i < made.length; i += 250) await source.insert(made.slice(i, i + 250).map((m) => m.event));
    await processorOn(records, source).drain();
    check(await new RecordIssueStore(records).listIssues('owner-1', T0 + 5 * 86_400_000), made, seed);
  });
}

for (const seed of [3, 11]) {
  test(`seed ${seed}: late events of older days (stored after newer days were grouped) count in those days' distinct sessions and users`, async () => {
    const made = makeEvents(seed, 3000);
    // Batches in a shuffled order: each day's events keep coming after later days closed it.
    const batches: typeof made[] = [];
    for (let i = 0; i < made.length; i += 100) batches.push(made.slice(i, i + 100));
    const r = random(seed);
    for (let i = batches.length - 1; i > 0; i--) {
      const j = r.int(i + 1);
      [batches[i], batches[j]] = [batches[j], batches[i]];
    }
    const records = createMemoryRecords();
    const source = createMemoryStore({ capacity: 100_000 });
    await processorOn(records, source).drain();
    for (const batch of batches) {
      await source.insert(batch.map((m) => m.event));
      // Grouped batch by batch, as they come; every other time by a new processor (a restart).
      await processorOn(records, source).drain();
    }
    // In the order grouped: which tag value gives its place depends on it.
    check(await new RecordIssueStore(records).listIssues('owner-1', T0 + 5 * 86_400_000), batches.flat(), seed);
  });
}

test('a write that fails mid-way, then a new processor from the stored progress: the same distributions, each event counted once', async () => {
  const made = makeEvents(99, 4000);
  const records = createMemoryRecords();
  // The third slice's write fails: nothing of it is stored, as when the process dies before the put.
  let puts = 0;
  const failing: RecordStore = Object.assign(Object.create(records), {
    put: async (rs: StoredRecord[]) => {
      if (++puts === 3) throw new Error('the process died here');
      return records.put(rs);
    },
  });
  const source = createMemoryStore({ capacity: 100_000 });
  await processorOn(failing, source).drain();
  for (let i = 0; i < made.length; i += 500) await source.insert(made.slice(i, i + 500).map((m) => m.event));
  const first = processorOn(failing, source);
  await first.drain();
  assert.ok(puts >= 3, `writes: ${puts}`);
  const partial = await new RecordIssueStore(records).listIssues('owner-1', T0 + 5 * 86_400_000);
  assert.ok(partial.reduce((s, i) => s + i.count, 0) < made.length, 'the failed slice is not counted');
  // The process is gone; a new one starts from what is stored.
  await processorOn(records, source).drain();
  check(await new RecordIssueStore(records).listIssues('owner-1', T0 + 5 * 86_400_000), made, 99);
});

test('a release that keeps coming takes a place from the least counted one once every place is taken (hand-checked)', () => {
  const tags: IssueTags = {};
  // TAG_VALUES old releases, release r0 with 5 events and the others with 2 each.
  for (let i = 0; i < TAG_VALUES; i++) for (let n = 0; n < (i === 0 ? 5 : 2); n++) addTags(tags, { release: `r${i}` });
  // The new release: its first event takes r1's place (the earliest placed of the least counted).
  for (let n = 0; n < 4; n++) addTags(tags, { release: 'new' });
  const release = publicTags(tags).release;
  assert.equal(release.values.slice(0, 2), [{ value: 'r0', count: 5 }, { value: 'new', count: 4 }]);
  assert.is(release.values.length, TAG_VALUES);
  assert.not.ok(release.values.some((v) => v.value === 'r1'));
  assert.equal([release.other, release.truncated, release.total], [2, true, 5 + 2 * (TAG_VALUES - 1) + 4]);
});

test.run();
