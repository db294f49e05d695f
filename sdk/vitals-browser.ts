// /sdk/watchtower-vitals.js: reports through window.Watchtower. The two tags may load in either
// order, so reports made before the core is there wait for it.
import { startVitals } from './vitals.ts';

type Core = { record(type: string, data: Record<string, unknown>): void };
const early: [string, Record<string, unknown>][] = [];
const core = () => (window as { Watchtower?: Core }).Watchtower;

function drain() {
  const w = core();
  if (w) for (const [type, data] of early.splice(0)) w.record(type, data);
}

startVitals((type, data) => {
  early.push([type, data]);
  drain();
});
addEventListener('DOMContentLoaded', drain);
addEventListener('load', drain);
