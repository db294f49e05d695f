// Sample events for the preview (/dashboard-demo/): 90 days of a small notes app, ending at the
// moment the page opens, so that every range of the picker has something to show. Deterministic
// apart from that moment: the same offsets, types, routes and durations on every visit (the README
// screenshots are taken from it).
import { normalise, type StoredEvent } from '../../../lib/event.ts';

const DAY = 86_400_000;
export const SAMPLE_DAYS = 90;

const ROUTES: [string, number][] = [['/', 420], ['/notes', 560], ['/notes/:id', 610], ['/search', 1150], ['/settings', 400]];
const ERRORS = [
  "TypeError: Cannot read properties of null (reading 'items')",
  'Error: Payment service timed out after 3000 ms',
  'ReferenceError: draft is not defined',
  'Error: Request failed with status 502',
];
const CLICKS = ['Save', 'Share', 'Open note', 'Search', 'New note'];
// What a session was sent from (as the server derives it from the User-Agent), and where it came from.
const CLIENTS: NonNullable<StoredEvent['client']>[] = [
  { browser: 'Chrome', browserVersion: '131', os: 'Windows', device: 'desktop' },
  { browser: 'Chrome', browserVersion: '131', os: 'macOS', device: 'desktop' },
  { browser: 'Safari', browserVersion: '18', os: 'iOS', device: 'mobile' },
  { browser: 'Chrome', browserVersion: '131', os: 'Android', device: 'mobile' },
  { browser: 'Firefox', browserVersion: '133', os: 'Linux', device: 'desktop' },
  { browser: 'Safari', browserVersion: '18', os: 'iOS', device: 'tablet' },
  { browser: 'Edge', browserVersion: '131', os: 'Windows', device: 'desktop' },
];
const REFERRERS = [undefined, undefined, undefined, 'https://www.google.com', 'https://news.ycombinator.com', 'https://duckduckgo.com', 'https://github.com'];
// Web vitals around their thresholds: [name, typical value, spread].
const VITALS: [string, number, number][] = [['LCP', 1600, 2600], ['INP', 280, 520], ['CLS', 0.02, 0.2], ['FCP', 900, 1200], ['TTFB', 250, 900]];
const CUSTOM = ['note_saved', 'search_performed', 'note_shared'];
// Each custom event's properties (docs/api.md#properties), as the app would send them.
const PROPERTIES: Record<string, (i: number) => Record<string, unknown>> = {
  note_saved: (i) => ({ format: ['markdown', 'markdown', 'plain', 'checklist'][h(i, 22) % 4], words: 50 * (1 + (h(i, 23) % 8)), pinned: h(i, 24) % 5 === 0 }),
  search_performed: (i) => ({ scope: ['all', 'all', 'title', 'tags'][h(i, 25) % 4], results: h(i, 26) % 4 === 0 ? 0 : 1 + (h(i, 27) % 12) }),
  note_shared: (i) => ({ via: ['link', 'email', 'link', 'export'][h(i, 28) % 4] }),
};
// Where a session came from (as the server looks it up from the address) and which campaign, if any,
// brought it (the first page's utm_* parameters).
const COUNTRIES = ['US', 'US', 'DE', 'GB', 'FR', 'IN', 'BR', 'JP', 'CA', 'NL', null];
const CAMPAIGNS = [undefined, undefined, undefined, undefined, 'utm_source=newsletter&utm_medium=email&utm_campaign=spring_launch',
  'utm_source=google&utm_medium=cpc&utm_campaign=notes_search', 'utm_source=twitter&utm_medium=social&utm_campaign=spring_launch'];

/** A 32-bit hash of i and a salt: stable pseudo-random numbers without state. */
function h(i: number, salt: number): number {
  let x = (i ^ Math.imul(salt, 0x9e3779b9)) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b) >>> 0;
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}
const unit = (i: number, salt: number) => h(i, salt) / 4294967296;

