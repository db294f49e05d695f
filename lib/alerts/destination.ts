// Where a webhook may post. A rule's URL is chosen by a user, but the server makes the request, so
// without a check a rule could reach what only the server can: its own ports (127.0.0.1, [::1]),
// the private network behind it, a cloud's metadata service (169.254.169.254). Unless the operator
// allows it (ALERT_ALLOW_PRIVATE_WEBHOOKS=true), a webhook goes to public addresses only.
//
// Every spelling of an address is first turned into one by the WHATWG URL parser, the same one
// fetch uses: 2130706433, 0x7f000001, 0177.0.0.1, 127.1 and `127.0.0.1.` all have the hostname
// 127.0.0.1, and [::ffff:127.0.0.1] has [::ffff:7f00:1]. The classifier then reads the canonical
// text (and the addresses a resolver answers, which may come in other IPv6 spellings). A host name
// is checked on the addresses it resolves to when the webhook is posted, not only when the rule is
// saved, so a name that later resolves to 127.0.0.1 (DNS rebinding) is refused too.
//
// The gap that remains: fetch resolves the name again to connect. Pinning the connection to the
// checked address has no common form on Node, Deno and Bun (fetch takes no resolver, and naming an
// https host by its address breaks TLS), so the check runs right before fetch and the gap is the
// few milliseconds between two lookups. A resolver cache usually answers both alike; a name whose
// DNS server answers with a zero TTL, public to the check and internal to fetch, can still win that
// race. A server that must rule it out blocks its outgoing traffic to internal ranges in its firewall.

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'unspecified'
  | 'multicast'
  | 'shared'
  | 'broadcast'
  | 'reserved';

/** The runtime's host-name lookup: every address a name resolves to, as text (lib/adapter/resolve.ts). */
export type ResolveHost = (name: string) => Promise<string[]>;

export interface DestinationPolicy {
  /** ALERT_ALLOW_PRIVATE_WEBHOOKS: any destination is allowed, and nothing is resolved here. */
  allowPrivate: boolean;
  /** Without a resolver, host names cannot be checked and are refused (literal public addresses still pass). */
  resolveHost: ResolveHost | null;
}

export const DEFAULT_DESTINATIONS: DestinationPolicy = { allowPrivate: false, resolveHost: null };

/** Why a destination is refused: its host, and the address (and its class) that made it so. */
export interface Refusal {
  host: string;
  /** Whether the URL named the address itself (or `localhost`), rather than a name that resolved to it. */
  literal: boolean;
  /** The refused address; null when the host is a localhost name or could not be checked. */
  address: string | null;
  /** `unchecked`: a host name, and no resolver to check it with. */
  class: Exclude<AddressClass, 'public'> | 'unchecked';
}

/** The four bytes of a dotted-decimal IPv4 address (four parts 0–255, as URL and resolvers print them); null for anything else. */
export function parseIPv4(text: string): number[] | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const bytes: number[] = [];
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return null;
    bytes.push(Number(p));
  }
  return bytes;
}

/**
 * The 16 bytes of an IPv6 address in any RFC 4291 text form: groups of 1–4 hex digits, one `::`,
 * a dotted-decimal IPv4 tail; brackets and a zone (`%eth0`, which resolvers add to link-local
 * answers) are dropped. Null for anything else.
 */
export function parseIPv6(text: string): Uint8Array | null {
  let s = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const groups = (half: string): number[] | null => {
    if (half === '') return [];
    const out: number[] = [];
    const parts = half.split(':');
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      if (i === parts.length - 1 && p.includes('.')) {
        const v4 = parseIPv4(p);
        if (!v4) return null;
        out.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      } else if (/^[0-9a-f]{1,4}$/i.test(p)) {
        out.push(parseInt(p, 16));
      } else {
        return null;
      }
    }
    return out;
  };
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  if (!head || !tail) return null;
  // A dotted tail belongs at the end only: `::1.2.3.4:5` is not an address.
  if (halves.length === 2 && halves[0].includes('.')) return null;
  const count = head.length + tail.length;
  if (halves.length === 1 ? count !== 8 : count > 7) return null;
  const all = [...head, ...new Array<number>(8 - count).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  all.forEach((g, i) => {
    bytes[i * 2] = g >> 8;
    bytes[i * 2 + 1] = g & 0xff;
  });
  return bytes;
}

/** The class of an IPv4 address (RFC 6890's special-purpose ranges that matter here). */
export function classifyIPv4(b: ArrayLike<number>): AddressClass {
  const [a, x] = [b[0], b[1]];
  if (a === 0) return 'unspecified'; // 0/8, "this network"; connecting to 0.0.0.0 reaches the host itself on Linux
  if (a === 10) return 'private';
  if (a === 100 && (x & 0xc0) === 64) return 'shared'; // 100.64/10, carrier-grade NAT
  if (a === 127) return 'loopback';
  if (a === 169 && x === 254) return 'link-local'; // 169.254/16, cloud metadata services among them
  if (a === 172 && (x & 0xf0) === 16) return 'private';
  if (a === 192 && x === 168) return 'private';
  if ((a & 0xf0) === 224) return 'multicast';
  if (a === 255 && x === 255 && b[2] === 255 && b[3] === 255) return 'broadcast';
  if ((a & 0xf0) === 240) return 'reserved';
  return 'public';
}

