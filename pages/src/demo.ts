// /demo/: a small monitored app. It loads the SDK from /sdk/watchtower.js like any customer app and,
// being on the service's own origin, sends the signed-in user's credentials with each batch (the
// access token with a provider), so its events reach that user's dashboard (docs/api.md#ownership).
// The id it also tags them with is only a field: nobody's events can be claimed by naming them.
import { byId, el } from './lib/dom.ts';
import { authHeaders } from './lib/session.ts';

interface WatchtowerSdk {
  init(options: Record<string, unknown>): void;
  /** A custom event: type `custom`, `data.name` = name. */
  track(name: string, data?: Record<string, unknown>): void;
  feedback(rating: number, comment?: string): void;
  captureError(error: unknown, extra?: Record<string, unknown>): void;
  flush(): Promise<void>;
  setUser(userId: string | null): void;
}

const USER_KEY = 'service_idp_user_id';
const VERSION_KEY = 'watchtower_demo_version';
const sdk = (window as unknown as { Watchtower?: WatchtowerSdk }).Watchtower;
const userId = localStorage.getItem(USER_KEY);
const version = sessionStorage.getItem(VERSION_KEY) || '1.4.0';
const log = byId('demo-log');

function note(text: string) {
  log.prepend(el('li', {}, el('time', { text: new Date().toLocaleTimeString() }), el('span', { text })));
  while (log.childElementCount > 20) log.lastElementChild!.remove();
}

if (!sdk) {
  byId('demo-status').textContent = 'The SDK did not load (/sdk/watchtower.js). Run npm run build.';
} else {
  // The SDK would read the signed-in id itself on this origin; passing it shows how other apps do it.
  sdk.init({ appName: 'demo-notes', deployVersion: version, userId: userId ?? undefined, headers: authHeaders });
  byId('demo-status').replaceChildren(
    ...(userId
      ? [`Events are sent as user “${userId}” and appear on `, el('a', { text: 'that dashboard', attrs: { href: '/dashboard' } }), '.']
      : ['Not signed in: events are sent anonymously and appear on no dashboard. ', el('a', { text: 'Sign in', attrs: { href: '/login/' } }), ' first to see them.']),
  );
  byId('demo-version-now').textContent = version;
}

const on = (id: string, fn: () => void) => document.getElementById(id)?.addEventListener('click', fn);

on('demo-click', () => {
  // The SDK records the click itself; this only tells the visitor.
  note('Clicked the button');
});
on('demo-error', () => {
  note('Threw an uncaught TypeError');
  setTimeout(() => {
    const cart = null as unknown as { items: unknown[] };
    cart.items.push('book');
  });
});
on('demo-reject', () => {
  note('Rejected a promise without a handler');
  void Promise.reject(new Error('Payment service timed out after 3000 ms'));
});
on('demo-custom', () => {
  sdk?.track('note_saved', { words: 120 });
  note('Sent custom event “note_saved”');
});
on('demo-flush', () => {
  void sdk?.flush().then(() => note('Sent everything queued'));
});
for (let rating = 1; rating <= 5; rating++) {
  on(`demo-feedback-${rating}`, () => {
    sdk?.feedback(rating);
    note(`Sent feedback ${rating}/5`);
  });
}
document.getElementById('demo-version')?.addEventListener('change', (ev) => {
  sessionStorage.setItem(VERSION_KEY, (ev.target as HTMLSelectElement).value);
  location.reload();
});
const select = document.getElementById('demo-version') as HTMLSelectElement | null;
if (select) select.value = version;

// The slow page keeps the main thread busy before `load`, so its pageload duration is long.
if (location.pathname.startsWith('/demo/slow')) {
  const until = performance.now() + 1500;
  while (performance.now() < until) { /* deliberately slow */ }
}
