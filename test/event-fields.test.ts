// The fields normalise() derives at ingest: environment, UTM parameters, a custom event's name.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { asciiJson, campaignQuery, customEventName, environmentOf, MAX_ENVIRONMENT, MAX_REMEMBERED, rememberedQueries, utmOf, utmOfQuery, wideCampaign } from '../lib/event-fields.ts';
import { normalise } from '../lib/event.ts';
import { pageUrl } from '../lib/sentry/fields.ts';
import { sentryEventToRaw } from '../lib/sentry/map.ts';
import { transactionToRaw } from '../lib/sentry/transaction.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';
import { app } from './helpers/app.ts';
import { tempSqliteStore } from './helpers/stores.ts';
import { canCollect, heapGrowth } from './helpers/heap.ts';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';

const now = Date.parse('2026-05-16T12:00:00.000Z');
const norm = (raw: Record<string, unknown>) => normalise({ type: 'pageload', ...raw } as never, { now, owner: 'u1' });

test('environment: trimmed, case kept, bounded; anything else is none', () => {
  assert.is(environmentOf(' Production '), 'Production');
  assert.is(environmentOf('staging'), 'staging');
  assert.is(environmentOf('e'.repeat(MAX_ENVIRONMENT)), 'e'.repeat(MAX_ENVIRONMENT));
  assert.is(environmentOf('e'.repeat(MAX_ENVIRONMENT + 1)), null, 'too long: dropped, not cut');
  for (const bad of ['', '   ', 'a\nb', 'tab\there', 42, null, undefined, { env: 'x' }, ['prod']]) assert.is(environmentOf(bad), null, String(bad));
  assert.is(norm({ environment: ' prod ' }).environment, 'prod');
  assert.not.ok('environment' in norm({}), 'absent when none');
  assert.not.ok('environment' in norm({ environment: { nested: true } }), 'a client object is not kept as sent');
});

test('utm: values outside ASCII keep every character (the narrow copy utmOfQuery keeps is the same text)', () => {
  // Latin-1, outside it, astral (a surrogate pair), an encoded lone surrogate (not UTF-8: U+FFFD).
  const cases: [string, string][] = [
    ['%C3%A9t%C3%A9+2026', 'été 2026'], ['%E2%82%AC5-off', '€5-off'], ['launch-%F0%9F%9A%80', 'launch-🚀'],
    ['%ED%A0%80x', '\ufffd\ufffd\ufffdx'], ['caf%C3%A9%C3%9F', 'caféß'],
  ];
  for (const [encoded, decoded] of cases) {
    const utm = utmOfQuery(`utm_campaign=${encoded}&utm_source=${encoded}`)!;
    assert.is(utm.campaign, decoded, encoded);
    assert.is(utm.source, decoded, encoded);
    assert.is(JSON.stringify(utm), JSON.stringify({ source: decoded, campaign: decoded }));
  }
});

test('utm: read from the page URL, decoded, lower-cased, bounded; first of duplicates wins', () => {
  assert.equal(utmOf('https://shop.example/?utm_source=Newsletter&utm_medium=E%2DMail&utm_campaign=Spring+Sale&utm_term=shoes&utm_content=hero'), {
    source: 'newsletter', medium: 'e-mail', campaign: 'spring sale', term: 'shoes', content: 'hero',
  });
  assert.equal(utmOf('https://a.example/p?utm_source=first&utm_source=second'), { source: 'first' });
  assert.equal(utmOf('https://a.example/p?utm_source=&utm_medium=cpc'), { medium: 'cpc' }, 'empty values are absent');
  assert.equal(utmOf('https://a.example/p?utm_source=%20%20'), null, 'blank is absent, and none left: null');
  assert.equal(utmOf('https://a.example/p?utm_source'), null);
  assert.equal(utmOf('https://a.example/p?x=1#utm_source=frag'), null, 'the fragment is not the query');
  assert.equal(utmOf('https://a.example/p?utm_source=%E0%A4%A'), { source: '\ufffd%a' }, 'a broken escape decodes as browsers decode it');
  assert.equal(utmOf('https://a.example/p?UTM_SOURCE=x'), null, 'parameter names are exact');
  assert.equal(utmOf('/p?utm_campaign=launch'), { campaign: 'launch' }, 'a path with a query');
  assert.is(utmOf(`https://a.example/?utm_source=${'x'.repeat(500)}`)!.source!.length, 100);
  assert.is(utmOf('https://a.example/no-query-utm_source'), null);
  assert.is(utmOf(null), null);
  const e = norm({ url: 'https://a.example/?utm_source=Google&utm_medium=cpc' });
  assert.equal(e.utm, { source: 'google', medium: 'cpc' });
  assert.is(e.url, 'https://a.example/?utm_source=Google&utm_medium=cpc', 'the URL stays as sent');
  assert.equal(norm({ page_url: '/x?utm_source=a' }).utm, { source: 'a' }, 'page_url when there is no url');
  assert.not.ok('utm' in norm({ url: 'https://a.example/' }));
  assert.not.ok('utm' in norm({ url: 'https://a.example/', utm: { source: 'forged'.repeat(100) } }), "a client's own utm is dropped");
});