/**
 * The class of an IPv6 address. Addresses that carry an IPv4 address (mapped ::ffff:0:0/96,
 * translated ::ffff:0:0:0/96, compatible ::/96, NAT64 64:ff9b::/96, 6to4 2002::/16) are classed by
 * that IPv4 address, since a dual-stack socket or a gateway delivers them there.
 */
export function classifyIPv6(b: Uint8Array): AddressClass {
  const zeros = (from: number, to: number) => b.subarray(from, to).every((x) => x === 0);
  const word = (i: number) => (b[i * 2] << 8) | b[i * 2 + 1];
  const v4 = (at: number) => classifyIPv4(b.subarray(at, at + 4));
  if (zeros(0, 15) && b[15] === 0) return 'unspecified';
  if (zeros(0, 15) && b[15] === 1) return 'loopback';
  if (zeros(0, 10) && word(5) === 0xffff) return v4(12); // ::ffff:a.b.c.d, mapped
  if (zeros(0, 8) && word(4) === 0xffff && word(5) === 0) return v4(12); // ::ffff:0:a.b.c.d, translated
  if (zeros(0, 12)) {
    // ::a.b.c.d, compatible: deprecated and unrouted, refused whatever it holds (by the class of what it holds, if not public).
    const held = v4(12);
    return held === 'public' ? 'reserved' : held;
  }
  if (word(0) === 0x0064 && word(1) === 0xff9b) {
    if (zeros(4, 12)) return v4(12); // 64:ff9b::/96, NAT64 of a.b.c.d
    if (word(2) === 0x0001) return 'private'; // 64:ff9b:1::/48, NAT64 for local use (RFC 8215)
    return 'reserved'; // the rest of 64:ff9b::/32 is unassigned
  }
  if (b[0] === 0) return 'reserved'; // the rest of ::/8
  if (word(0) === 0x2002) return v4(2); // 2002:aabb:ccdd::/48, 6to4 of a.b.c.d
  if ((b[0] & 0xfe) === 0xfc) return 'private'; // fc00::/7, unique local
  if (b[0] === 0xfe && (b[1] & 0xc0) === 0x80) return 'link-local'; // fe80::/10
  if (b[0] === 0xfe && (b[1] & 0xc0) === 0xc0) return 'private'; // fec0::/10, the deprecated site-local
  if (b[0] === 0xff) return 'multicast';
  // Only 2000::/3 is allocated for global unicast; the rest is unassigned or special (RFC 4291, IANA).
  return (b[0] & 0xe0) === 0x20 ? 'public' : 'reserved';
}

/** The class of an address as text (IPv4 dotted decimal, IPv6 with or without brackets); null when it is not an address. */
export function classifyAddress(text: string): AddressClass | null {
  const v4 = parseIPv4(text);
  if (v4) return classifyIPv4(v4);
  const v6 = text.includes(':') ? parseIPv6(text) : null;
  return v6 ? classifyIPv6(v6) : null;
}

/** `localhost` and its subdomains (RFC 6761 reserves them for loopback), with or without trailing dots. */
export function isLocalhostName(host: string): boolean {
  const name = host.toLowerCase().replace(/\.+$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * What can be decided from a URL's host without resolving it: a refusal (an address literal that is
 * not public, or a localhost name), `public` (a public address literal), or `name` (a host name to
 * resolve). `host` is a URL's `hostname`, already canonical.
 */
export function checkLiteralHost(host: string): Refusal | 'public' | 'name' {
  if (isLocalhostName(host)) return { host, literal: true, address: null, class: 'loopback' };
  const cls = classifyAddress(host);
  if (cls === null) return 'name';
  return cls === 'public' ? 'public' : { host, literal: true, address: host, class: cls };
}

/**
 * Whether a webhook URL may be posted to now: null when it may, else the refusal. A host name is
 * resolved (once, here) and refused if any of its addresses is not public: fetch may connect to any
 * of them. Throws when the name does not resolve, or when `signal` aborts first (a resolver cannot
 * be cancelled, but the caller stops waiting for it).
 */
export async function checkDestination(url: string, policy: DestinationPolicy, signal?: AbortSignal): Promise<Refusal | null> {
  if (policy.allowPrivate) return null;
  const host = new URL(url).hostname;
  const literal = checkLiteralHost(host);
  if (literal === 'public') return null;
  if (literal !== 'name') return literal;
  if (!policy.resolveHost) return { host, literal: false, address: null, class: 'unchecked' };
  const addresses = await abortable(policy.resolveHost(host), signal);
  if (addresses.length === 0) throw new Error(`${host} resolved to no address`);
  for (const address of addresses) {
    // An answer that is not an address at all is refused rather than trusted.
    const cls = classifyAddress(address) ?? 'reserved';
    if (cls !== 'public') return { host, literal: false, address, class: cls };
  }
  return null;
}

/**
 * What the rule's owner is told (an API answer, a delivery's lastError): the class of an address the
 * URL names itself, but not the address a name resolved to, nor its class.
 */
export function refusalMessage(r: Refusal): string {
  if (r.class === 'unchecked') return `${r.host} is a host name, and this server has no resolver to check it with`;
  return r.literal ? `${r.host} is not a public address (${r.class})` : `${r.host} resolves to an address that is not public`;
}

/** For the server log: the whole reason, the resolved address included. */
export function describeRefusal(r: Refusal): string {
  if (r.class === 'unchecked') return `${r.host} is a host name and no resolver was given to check it (monitoring.resolveHost)`;
  if (r.literal) return `${r.host} is not a public address (${r.class})`;
  return `${r.host} resolves to ${r.address}, not a public address (${r.class})`;
}

function abortable<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
