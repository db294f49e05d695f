/**
 * UUIDv7 (RFC 9562) from a ms timestamp and 16 random bytes. Time-ordered ids keep the server's
 * indexed inserts local, and getRandomValues (unlike randomUUID) exists on plain-http pages too.
 */
export function uuidv7(now: number, bytes: Uint8Array): string {
  for (let i = 5, t = now; i >= 0; i--, t = Math.floor(t / 256)) bytes[i] = t % 256;
  bytes[6] = (bytes[6] & 15) | 112;
  bytes[8] = (bytes[8] & 63) | 128;
  let h = '';
  for (let i = 0; i < 16; i++) h += (bytes[i] + 256).toString(16).slice(1);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
