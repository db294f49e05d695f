// The events of bench:postgres-busy and bench:postgres-burst-memory: one user's visitors, each
// batch a session of its own, sent as a busy site's browsers send them.

export const BATCH = 50;
export const CONCURRENCY = 8;
export const HEADERS = { 'content-type': 'application/json', 'x-idp-user-id': 'busy-user' };

let seed = 7;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
export const AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0',
];
const REFERRERS = ['https://www.google.com/search?q=shop', 'https://news.ycombinator.com/item?id=1', 'https://t.co/x', 'https://duckduckgo.com/', '', '', ''];
export const VITALS = ['LCP', 'INP', 'CLS', 'FCP', 'TTFB'];
let sessions = 0;
/** Prefix of the session ids: a burst replayed on a loaded database gives its sessions a new one. */
let sessionPrefix = 's';
export const prefixSessions = (prefix: string) => void (sessionPrefix = prefix);

/** One visitor's batch of events (a session of its own), sent with one of the user agents. */
function batch(): { agent: string; body: string } {
  const session = `${sessionPrefix}-${++sessions}`;
  const version = `1.${Math.floor(rand() * 6)}.0`;
  const events = Array.from({ length: BATCH }, () => {
    const route = `/route/${Math.floor(rand() * rand() * 40)}`;
    const type = pick(['pageload', 'pageload', 'pageload', 'click', 'click', 'performance', 'performance', 'error', 'feedback', 'custom']);
    const data: Record<string, unknown> = {};
    if (type === 'pageload') Object.assign(data, { duration: Math.round(50 + rand() * rand() * 6000), ttfb: Math.round(rand() * 400) });
    else if (type === 'performance') {
      const name = pick(VITALS);
      data.name = name;
      data.value = name === 'CLS' ? Math.round(rand() * 500) / 1000 : Math.round(rand() * rand() * 5000);
    } else if (type === 'error') Object.assign(data, { message: `TypeError: x is undefined #${Math.floor(rand() * 30)}`, stack: 'at f (app.js:1:1)' });
    else if (type === 'feedback') data.rating = 1 + Math.floor(rand() * 5);
    return { type, sessionId: session, deployVersion: version, route, referrer: pick(REFERRERS), data };
  });
  return { agent: pick(AGENTS), body: JSON.stringify({ events }) };
}

/** Sends `count` events spread over [from, to) with CONCURRENCY requests in flight. */
export async function send(count: number, from: number, to: number, post: (at: number, agent: string, body: string) => Promise<void>): Promise<void> {
  const batches = Math.ceil(count / BATCH);
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    for (let i = next++; i < batches; i = next++) {
      const { agent, body } = batch();
      await post(from + Math.floor(((to - from) * i) / batches), agent, body);
    }
  }));
}
