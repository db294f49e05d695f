// Synthetic but realistic events for the history benchmark: what the SDK sends for a handful of
// apps (users), sessions of ~20 events, 20 routes, page loads with log-normal durations, a release
// a week, a few errors, feedback and custom events. Deterministic for a given index.
import { normalise, uuidv7, type RawEvent, type StoredEvent } from '../lib/event.ts';

export const USERS_PREFIX = 'history-user-';

const TYPES = ['pageload', 'pageload', 'pageload', 'page_view', 'page_view', 'click', 'click', 'click', 'interaction', 'custom', 'error', 'performance', 'feedback'];
const ERRORS = ['TypeError: Cannot read properties of undefined (reading \'id\')', 'ReferenceError: cart is not defined', 'Error: Request failed with status 502', 'TypeError: x.map is not a function'];

const VITALS: [string, number, number][] = [['LCP', 1600, 2600], ['INP', 120, 500], ['CLS', 0.02, 0.2], ['FCP', 900, 1500], ['TTFB', 250, 900]];
const REFERRERS = [undefined, undefined, 'https://www.google.com', 'https://news.ycombinator.com', 'https://duckduckgo.com', 'https://t.co'];
const CLIENTS: StoredEvent['client'][] = [
  { browser: 'Chrome', browserVersion: '131', os: 'Windows', device: 'desktop' },
  { browser: 'Safari', browserVersion: '18', os: 'iOS', device: 'mobile' },
  { browser: 'Chrome', browserVersion: '131', os: 'Android', device: 'mobile' },
  { browser: 'Firefox', browserVersion: '133', os: 'Linux', device: 'desktop' },
  { browser: 'Safari', browserVersion: '18', os: 'macOS', device: 'desktop' },
];

/** A 32-bit hash of i and a salt: stable pseudo-random numbers without state. */
function h(i: number, salt: number): number {
  let x = (i ^ Math.imul(salt, 0x9e3779b9)) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b) >>> 0;
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}
const unit = (i: number, salt: number) => h(i, salt) / 4294967296;

const hex = (n: number, digits: number) => n.toString(16).padStart(8, '0').slice(-digits);
/** A session id shaped like the SDK's (a UUID, version 7), stable for a (user, session). */
function sessionUuid(user: number, session: number): string {
  const k = session * 64 + user;
  return `${hex(h(k, 21), 8)}-${hex(h(k, 22), 4)}-7${hex(h(k, 23), 3)}-${hex(8 + (h(k, 24) & 3), 1)}${hex(h(k, 25), 3)}-${hex(h(k, 26), 4)}${hex(h(k, 27), 8)}`;
}

/** The i-th event of the data set, received at `at` (ms), owned by one of `users` users. */
export function historyEvent(i: number, at: number, users: number): StoredEvent {
  const user = h(i, 1) % users;
  const type = TYPES[h(i, 2) % TYPES.length];
  const route = `/app/${['home', 'search', 'product', 'cart', 'checkout'][h(i, 3) % 5]}/${h(i, 4) % 4}`;
  const data: Record<string, unknown> = {};
  if (type === 'pageload') {
    // Log-normal around ~900 ms: exp(N(6.8, 0.6)), via a Box-Muller normal.
    const n = Math.sqrt(-2 * Math.log(unit(i, 5) || 1e-9)) * Math.cos(2 * Math.PI * unit(i, 6));
    data.duration = Math.round(Math.exp(6.8 + 0.6 * n));
    data.ttfb = Math.round((data.duration as number) * (0.1 + 0.2 * unit(i, 7)));
  } else if (type === 'error') {
    data.message = ERRORS[h(i, 8) % ERRORS.length];
    data.stack = `at handler (https://app.example.com/assets/app-3f9a1c.js:1:${h(i, 9) % 5000})\nat dispatch (https://app.example.com/assets/vendor-77b2e0.js:2:1881)`;
  } else if (type === 'click') {
    data.target = ['button#buy', 'a.nav-link', 'button.add-to-cart', 'input#search'][h(i, 10) % 4];
    data.text = ['Buy now', 'Home', 'Add', ''][h(i, 10) % 4];
  } else if (type === 'feedback') data.rating = 1 + (h(i, 11) % 5);
  else if (type === 'custom') data.name = ['signup', 'share', 'filter'][h(i, 12) % 3];
  else if (type === 'performance') {
    // A web vital as the vitals bundle sends it.
    const [name, typical, spread] = VITALS[h(i, 13) % VITALS.length];
    const value = typical + spread * unit(i, 16) ** 2;
    data.name = name;
    data.value = name === 'CLS' ? Math.round(value * 10_000) / 10_000 : Math.round(value);
  }
  const session = Math.floor(i / (20 * users));
  const raw: RawEvent = {
    id: uuidv7(at),
    type,
    // Sessions of ~20 consecutive events of the same user, with ids shaped like the SDK's.
    sessionId: sessionUuid(user, session),
    // A session's page loads name the site it came from, if any.
    referrer: type === 'pageload' ? REFERRERS[h(session, 17) % REFERRERS.length] : undefined,
    deployVersion: `1.${Math.floor(at / (7 * 86_400_000)) % 100}.0`,
    url: `https://app.example.com${route}`,
    route,
    appName: `app-${user}`,
    timestamp: new Date(at - (h(i, 14) % 3000)).toISOString(),
    data,
  };
  const event = normalise(raw, { now: at, owner: USERS_PREFIX + user });
  // What the server derives from the User-Agent: one client per session.
  event.client = CLIENTS[h(session, 18) % CLIENTS.length];
  return event;
}
