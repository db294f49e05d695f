// The webhook destination check (lib/alerts/destination.ts) alone: the address classifier at the
// edges of every range, the spellings a URL parser turns into one address, and the check of a host
// name on what a resolver answers. Addresses here are strings to classify; nothing connects.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type AddressClass, checkDestination, checkLiteralHost, classifyAddress, type DestinationPolicy, parseIPv6 } from '../lib/alerts/destination.ts';
import { resolveHost } from '../lib/adapter/resolve.ts';
import { REFUSED_SPELLINGS } from './helpers/destinations.ts';

const TABLE: [string, AddressClass | null][] = [
  // IPv4: each range with the addresses on both sides of its edges.
  ['0.0.0.0', 'unspecified'], ['0.255.255.255', 'unspecified'], ['1.0.0.0', 'public'],
  ['9.255.255.255', 'public'], ['10.0.0.0', 'private'], ['10.255.255.255', 'private'], ['11.0.0.0', 'public'],
  ['100.63.255.255', 'public'], ['100.64.0.0', 'shared'], ['100.127.255.255', 'shared'], ['100.128.0.0', 'public'],
  ['126.255.255.255', 'public'], ['127.0.0.0', 'loopback'], ['127.0.0.1', 'loopback'], ['127.255.255.255', 'loopback'], ['128.0.0.0', 'public'],
  ['169.253.255.255', 'public'], ['169.254.0.0', 'link-local'], ['169.254.169.254', 'link-local'], ['169.254.255.255', 'link-local'], ['169.255.0.0', 'public'],
  ['172.15.255.255', 'public'], ['172.16.0.0', 'private'], ['172.31.255.255', 'private'], ['172.32.0.0', 'public'],
  ['192.167.255.255', 'public'], ['192.168.0.0', 'private'], ['192.168.255.255', 'private'], ['192.169.0.0', 'public'],
  ['223.255.255.255', 'public'], ['224.0.0.0', 'multicast'], ['239.255.255.255', 'multicast'],
  ['240.0.0.0', 'reserved'], ['255.255.255.254', 'reserved'], ['255.255.255.255', 'broadcast'],
  ['192.0.2.1', 'public'], ['198.51.100.7', 'public'], ['203.0.113.9', 'public'], ['1.1.1.1', 'public'],
  // IPv6.
  ['::', 'unspecified'], ['0:0:0:0:0:0:0:0', 'unspecified'], ['::1', 'loopback'], ['0:0:0:0:0:0:0:1', 'loopback'], ['[::1]', 'loopback'],
  ['::ffff:127.0.0.1', 'loopback'], ['::ffff:7f00:1', 'loopback'], ['[::ffff:7f00:1]', 'loopback'], ['0:0:0:0:0:ffff:7f00:0001', 'loopback'],
  ['::FFFF:10.0.0.1', 'private'], ['::ffff:a9fe:a9fe', 'link-local'], ['::ffff:0.0.0.0', 'unspecified'], ['::ffff:203.0.113.9', 'public'],
  ['::ffff:0:127.0.0.1', 'loopback'], ['::ffff:0:c0a8:1', 'private'], ['::ffff:0:203.0.113.9', 'public'],
  ['::127.0.0.1', 'loopback'], ['::7f00:1', 'loopback'], ['::a00:1', 'private'], ['::203.0.113.9', 'reserved'], ['::1:0:0:0', 'reserved'],
  ['64:ff9b::10.0.0.1', 'private'], ['64:ff9b::a00:1', 'private'], ['64:ff9b::7f00:1', 'loopback'], ['64:ff9b::a9fe:a9fe', 'link-local'],
  ['64:ff9b::203.0.113.9', 'public'], ['64:ff9b:1::1', 'private'], ['64:ff9b:2::1', 'reserved'],
  ['2002:c0a8:101::1', 'private'], ['2002:7f00:1::1', 'loopback'], ['2002:a9fe:a9fe::', 'link-local'], ['2002:cb00:7109::1', 'public'],
  ['fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved'], ['fc00::', 'private'], ['fd12:3456::1', 'private'], ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'private'],
  ['fe80::', 'link-local'], ['FE80::1', 'link-local'], ['fe80::1%eth0', 'link-local'], ['febf:ffff::', 'link-local'],
  ['fec0::', 'private'], ['feff:ffff::', 'private'], ['ff00::', 'multicast'], ['ff02::1', 'multicast'],
  ['1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved'], ['2000::', 'public'], ['2001:db8::1', 'public'], ['2606:4700:4700::1111', 'public'],
  ['3fff:ffff::', 'public'], ['4000::', 'reserved'], ['100::1', 'reserved'],
  ['1:2:3:4:5:6:7::', 'reserved'], ['2001:db8:1:2:3:4:203.0.113.9', 'public'],
  // Not addresses.
  ['hooks.example.com', null], ['1.2.3', null], ['256.1.1.1', null], ['1.2.3.4.5', null], ['01.2.3.4.5', null], ['1::2::3', null],
  ['12345::', null], [':1', null], ['1:', null], ['::1.2.3.4:5', null], ['1.2.3.4::', null], ['::ffff:1.2.3.4.5', null],
  ['1:2:3:4:5:6:7:8:9', null], ['1:2:3:4:5:6:7:8::', null], ['1:2:3:4:5:6:7', null], ['g::1', null], ['', null],
];

