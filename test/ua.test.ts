// User-agent parsing (lib/client-info.ts) and bot detection (lib/bots.ts), checked against the real
// user-agent strings of fixtures/user-agents.json.
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isBotAgent, MAX_USER_AGENT } from '../lib/bots.ts';
import { clientInfo, clientInfoCacheSize, CLIENT_INFO_CACHE_SIZE, parseClientInfo, type ClientInfo } from '../lib/client-info.ts';

interface Agent { name: string; ua: string; bot: boolean; expected: ClientInfo }
const { agents } = JSON.parse(readFileSync(new URL('../fixtures/user-agents.json', import.meta.url), 'utf8')) as { agents: Agent[] };

const CHROME = agents.find((a) => a.name.startsWith('Chrome 131 on Windows'))!.ua;

test('fixture: covers desktop, mobile, tablet, TV and bots', () => {
  const devices = new Set(agents.map((a) => a.expected.device));
  for (const d of ['desktop', 'mobile', 'tablet', 'tv', 'bot']) assert.ok(devices.has(d as ClientInfo['device']), d);
  const names = agents.map((a) => a.name).join('\n');
  for (const n of ['Googlebot', 'bingbot', 'curl', 'python-requests', 'Go-http-client', 'Headless Chrome', 'UptimeRobot', 'iPad']) assert.ok(names.includes(n) || agents.some((a) => a.ua.includes(n)), n);
});

test('fixture: every user agent parses as expected, fields in one order', () => {
  const wrong = agents
    .map((a) => ({ name: a.name, expected: JSON.stringify(a.expected), got: JSON.stringify(parseClientInfo(a.ua)) }))
    .filter((r) => r.got !== r.expected);
  assert.equal(wrong, []);
});

test('fixture: isBotAgent names exactly the bots, and they are the ones stored as device "bot"', () => {
  const wrong = agents.filter((a) => isBotAgent(a.ua) !== a.bot).map((a) => a.name);
  assert.equal(wrong, []);
  for (const a of agents) assert.is(a.expected.device === 'bot', a.bot, a.name);
});

test('isBotAgent: no user agent is not a bot', () => {
  assert.is(isBotAgent(null), false);
  assert.is(isBotAgent(undefined), false);
  assert.is(isBotAgent(''), false);
});

test('clientInfo: no user agent, all fields null', () => {
  for (const ua of [null, undefined, '', '   ']) assert.equal(clientInfo(ua), { browser: null, os: null, device: null }, String(ua));
});

test('clientInfo: the cached result is the parse, frozen and shared', () => {
  const a = clientInfo(CHROME);
  assert.equal(a, parseClientInfo(CHROME));
  assert.ok(Object.isFrozen(a));
  assert.ok(clientInfo(CHROME) === a, 'the second request with this user agent gets the cached object');
});

test('clientInfo: a huge user agent is read up to MAX_USER_AGENT characters', () => {
  const long = CHROME + ' ' + 'x'.repeat(100_000);
  assert.equal(clientInfo(long), { browser: 'Chrome', browserVersion: '131', os: 'Windows', device: 'desktop' });
  assert.ok(clientInfo(long + 'another tail') === clientInfo(long), 'one cache entry for both: the key is cut too');
  assert.is(isBotAgent('Mozilla/5.0 (compatible; Googlebot/2.1)' + ' '.repeat(MAX_USER_AGENT) + 'padding'), true);
});

test('clientInfo: the cache stays bounded and evicts the least recently used', () => {
  const hot = CHROME + ' Hot/1';
  const cold = CHROME + ' Cold/1';
  const coldInfo = clientInfo(cold);
  const hotInfo = clientInfo(hot);
  for (let i = 0; i < CLIENT_INFO_CACHE_SIZE + 200; i++) {
    clientInfo(`${CHROME} Unique/${i}`);
    if (i % 100 === 0) clientInfo(hot);
  }
  assert.is(clientInfoCacheSize(), CLIENT_INFO_CACHE_SIZE);
  assert.ok(clientInfo(hot) === hotInfo, 'a user agent in use stays cached');
  assert.ok(clientInfo(cold) !== coldInfo, 'one not seen since was evicted (parsed again)');
  assert.equal(clientInfo(cold), coldInfo);
});

test('clientInfo: a browser bowser does not know is null, never text taken from the header', () => {
  assert.equal(parseClientInfo('MyCustomShell/3.1 (X11; Linux x86_64) like nothing else'), { browser: null, os: 'Linux', device: 'desktop' });
  const info = parseClientInfo('Mozilla/5.0Mozilla/5.0 Evil name with spaces/1.0 (Mobile)');
  assert.is(info.browser, null);
});

test('clientInfo: any header value gives a valid answer, never an exception', () => {
  const devices = [null, 'desktop', 'mobile', 'tablet', 'tv', 'bot'];
  const check = (ua: string) => {
    const info = parseClientInfo(ua);
    assert.ok(devices.includes(info.device), ua);
    assert.ok(info.browser === null || /^[A-Za-z][\w .-]{0,40}$/.test(info.browser), ua);
    assert.ok(info.browserVersion === undefined || /^\d+$/.test(info.browserVersion), ua);
    assert.ok(info.os === null || typeof info.os === 'string', ua);
  };
  fc.assert(fc.property(fc.string({ maxLength: 700 }), check), { numRuns: 300 });
  // Fragments of real agents, recombined.
  const parts = agents.flatMap((a) => a.ua.split(/(?=[ ;()])/));
  fc.assert(fc.property(fc.array(fc.constantFrom(...parts), { maxLength: 30 }), (p) => check(p.join(''))), { numRuns: 300 });
});

test.run();
