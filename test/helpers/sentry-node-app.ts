// An app instrumented with the real, unmodified @sentry/node SDK, run by test/sentry-node.test.ts
// in a Node process of its own: the SDK instruments node:http for the whole process, which must
// not reach the test runner. It reports to SENTRY_DSN and prints the event ids the SDK returned.
import * as Sentry from '@sentry/node';

Sentry.init({
  dsn: process.env.SENTRY_DSN,
  release: 'shop@2.4.1',
  environment: 'staging',
  // Nothing but what the test sends: no tracing, no default integrations that talk to the network.
  tracesSampleRate: 0,
});
Sentry.setTag('team', 'checkout');
Sentry.setUser({ id: 'customer-7', email: 'customer@example.com' });

function chargeCard(amount: number): never {
  throw new TypeError(`card declined for ${amount}`); // sentry-node-app: throw
}

const ids: Record<string, string> = {};
try {
  chargeCard(42);
} catch (err) {
  ids.exception = Sentry.captureException(err, { fingerprint: ['payments', 'declined'] });
}
ids.message = Sentry.captureMessage('inventory running low', 'warning');
ids.feedback = Sentry.captureFeedback({ message: 'Checkout feels slow', name: 'Ada', email: 'ada@example.com' });
// More than 32 KiB: the SDK sends this one gzipped.
ids.large = Sentry.withScope((scope) => {
  scope.setExtra('dump', 'x'.repeat(40_000));
  return Sentry.captureMessage('large report', 'info');
});

const flushed = await Sentry.flush(10_000);
console.log(JSON.stringify({ flushed, ids }));
