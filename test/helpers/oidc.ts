// A real OpenID Connect provider (npm oidc-provider) on 127.0.0.1 issuing JWT access tokens, with its
// key set at /.well-known/jwks.json, where the service looks by default (docs/api.md#identity). Two
// clients: a confidential service client (client credentials) and a public dashboard client
// (authorization code + PKCE, for sign-in from a browser or scripted with `signIn`). Development
// interactions: any login name is accepted.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
// @ts-expect-error oidc-provider ships no type declarations; the little used here is typed below.
import ProviderModule from 'oidc-provider';

/** The part of oidc-provider's Provider this helper touches. */
export interface OidcProvider {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  on(event: 'server_error', listener: (ctx: unknown, err: Error) => void): void;
}
const Provider = ProviderModule as new (issuer: string, configuration: Record<string, unknown>) => OidcProvider;

export const OIDC_RESOURCE = 'urn:watchtower:api';
export const OIDC_SCOPE = 'watchtower';
export const SERVICE_CLIENT_ID = 'watchtower-service';
export const DASHBOARD_CLIENT_ID = 'watchtower-dashboard';

export interface OidcOptions {
  /** Redirect URIs the dashboard (public, PKCE) client may use; default one local placeholder. */
  redirectUris?: string[];
  /** Where the dashboard client may return after sign-out. */
  postLogoutRedirectUris?: string[];
  /** Access token lifetime, seconds. Default 600. */
  accessTokenTtl?: number;
}

export interface OidcServer {
  /** The provider's issuer, `http://127.0.0.1:<port>` (no trailing slash). */
  issuer: string;
  /** `<issuer>/.well-known/jwks.json`. */
  jwksUrl: string;
  serviceClient: { clientId: string; clientSecret: string };
  dashboardClient: { clientId: string; redirectUris: string[] };
  /** An access token (JWT) for the service client itself: its `sub` is the client id. */
  clientCredentialsToken(): Promise<string>;
  /**
   * Scripts the browser sign-in: authorization request with PKCE, development login as `userId`,
   * consent, code exchange. Returns the JWT access token, whose `sub` is `userId`.
   */
  signIn(userId: string, redirectUri?: string): Promise<string>;
  provider: OidcProvider;
  close(): Promise<void>;
}

export async function startOidc(options: OidcOptions = {}): Promise<OidcServer> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | null = null;
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => (handler ? handler(req, res) : res.writeHead(503).end()));
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('OIDC server has no port');
  const issuer = `http://127.0.0.1:${address.port}`;
  const redirectUris = options.redirectUris?.length ? options.redirectUris : [`${issuer}/signed-in`];
  const clientSecret = randomToken();

  const signingKeys = [];
  for (const alg of ['RS256', 'ES256'] as const) {
    const { privateKey } = await generateKeyPair(alg, { extractable: true });
    signingKeys.push({ ...(await exportJWK(privateKey)), alg, use: 'sig', kid: `${alg}-${randomToken().slice(0, 8)}` });
  }

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: SERVICE_CLIENT_ID,
        client_secret: clientSecret,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
      },
      {
        client_id: DASHBOARD_CLIENT_ID,
        application_type: 'web',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: redirectUris,
        post_logout_redirect_uris: options.postLogoutRedirectUris ?? [],
        token_endpoint_auth_method: 'none',
      },
    ],
    jwks: { keys: signingKeys },
    routes: { jwks: '/.well-known/jwks.json' },
    cookies: { keys: [randomToken()] },
    scopes: ['openid', 'offline_access', OIDC_SCOPE],
    pkce: { required: () => true },
    ttl: {
      AccessToken: options.accessTokenTtl ?? 600,
      ClientCredentials: options.accessTokenTtl ?? 600,
      IdToken: 3600,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
      RefreshToken: 3600,
    },
    findAccount: (_ctx: unknown, id: string) => ({ accountId: id, claims: () => ({ sub: id }) }),
    // RFC 9068 access tokens name the client in `client_id`; `azp` is what IDP_AUTHORIZED_PARTIES checks.
    extraTokenClaims: (_ctx: unknown, token: { clientId?: string }) => ({ azp: token.clientId }),
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => OIDC_RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: OIDC_SCOPE,
          audience: OIDC_RESOURCE,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
  });
  provider.on('server_error', (_ctx, err) => console.error('oidc-provider:', err));
  handler = provider.callback();

  const tokenRequest = async (body: Record<string, string>, headers: Record<string, string> = {}) => {
    const res = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(body),
    });
    const json = (await res.json()) as { access_token?: string; error?: string; error_description?: string };
    if (!res.ok || !json.access_token) throw new Error(`token endpoint: ${res.status} ${json.error} ${json.error_description ?? ''}`);
    return json.access_token;
  };

  return {
    issuer,
    jwksUrl: `${issuer}/.well-known/jwks.json`,
    serviceClient: { clientId: SERVICE_CLIENT_ID, clientSecret },
    dashboardClient: { clientId: DASHBOARD_CLIENT_ID, redirectUris },
    provider,
    clientCredentialsToken: () =>
      tokenRequest(
        { grant_type: 'client_credentials', scope: OIDC_SCOPE, resource: OIDC_RESOURCE },
        { authorization: `Basic ${btoa(`${SERVICE_CLIENT_ID}:${clientSecret}`)}` },
      ),
    async signIn(userId, redirectUri = redirectUris[0]!) {
      const verifier = randomToken() + randomToken();
      const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
      const state = randomToken();
      const jar = new Map<string, string>();
      const go = async (url: string, init: RequestInit = {}): Promise<string> => {
        const res = await fetch(new URL(url, issuer), {
          ...init,
          redirect: 'manual',
          headers: { ...(init.headers as Record<string, string>), cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
        });
        for (const line of res.headers.getSetCookie()) {
          const [pair] = line.split(';');
          const eq = pair!.indexOf('=');
          jar.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim());
        }
        await res.body?.cancel();
        const location = res.headers.get('location');
        if (res.status < 300 || res.status >= 400 || !location) throw new Error(`sign-in: ${res.status} from ${url} without a redirect`);
        return new URL(location, issuer).href;
      };
      const form = (body: Record<string, string>): RequestInit => ({
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(body),
      });
      const authorize = new URL(`${issuer}/auth`);
      authorize.search = new URLSearchParams({
        client_id: DASHBOARD_CLIENT_ID,
        response_type: 'code',
        redirect_uri: redirectUri,
        scope: `openid ${OIDC_SCOPE}`,
        state,
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }).toString();
      let next = await go(authorize.href);
      // Login, then consent: each interaction answers with a redirect back to the authorization.
      let loggedIn = false;
      for (let step = 0; step < 8 && !next.startsWith(redirectUri); step++) {
        if (/\/interaction\/[^/]+$/.test(new URL(next).pathname)) {
          next = await go(next, form(loggedIn ? { prompt: 'consent' } : { prompt: 'login', login: userId, password: 'any' }));
          loggedIn = true;
        } else {
          next = await go(next);
        }
      }
      const back = new URL(next);
      const code = back.searchParams.get('code');
      if (!next.startsWith(redirectUri) || !code || back.searchParams.get('state') !== state) {
        throw new Error(`sign-in did not return a code: ${next}`);
      }
      return tokenRequest({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: DASHBOARD_CLIENT_ID, code_verifier: verifier });
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}

function randomToken(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(24)));
}

function base64url(bytes: Uint8Array): string {
  let text = '';
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text).replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_');
}
