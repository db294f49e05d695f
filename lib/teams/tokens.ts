// One-time invitation tokens and share-link tokens: random, shown once, kept only as a hash.
const encoder = new TextEncoder();

/** 32 random bytes, base64url: URL-safe and unguessable. */
export function newToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** A short random id by which admins list and revoke an invitation or link (never the token). */
export function newPublicId(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** What is stored in place of a token: its SHA-256, hex. */
export async function hashToken(token: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(token)));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** What a token in a URL must look like before it is hashed and looked up. */
export const TOKEN_PATTERN = /^[\w-]{20,100}$/;