test('utm: a query read before gives what reading it gives, in one frozen object shared by its events', () => {
  // utmOf remembers the queries it read; utmOfQuery reads one.
  const piece = fc.oneof(
    fc.constantFrom('utm_source', 'utm_medium', 'utm_campaign', 'utm_term', 'utm_content', 'utm_', 'UTM_source'),
    fc.constantFrom('=', '=', '&', '&', '+', '%', '%2', '%20', '%E0%A4%A', '%C3%A9', '?', '#'),
    fc.constantFrom('A', 'x', ' ', 'é', '\uD800', 'Spring Sale'),
    fc.string({ maxLength: 4 }),
  );
  const query = fc.array(piece, { maxLength: 24 }).map((p) => p.join(''));
  fc.assert(fc.property(query, query, fc.constantFrom('https://a.example/p?', '/q?'), (a, b, page) => {
    for (const q of [a, b, a, b]) {
      const url = page + q;
      const hash = q.indexOf('#');
      const utm = utmOf(url);
      assert.equal(utm, url.includes('utm_') ? utmOfQuery(hash < 0 ? q : q.slice(0, hash)) : null, q);
      // Shared by the events of the query: no caller can change it for the others.
      if (utm) assert.throws(() => (utm.source = 'changed by a caller'));
    }
  }), { numRuns: 2000 });
  // Queries of one length, one after the other, each its own campaign; a fragment is not read.
  const sameLength = ['aa', 'ab', 'ba', 'aa', 'bb', 'ab'];
  for (const v of [...sameLength, ...sameLength]) {
    assert.equal(utmOf(`/p?utm_source=${v}`), { source: v });
    assert.equal(utmOf(`https://a.example/?utm_source=${v}#utm_medium=x`), { source: v });
  }
  const long = `?utm_source=x&pad=${'p'.repeat(400)}`;
  assert.equal([utmOf('/a' + long), utmOf('/b' + long)], [{ source: 'x' }, { source: 'x' }], 'a long query is read each time');
  for (let i = 0; i < 2500; i++) {
    assert.equal(utmOf(`/p?utm_source=s${i}`), { source: `s${i}` }, 'past the remembered count');
    assert.ok(rememberedQueries() <= MAX_REMEMBERED);
  }
  assert.equal(utmOf('/p?utm_source=s0'), { source: 's0' });
});

if (canCollect) {
  test('utm: a remembered query holds nothing of the long URL it was read from', async () => {
    const grown = await heapGrowth(() => {
      for (let i = 0; i < 200; i++) assert.equal(utmOf(`/p?utm_source=s${i}#`.padEnd(250_000, 'x')), { source: `s${i}` });
    });
    // 200 URLs of 250,000 characters would be 50 MB; the queries themselves take a few KB.
    assert.ok(grown < 10_000_000, `heap grew ${grown} bytes`);
  });
}

test('a URL stripped of its query keeps its utm parameters (Sentry pages)', () => {
  assert.is(campaignQuery('https://a.example/p?token=secret&utm_source=x&b=2&utm_campaign=y#f'), '?utm_source=x&utm_campaign=y');
  assert.is(campaignQuery('https://a.example/p?token=secret'), '');
  assert.is(campaignQuery('https://a.example/p#utm_source=x'), '');
  assert.is(pageUrl('https://a.example/p?token=secret&utm_source=x', true), 'https://a.example/p?utm_source=x');
  assert.is(pageUrl('https://a.example/p?token=secret&utm_source=x'), 'https://a.example/p', 'other URLs (breadcrumbs) lose the whole query');
  const raw = sentryEventToRaw({ environment: 'Staging', request: { url: 'https://a.example/p?email=a@b.c&utm_medium=social' }, message: 'boom' });
  assert.is(raw.url, 'https://a.example/p?utm_medium=social');
  const e = normalise(raw, { now, owner: 'u1' });
  assert.is(e.environment, 'Staging', "Sentry's environment, its case kept");
  assert.not.ok('utm' in e, "an error's campaign stays in its URL: only page loads carry utm");
  assert.equal(normalise({ ...raw, type: 'pageload' }, { now, owner: 'u1' }).utm, { medium: 'social' });
  const [load] = transactionToRaw({
    event_id: 'a'.repeat(32), transaction: '/p', environment: 'production', contexts: { trace: { op: 'pageload' } },
    request: { url: 'https://a.example/p?session=s&utm_campaign=Launch' }, start_timestamp: 1, timestamp: 2,
  });
  assert.equal([load.environment, load.url], ['production', 'https://a.example/p?utm_campaign=Launch'], "a transaction's too");
});

