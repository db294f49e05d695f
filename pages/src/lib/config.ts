// The generated client configuration (dist/assets/config.js, written by scripts/build-pages.mjs).

export interface ClientConfig {
  /** `provider`: OpenID Connect sign-in; `dev`: header-trust development mode (no provider configured). */
  mode: 'provider' | 'dev';
  issuer: string;
  clientId: string;
  publishableKey: string;
  /** Scopes asked for at sign-in (IDP_SCOPE); a provider may need its API scope here. */
  scope: string;
}

declare global {
  interface Window { WATCHTOWER_CONFIG?: Partial<ClientConfig> }
}

export function clientConfig(): ClientConfig {
  const c = window.WATCHTOWER_CONFIG ?? {};
  return {
    mode: c.mode === 'provider' ? 'provider' : 'dev',
    issuer: c.issuer ?? '',
    clientId: c.clientId ?? '',
    publishableKey: c.publishableKey ?? '',
    scope: c.scope || 'openid profile email',
  };
}
