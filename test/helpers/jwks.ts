// A JSON Web Key Set served over real HTTP on 127.0.0.1, with keys generated per run, and token
// minting against it: the stand-in identity provider for the auth, handler and isolation tests.
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

export type KeyKind = 'rsa' | 'ec' | 'ed';
const ALG: Record<KeyKind, string> = { rsa: 'RS256', ec: 'ES256', ed: 'EdDSA' };

export interface TestKey {
  kind: KeyKind;
  alg: string;
  kid: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  publicJwk: JWK;
}

/** How the server answers the JWKS URL: the key set, or one of the ways a provider fails. */
export type JwksMode = 'ok' | 'error' | 'html' | 'not-a-key-set' | 'hang';

export interface SignOptions {
  /** Which published key signs; default the newest RSA key (or the newest key after `rotate`). */
  key?: KeyKind | TestKey;
  /** Overrides the `kid` header (e.g. a random or another key's kid). */
  kid?: string;
  /** Extra protected header parameters. */
  header?: Record<string, unknown>;
}

export interface JwksServer {
  /** `http://127.0.0.1:<port>`; the `iss` of minted tokens. */
  issuer: string;
  /** `<issuer>/.well-known/jwks.json`. */
  jwksUrl: string;
  /** How many times the key set was requested. */
  readonly fetchCount: number;
  /** The published keys, newest last. */
  readonly keys: readonly TestKey[];
  /**
   * A signed JWT. Defaults: `iss` = issuer, `iat` = now, `exp` = now + 5 min. Claims given win;
   * a claim given as `undefined` is left out (e.g. `{ sub: 'u1', exp: undefined }`).
   */
  sign(claims: Record<string, unknown>, options?: SignOptions): Promise<string>;
  /** Generates and publishes a new key (default RSA), which then signs by default. */
  rotate(kind?: KeyKind): Promise<TestKey>;
  /** Generates a key that is not published (for "signed by someone else" cases). */
  foreignKey(kind?: KeyKind): Promise<TestKey>;
  /** Removes a key from the published set. */
  unpublish(kid: string): void;
  setMode(mode: JwksMode): void;
  close(): Promise<void>;
}

export async function newKey(kind: KeyKind = 'rsa'): Promise<TestKey> {
  const alg = ALG[kind];
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true, ...(kind === 'ed' ? { crv: 'Ed25519' } : {}) });
  const kid = `${kind}-${crypto.randomUUID()}`;
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kind, alg, kid, privateKey, publicKey, publicJwk };
}

/** Starts the server with one RSA, one EC and one Ed25519 key published. */
export async function startJwks(kinds: KeyKind[] = ['ec', 'ed', 'rsa']): Promise<JwksServer> {
  const keys: TestKey[] = [];
  for (const kind of kinds) keys.push(await newKey(kind));
  let signer = keys[keys.length - 1]!;
  let fetches = 0;
  let mode: JwksMode = 'ok';
  const sockets = new Set<Socket>();

  const server: Server = createServer((req, res) => {
    if (req.url !== '/.well-known/jwks.json') {
      res.writeHead(404).end();
      return;
    }
    fetches++;
    if (mode === 'hang') return;
    if (mode === 'error') {
      res.writeHead(500, { 'content-type': 'text/plain' }).end('upstream broke');
    } else if (mode === 'html') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>');
    } else if (mode === 'not-a-key-set') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys":"nope"}');
    } else {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: keys.map((k) => k.publicJwk) }));
    }
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('JWKS server has no port');
  const issuer = `http://127.0.0.1:${address.port}`;

  const pick = (key: SignOptions['key']): TestKey => {
    if (key === undefined) return signer;
    if (typeof key !== 'string') return key;
    const found = [...keys].reverse().find((k) => k.kind === key);
    if (!found) throw new Error(`no published ${key} key`);
    return found;
  };

  return {
    issuer,
    jwksUrl: `${issuer}/.well-known/jwks.json`,
    get fetchCount() {
      return fetches;
    },
    get keys() {
      return keys;
    },
    async sign(claims, options = {}) {
      const key = pick(options.key);
      const now = Math.floor(Date.now() / 1000);
      const payload: Record<string, unknown> = { iss: issuer, iat: now, exp: now + 300, ...claims };
      for (const name of Object.keys(payload)) if (payload[name] === undefined) delete payload[name];
      return new SignJWT(payload)
        .setProtectedHeader({ alg: key.alg, kid: options.kid ?? key.kid, typ: 'JWT', ...options.header })
        .sign(key.privateKey);
    },
    async rotate(kind = 'rsa') {
      const key = await newKey(kind);
      keys.push(key);
      signer = key;
      return key;
    },
    foreignKey: (kind = 'rsa') => newKey(kind),
    unpublish(kid) {
      const i = keys.findIndex((k) => k.kid === kid);
      if (i >= 0) keys.splice(i, 1);
    },
    setMode(next) {
      mode = next;
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}
