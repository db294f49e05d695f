// Store factories beyond memory for suites that run against every store.
import type { Store } from '../../lib/store/types.ts';

export function storeFactories(): (readonly [string, () => Promise<Store>])[] {
  return [];
}
