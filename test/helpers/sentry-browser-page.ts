// A web page instrumented with the real, unmodified @sentry/browser SDK; test/sentry-browser.test.ts
// bundles it with esbuild and configures it through `window.SENTRY_TEST` before it loads.
import * as Sentry from '@sentry/browser';

const config = (window as unknown as { SENTRY_TEST: { dsn: string; tunnel?: string; tracing?: boolean } }).SENTRY_TEST;
Sentry.init({
  dsn: config.dsn, tunnel: config.tunnel, release: 'web@3.0.0', environment: 'production',
  // Performance monitoring as its docs set it up: page loads and navigations as transactions.
  ...(config.tracing ? { integrations: [Sentry.browserTracingIntegration()], tracesSampleRate: 1 } : {}),
});
Sentry.setTag('page', 'cart');

function applyCoupon(code: string): never {
  throw new RangeError(`coupon ${code} expired`);
}

function renderCart(): never {
  throw new Error('cart failed to render');
}

(window as unknown as Record<string, unknown>).sentryTest = {
  captureException(): string | undefined {
    try {
      applyCoupon('SPRING');
    } catch (err) {
      return Sentry.captureException(err);
    }
  },
  /** Thrown from a timer, so nothing catches it but the SDK's global handlers. */
  uncaught(): void {
    setTimeout(() => renderCart());
  },
  captureMessage: () => Sentry.captureMessage('search index stale', 'info'),
  feedback: () => Sentry.captureFeedback({ message: 'Love the new cart', name: 'Grace', email: 'grace@example.com' }),
  /** What the user did before the error: the SDK records these as breadcrumbs. */
  async afterCrumbs(): Promise<string | undefined> {
    console.warn('stock low');
    await fetch('/app/missing.json?token=SECRET').catch(() => undefined);
    return Sentry.captureException(new Error('after crumbs'));
  },
  flush: () => Sentry.flush(5000),
};