test('custom event name: name, else eventName, else data.name; bounded', () => {
  assert.is(customEventName('signup', 'other', { name: 'third' }), 'signup');
  assert.is(customEventName(undefined, 'checkout', { name: 'third' }), 'checkout');
  assert.is(customEventName(42, '  ', { name: ' plan chosen ' }), 'plan chosen');
  assert.is(customEventName(null, undefined, {}), null);
  assert.is(customEventName('n'.repeat(300), null, {})!.length, 100);
  const custom = normalise({ type: 'custom', eventName: 'Signed up', data: { plan: 'pro' } }, { now, owner: 'u1' });
  assert.is(custom.name, 'Signed up');
  assert.is(normalise({ type: 'custom', data: { name: 'x' } }, { now, owner: 'u1' }).name, 'x');
  assert.is(normalise({ type: 'click', name: 'kept as sent' }, { now, owner: 'u1' }).name, 'kept as sent', 'other types: name is any field');
});

test('asciiJson: any text, escaped to ASCII, parses back to the same value; wideCampaign sees only a campaign outside ASCII', () => {
  fc.assert(fc.property(fc.jsonValue(), fc.string({ unit: 'binary' }), (value, text) => {
    for (const v of [value, text, { utm: { campaign: text }, data: value }]) {
      const escaped = asciiJson(JSON.stringify(v));
      assert.ok(/^[\x00-\x7f]*$/.test(escaped), escaped);
      assert.equal(JSON.parse(escaped), JSON.parse(JSON.stringify(v)));
    }
  }), { numRuns: 300 });
  assert.is(asciiJson('{"c":"été 🚀"}'), '{"c":"\\u00e9t\\u00e9 \\ud83d\\ude80"}');
  assert.ok(wideCampaign({ source: 'x', campaign: 'été' }));
  assert.not.ok(wideCampaign({ source: 'x', campaign: 'ete' }));
  for (const none of [undefined, null, 'été', ['été'], { n: 1 }, { campaign: 7 }]) assert.not.ok(wideCampaign(none), String(none));
});

const NON_ASCII = /[^\x00-\x7f]/;

test('ingest: a page load whose campaign is outside ASCII is answered in ASCII, and stored as sent', async () => {
  // A persisted store: its answer carries the stored events.
  const { send, store } = app({ store: await tempSqliteStore() });
  try {
    const events = [
      { type: 'pageload', sessionId: 's1', url: 'https://shop.example/?utm_campaign=%C3%A9t%C3%A9+2026&utm_source=Caf%C3%A9', data: { title: 'Café crème' } },
      { type: 'click', sessionId: 's1', url: 'https://shop.example/', data: { text: 'naïve' } },
    ];
    const res = await send('POST', '/api/events', { body: { events }, headers: { 'x-idp-user-id': 'u1' } });
    assert.is(res.status, 200);
    const text = await res.text();
    const answer = JSON.parse(text) as { events: { id: string; utm?: unknown; data: unknown }[] };
    assert.equal(answer.events[0].utm, { source: 'café', campaign: 'été 2026' });
    assert.equal(answer.events[0].data, { title: 'Café crème' });
    assert.equal(answer.events[1].data, { text: 'naïve' }, 'an event without a campaign is answered as ever');
    const first = text.slice(text.indexOf(answer.events[0].id), text.indexOf(answer.events[1].id));
    assert.not.ok(NON_ASCII.test(first), first);
    const listed = (await (await send('GET', '/api/events?limit=10', { headers: { 'x-idp-user-id': 'u1' } })).json()) as { events: { id: string }[] };
    assert.equal(listed.events.find((e) => e.id === answer.events[0].id), answer.events[0], 'stored as answered');
  } finally {
    await store.close();
  }
});

test('sqlite: such an event\'s journal line is ASCII, and the journal replayed after a crash gives the same event', async () => {
  const dir = mkdtempSync(tmpdir() + '/watchtower-ascii-');
  const path = dir + '/live/w.sqlite';
  const closers: (() => Promise<void>)[] = [];
  try {
    mkdirSync(dir + '/live');
    const store = await openSqliteStore({ path, retentionDays: 0 });
    closers.push(() => store.close());
    const e = norm({ url: 'https://shop.example/?utm_campaign=%C3%A9t%C3%A9', sessionId: 's1', data: { title: 'Café' } });
    await store.insert([e]);
    const journal = readdirSync(dir + '/live').filter((f) => f.startsWith('w.sqlite.journal.')).map((f) => readFileSync(`${dir}/live/${f}`, 'utf8')).join('');
    const line = journal.split('\n').find((l) => l.includes(e.id));
    assert.ok(line, 'the event is in the journal');
    assert.not.ok(NON_ASCII.test(line!), line);
    // The files as a kill -9 now would leave them: the database has not taken the event in yet.
    cpSync(dir + '/live', dir + '/crashed', { recursive: true });
    const again = await openSqliteStore({ path: dir + '/crashed/w.sqlite', retentionDays: 0 });
    closers.push(() => again.close());
    const [back] = (await again.list({ userId: 'u1', limit: 5 })).events;
    assert.equal(back, JSON.parse(JSON.stringify(e)));
    assert.equal(back.utm, { campaign: 'été' });
  } finally {
    for (const close of closers) await close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
