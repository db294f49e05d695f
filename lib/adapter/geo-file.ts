// The bytes of the IP-to-country database (lib/geo.ts), read from the npm package that ships it,
// on every runtime: Node, Deno and Bun all implement node:module and node:fs.
import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';

/** The package and its file: IPv4 and IPv6 in one MaxMind DB (README, "Countries"). */
const PACKAGE = '@ip-location-db/geo-whois-asn-country-mmdb';
const FILE = 'geo-whois-asn-country.mmdb';

/** The database file (a Buffer, which the MaxMind DB reader needs). */
export async function readCountryDatabase(): Promise<Uint8Array> {
  const manifest = createRequire(import.meta.url).resolve(`${PACKAGE}/package.json`);
  return readFile(manifest.slice(0, manifest.lastIndexOf('/') + 1) + FILE);
}