test('the classifier: every range at its edges, IPv4 inside IPv6, public addresses allowed', () => {
  const wrong = TABLE.filter(([text, expected]) => classifyAddress(text) !== expected).map(([text, expected]) => `${text}: ${classifyAddress(text)}, expected ${expected}`);
  assert.equal(wrong, []);
});

test('parseIPv6 reads every text form into the same bytes', () => {
  const loopback = Array.from(parseIPv6('::1')!);
  for (const text of ['0:0:0:0:0:0:0:1', '0000:0000:0000:0000:0000:0000:0000:0001', '::0:1', '0::1', '[::1]', '::1%lo']) {
    assert.equal(Array.from(parseIPv6(text) ?? []), loopback, text);
  }
  assert.equal(Array.from(parseIPv6('::ffff:127.0.0.1')!), Array.from(parseIPv6('::ffff:7f00:1')!));
});

test('every spelling of a refused host is refused from its URL alone, without resolving', () => {
  const wrong: string[] = [];
  for (const [spelling, cls] of REFUSED_SPELLINGS) {
    const host = new URL(`http://${spelling}:8080/hook`).hostname;
    const verdict = checkLiteralHost(host);
    if (typeof verdict === 'string' || verdict.class !== cls) wrong.push(`${spelling} (${host}): ${JSON.stringify(verdict)}, expected ${cls}`);
  }
  assert.equal(wrong, []);
});

test('public literals pass and host names are left to the resolver', () => {
  for (const host of ['203.0.113.9', '3405803785', '[2001:db8::1]', '[64:ff9b::203.0.113.9]', '[::ffff:203.0.113.9]']) {
    assert.is(checkLiteralHost(new URL(`https://${host}/`).hostname), 'public', host);
  }
  for (const host of ['hooks.example.com', 'localhost.example.com', 'mylocalhost', 'localhost-1.example', '0x7f.0.0.1a']) {
    assert.is(checkLiteralHost(new URL(`https://${host}/`).hostname), 'name', host);
  }
});

/** A resolver answering from a table, recording the names it was asked. */
function tableResolver(table: Record<string, string[]>) {
  const asked: string[] = [];
  const resolve = async (name: string) => {
    asked.push(name);
    const found = table[name];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return found;
  };
  return { asked, resolve };
}