/** The release live `ago` ms before now: a new one every few weeks; the newest breaks search. */
const versionAt = (ago: number) => (ago > 40 * DAY ? '1.3.2' : ago > 12 * DAY ? '1.4.0' : '2.0.0-beta.1');

/** The sample events, oldest first, received up to `now`. */
export function sampleEvents(now: number): StoredEvent[] {
  const events: StoredEvent[] = [];
  let i = 0;
  // Sessions one after another, busier on weekdays and growing over the period.
  for (let ago = SAMPLE_DAYS * DAY; ago > 0;) {
    const session = i;
    const version = versionAt(ago);
    const length = 3 + (h(session, 1) % 9);
    for (let k = 0; k < length && ago > 0; k++, i++) {
      const at = now - ago;
      const [route, base] = ROUTES[h(i, 2) % ROUTES.length]!;
      const roll = unit(i, 3);
      const common = { sessionId: `s${session}`, deployVersion: version, appName: 'notes', route, url: `https://notes.example.com${route.replace(':id', String(100 + (h(i, 4) % 50)))}` };
      const client = { ...CLIENTS[h(session, 16) % CLIENTS.length], country: COUNTRIES[h(session, 19) % COUNTRIES.length] };
      const campaign = k === 0 ? CAMPAIGNS[h(session, 20) % CAMPAIGNS.length] : undefined;
      if (campaign) common.url += `?${campaign}`;
      let raw: { type: string; message?: string; name?: string; data: Record<string, unknown> };
      if (k === 0 || roll < 0.3) {
        // Log-normal-ish page loads; search on the beta is slower.
        const slow = route === '/search' && version === '2.0.0-beta.1' ? 1.6 : 1;
        const duration = Math.round(base * slow * Math.exp(0.45 * (unit(i, 5) + unit(i, 6) + unit(i, 7) - 1.5)));
        raw = { type: 'pageload', data: { duration, ttfb: 60 + (h(i, 8) % 140) } };
        // A session's first page load says where the visitor came from.
        if (k === 0) Object.assign(raw, { referrer: REFERRERS[h(session, 17) % REFERRERS.length] });
      } else if (roll < 0.65) raw = { type: 'click', data: { text: CLICKS[h(i, 9) % CLICKS.length] } };
      else if (roll < (version === '2.0.0-beta.1' ? 0.74 : 0.69)) {
        const message = ERRORS[h(i, 10) % ERRORS.length]!;
        raw = { type: 'error', message, data: { stack: `${message}\n    at handler (https://notes.example.com/assets/app-4f2a.js:112:17)` } };
      } else if (roll < 0.8) raw = { type: 'feedback', data: { rating: [5, 4, 4, 5, 3, 2, 5, 4][h(i, 11) % 8] } };
      else if (roll < 0.9) {
        const name = CUSTOM[h(i, 12) % CUSTOM.length]!;
        raw = { type: 'custom', name, data: PROPERTIES[name]!(i) };
      }
      else {
        const [name, typical, spread] = VITALS[h(i, 18) % VITALS.length]!;
        const value = typical + spread * unit(i, 13) ** 2;
        raw = { type: 'performance', data: { name, value: name === 'CLS' ? Math.round(value * 1000) / 1000 : Math.round(value) } };
      }
      const id = `sample-${i}`;
      // A few sessions are the team's own, on staging.
      const environment = h(session, 21) % 10 === 0 ? 'staging' : 'production';
      const event = normalise({ ...common, ...raw, environment, id, timestamp: new Date(at).toISOString() }, { now: at, owner: 'demo', newId: () => id });
      event.client = client;
      events.push(event);
      ago -= 20_000 + (h(i, 14) % 90_000);
    }
    // The gap to the next session: shorter on weekdays and towards the present.
    // (Weekdays by offset, not by calendar: the sample is the same whatever the moment it ends at.)
    const weekday = Math.floor(ago / DAY) % 7 >= 2;
    ago -= Math.round((weekday ? 1 : 2) * (50 + 90 * (ago / (SAMPLE_DAYS * DAY))) * 60_000 * (0.5 + unit(session, 15)));
  }
  return events;
}
