// Countries of client addresses (lib/geo.ts), looked up in the database the npm package ships.
// The expected countries are what that database (RIR allocations, NRO data, CC BY 4.0) says of
// well-known public resolvers, read from it once by hand: an update of the package that moves one
// of them fails here, to be checked rather than guessed.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { countriesHeld, countryLookup, countryOfAddress, publicAddress, RECENT_CAP } from '../lib/geo.ts';
import { app } from './helpers/app.ts';

const KNOWN: [string, string][] = [
  // North America
  ['8.8.8.8', 'US'], ['9.9.9.9', 'US'], ['2001:4860:4860::8888', 'US'], ['2606:4700:4700::1111', 'US'], ['2620:fe::fe', 'US'],
  // Europe
  ['77.88.8.8', 'RU'], ['2a02:6b8::feed:0ff', 'RU'], ['84.200.69.80', 'DE'], ['80.80.80.80', 'NL'], ['194.242.2.2', 'NL'],
  // Asia
  ['180.76.76.76', 'CN'], ['223.5.5.5', 'CN'], ['2400:3200::1', 'CN'], ['168.126.63.1', 'KR'], ['101.101.101.101', 'TW'],
  // Oceania: 1.1.1.1 is Cloudflare's, but APNIC holds the block and registers it in Australia.
  ['1.1.1.1', 'AU'], ['139.130.4.5', 'AU'],
  // South America, Africa
  ['200.221.11.100', 'BR'], ['196.216.2.1', 'ZA'],
];

test('well-known public resolvers, IPv4 and IPv6, map to their countries', async () => {
  const countryOf = await countryLookup();
  for (const [address, country] of KNOWN) assert.is(countryOf(address), country, address);
  // Again, now that their records were decoded once (the lookup keeps them).
  for (const [address, country] of [...KNOWN].reverse()) assert.is(countryOf(address), country, `${address} again`);
  assert.is(countryOf('::ffff:8.8.8.8'), 'US', 'IPv4 mapped into IPv6, as a dual-stack socket reports it');
  assert.is(countryOf('[2001:4860:4860::8888]:443'), 'US', 'bracketed, with a port');
  assert.is(countryOf('84.200.69.80:51000'), 'DE', 'with a port');
});

test('private, loopback, link-local, reserved and malformed addresses have no country', async () => {
  const countryOf = await countryLookup();
  for (const address of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.1.1', '100.64.0.1', '0.0.0.0',
    '192.0.2.1', '198.51.100.7', '203.0.113.9', '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1%eth0', 'fd12:3456::1', 'fc00::1',
    'ff02::1', '2001:db8::1', '::ffff:10.0.0.1', 'unknown', '', '999.1.1.1', 'example.com', '1.2.3', 'x'.repeat(100)]) {
    assert.is(countryOf(address), null, address);
    assert.is(publicAddress(address), null, address);
  }
  assert.is(publicAddress('172.32.0.1'), '172.32.0.1', 'just past the private block');
  assert.is(await countryOfAddress('127.0.0.1'), null);
});

test('ingest stores the country of the client address, never the address', async () => {
  const lines: string[] = [];
  const now = Date.parse('2026-05-16T12:00:00.000Z');
  const { handler, send, as } = app({ trustProxy: true, now: () => now, log: (m) => lines.push(m) });
  const post = (forwarded: string, socket: string, type: string) =>
    handler(new Request('http://x/api/events', {
      method: 'POST', body: JSON.stringify({ type, userId: 'u1', url: 'https://a.example/' }),
      headers: { 'content-type': 'application/json', 'x-forwarded-for': forwarded },
    }), { remoteAddr: { hostname: socket } });
  const answer = await (await post('84.200.69.80, 10.0.0.1', '10.0.0.1', 'pageload')).text();
  await post('2400:3200::1', '10.0.0.1', 'click');
  await post('192.168.7.7', '10.0.0.1', 'error');
  const events = (await (await send('GET', '/api/events?limit=10', { headers: as('u1') })).json()).events;
  const byType = Object.fromEntries(events.map((e: { type: string; client: { country: unknown } }) => [e.type, e.client.country]));
  assert.equal(byType, { pageload: 'DE', click: 'CN', error: null });
  const exported = await (await send('GET', '/api/events/export', { headers: as('u1') })).text();
  for (const text of [answer, JSON.stringify(events), exported, lines.join('\n')]) {
    for (const address of ['84.200.69.80', '2400:3200::1', '192.168.7.7', '10.0.0.1']) assert.not.ok(text.includes(address), address);
  }
});

test('the socket address counts unless the proxy is trusted; geo off finds no country', async () => {
  const post = (h: (r: Request, i?: { remoteAddr: { hostname: string } }) => Promise<Response>) =>
    h(new Request('http://x/api/events', {
      method: 'POST', body: JSON.stringify({ type: 'x', userId: 'u1' }), headers: { 'content-type': 'application/json', 'x-forwarded-for': '8.8.8.8' },
    }), { remoteAddr: { hostname: '84.200.69.80' } });
  const country = async (deps: Parameters<typeof app>[0]) => {
    const a = app(deps);
    await post(a.handler);
    return (await (await a.send('GET', '/api/events?limit=1', { headers: a.as('u1') })).json()).events[0].client.country;
  };
  assert.is(await country({}), 'DE', 'X-Forwarded-For is not trusted by default');
  assert.is(await country({ trustProxy: true }), 'US');
  assert.is(await country({ trustProxy: true, geo: false }), null);
});

test('countryOfAddress remembers the addresses it looked up lately, bounded, and answers as the lookup does', async () => {
  const countryOf = await countryLookup();
  for (let round = 0; round < 2; round++) {
    for (const [address, country] of KNOWN) assert.is(await countryOfAddress(address), country, `${address}, round ${round}`);
  }
  assert.is(await countryOfAddress('10.1.2.3'), null);
  // Past the bound: every answer still the lookup's, and never more held than RECENT_CAP.
  for (let i = 0; i < RECENT_CAP + 2000; i++) {
    const address = `${8 + (i % 3)}.${(i >> 8) & 255}.${i & 255}.${i % 7}`;
    if (i % 997 === 0) assert.is(await countryOfAddress(address), countryOf(address), address);
    else await countryOfAddress(address);
    assert.ok(countriesHeld() <= RECENT_CAP);
  }
  // A padded address is looked up as trimmed, and not held under its padded form.
  const held = countriesHeld();
  assert.is(await countryOfAddress(' '.repeat(100) + '84.200.69.80'), 'DE');
  assert.is(countriesHeld(), held);
});

test.run();
