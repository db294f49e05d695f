// The country of a client address (README, "Countries"): an ISO 3166-1 alpha-2 code looked up in
// a MaxMind DB file that an npm package ships, read by a pure JavaScript reader, so it works alike
// on Node, Deno and Bun. Loaded once, on the first lookup (~8 MB held from then on). The address is
// only looked up: it is never stored, and never written into a log line, here or by the caller.
import { Reader } from 'mmdb-lib';
import { flatCopy } from './flat-string.ts';

/** An address → its country, or null (private, loopback, unknown or not an address). */
export type CountryOf = (address: string) => string | null;

let loading: Promise<CountryOf> | null = null;

/** The lookup, loading the database on the first call. A database that cannot be read finds no country (logged once). */
export async function countryLookup(log?: (message: string) => void): Promise<CountryOf> {
  const ofPublic = await publicLookup(log);
  return (address) => {
    const ip = publicAddress(address);
    return ip === null ? null : ofPublic(ip);
  };
}

/** The lookup of an address publicAddress gave. */
function publicLookup(log: (message: string) => void = () => {}): Promise<CountryOf> {
  return (loading ??= load().catch((err: unknown) => {
    log(`countries are off: the IP-to-country database could not be read (${err instanceof Error ? err.message : String(err)})`);
    return () => null;
  }));
}

async function load(): Promise<CountryOf> {
  const { readCountryDatabase } = await import('./adapter/geo-file.ts');
  // mmdb-lib takes a Buffer; readFile gives one on every runtime.
  // The records decoded so far, by their place in the file: without them every lookup decodes its
  // record again. A country database holds a few hundred, so they are all kept.
  const reader = new Reader((await readCountryDatabase()) as never, { cache: new Map() as never });
  return (ip) => {
    try {
      // This database's records are `{ country_code }`, a shape mmdb-lib's own types do not list.
      const code = (reader.get(ip) as { country_code?: unknown } | null)?.country_code;
      return typeof code === 'string' && /^[A-Z]{2}$/.test(code) ? code : null;
    } catch {
      return null;
    }
  };
}

/**
 * The country of an address; the database is loaded only once an address could have one, so a
 * server that only sees local traffic never loads it.
 */
export async function countryOfAddress(address: string, log?: (message: string) => void): Promise<string | null> {
  const known = RECENT.get(address);
  if (known !== undefined) return known;
  const ip = publicAddress(address);
  if (ip === null) return null;
  const country = (await publicLookup(log))(ip);
  if (address.length <= MAX_ADDRESS) {
    if (RECENT.size >= RECENT_CAP) RECENT.clear();
    // A copy: the address may be a slice that holds the whole header it was read from.
    RECENT.set(flatCopy(address), country);
  }
  return country;
}

/**
 * Countries of the addresses looked up lately: a client sends all its batches from one address,
 * and reading and looking one up costs a few µs of every ingest request (BENCHMARKS.md). Held in
 * memory only, as the rate limiter holds the same addresses; bounded (emptied past RECENT_CAP, of
 * at most MAX_ADDRESS characters each), and never written anywhere.
 */
const RECENT = new Map<string, string | null>();
export const RECENT_CAP = 10_000;

/** How many addresses countryOfAddress holds now (at most RECENT_CAP). */
export const countriesHeld = (): number => RECENT.size;

/** Longest address looked up: an IPv6 address with a zone and a port fits. */
const MAX_ADDRESS = 64;
const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/**
 * The address to look up, or null for one no country is known of: private, loopback, link-local,
 * shared (CGNAT), unspecified, multicast and documentation ranges, and anything not an address.
 * Accepts what a socket or X-Forwarded-For gives: `::ffff:` mapped IPv4, `[v6]`, a `:port` after
 * IPv4 or bracketed IPv6, and an IPv6 zone.
 */
export function publicAddress(raw: string): string | null {
  let a = raw.trim();
  if (a.length > MAX_ADDRESS) return null;
  const bracket = /^\[([^\]]+)\](?::\d+)?$/.exec(a);
  if (bracket) a = bracket[1];
  else if (/^[\d.]+:\d+$/.test(a)) a = a.slice(0, a.indexOf(':'));
  a = a.toLowerCase().replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) a = mapped[1];
  const v4 = IPV4.exec(a);
  if (v4) {
    const [b0, b1, b2] = [+v4[1], +v4[2], +v4[3]];
    if ([b0, b1, b2, +v4[4]].some((b) => b > 255)) return null;
    const reserved = b0 === 0 || b0 === 10 || b0 === 127 || b0 >= 224 ||
      (b0 === 100 && b1 >= 64 && b1 < 128) || (b0 === 169 && b1 === 254) || (b0 === 172 && b1 >= 16 && b1 < 32) ||
      (b0 === 192 && b1 === 168) || (b0 === 192 && b1 === 0 && (b2 === 0 || b2 === 2)) ||
      (b0 === 198 && (b1 === 18 || b1 === 19)) || (b0 === 198 && b1 === 51 && b2 === 100) || (b0 === 203 && b1 === 0 && b2 === 113);
    return reserved ? null : a;
  }
  if (!/^[0-9a-f:.]+$/.test(a) || !a.includes(':')) return null;
  // Unspecified, loopback, unique local (fc00::/7), link-local (fe80::/10), multicast, documentation.
  if (a === '::' || a === '::1' || /^f[cd]/.test(a) || /^fe[89ab]/.test(a) || a.startsWith('ff') || a.startsWith('2001:db8:')) return null;
  return a;
}
