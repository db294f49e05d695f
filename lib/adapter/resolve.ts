// Host-name lookup for webhook destinations (lib/alerts/destination.ts), on every runtime: Node,
// Deno and Bun all implement node:dns. `lookup` asks the system's resolver (getaddrinfo: the hosts
// file, then DNS), as fetch does when it connects, so the check sees the addresses fetch will be
// given; a DNS-only query (Deno.resolveDns) would miss names the hosts file maps to 127.0.0.1.
import { lookup } from 'node:dns/promises';
import type { ResolveHost } from '../alerts/destination.ts';

/** Every address `name` resolves to, IPv4 and IPv6, in the resolver's order. */
export const resolveHost: ResolveHost = async (name) => {
  const found = await lookup(name, { all: true });
  return found.map((a) => a.address);
};