test('checkDestination: a name is refused when any of its addresses is not public', async () => {
  const r = tableResolver({
    'hooks.example.com': ['203.0.113.7', '2001:db8::7'],
    'intranet.example.com': ['10.1.2.3'],
    'dual.example.com': ['203.0.113.7', '::1'],
    'mapped.example.com': ['::ffff:127.0.0.1'],
    'zoned.example.com': ['fe80::1%eth0'],
    'odd.example.com': ['not an address'],
    'empty.example.com': [],
  });
  const policy: DestinationPolicy = { allowPrivate: false, resolveHost: r.resolve };
  assert.is(await checkDestination('https://HOOKS.Example.COM/x', policy), null);
  assert.equal(r.asked, ['hooks.example.com'], 'the resolver is asked the canonical host');
  assert.equal(await checkDestination('https://intranet.example.com/x', policy), { host: 'intranet.example.com', literal: false, address: '10.1.2.3', class: 'private' });
  assert.equal(await checkDestination('https://dual.example.com/x', policy), { host: 'dual.example.com', literal: false, address: '::1', class: 'loopback' });
  assert.is((await checkDestination('https://mapped.example.com/x', policy))?.class, 'loopback');
  assert.is((await checkDestination('https://zoned.example.com/x', policy))?.class, 'link-local');
  assert.is((await checkDestination('https://odd.example.com/x', policy))?.class, 'reserved', 'an answer that is no address is not trusted');
  for (const url of ['https://empty.example.com/x', 'https://missing.example.com/x']) {
    try {
      await checkDestination(url, policy);
      assert.unreachable(url);
    } catch (e) {
      assert.instance(e, Error);
      assert.not.instance(e, assert.Assertion);
    }
  }
  assert.equal(await checkDestination('http://127.1:9/x', policy), { host: '127.0.0.1', literal: true, address: '127.0.0.1', class: 'loopback' });
  assert.equal(await checkDestination('http://localhost:9/x', policy), { host: 'localhost', literal: true, address: null, class: 'loopback' });
  assert.is(r.asked.filter((n) => n === 'localhost' || n === '127.0.0.1').length, 0, 'literals and localhost are never resolved');
});

test('checkDestination: with private destinations allowed nothing is checked; without a resolver names are refused', async () => {
  const r = tableResolver({});
  assert.is(await checkDestination('http://127.0.0.1:9/x', { allowPrivate: true, resolveHost: r.resolve }), null);
  assert.is(await checkDestination('https://hooks.example.com/x', { allowPrivate: true, resolveHost: r.resolve }), null);
  assert.equal(r.asked, []);
  const none: DestinationPolicy = { allowPrivate: false, resolveHost: null };
  assert.equal(await checkDestination('https://hooks.example.com/x', none), { host: 'hooks.example.com', literal: false, address: null, class: 'unchecked' });
  assert.is(await checkDestination('https://203.0.113.9/x', none), null);
});

test('checkDestination stops waiting for a resolver when its signal aborts', async () => {
  const policy: DestinationPolicy = { allowPrivate: false, resolveHost: () => new Promise(() => {}) };
  const started = Date.now();
  // AbortSignal.timeout's timer does not keep Node running, and nothing else would meanwhile.
  const hold = setTimeout(() => {}, 5000);
  try {
    await checkDestination('https://slow.example.com/x', policy, AbortSignal.timeout(30));
    assert.unreachable();
  } catch (e) {
    assert.is((e as Error).name, 'TimeoutError');
  } finally {
    clearTimeout(hold);
  }
  assert.ok(Date.now() - started < 2000);
});

test('the runtime resolver (node:dns lookup) answers what the hosts file says, on this runtime', async () => {
  const local = await resolveHost('localhost');
  assert.ok(local.length > 0);
  assert.ok(local.every((a) => classifyAddress(a) === 'loopback'), local.join(', '));
  assert.equal(await resolveHost('127.0.0.1'), ['127.0.0.1']);
});

test.run();
