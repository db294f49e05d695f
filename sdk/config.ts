// Options: defaults, `data-*` attributes of the script tag, and the limits the server imposes.
import type { Options, Settings } from './types.ts';

export const DEFAULTS: Settings = {
  endpoint: '',
  sampleRate: 1,
  flushInterval: 2000,
  maxBatch: 50,
  maxQueue: 250,
  respectDoNotTrack: false,
  pageload: true,
  errors: true,
  clicks: true,
  stripQuery: true,
  breadcrumbs: 30,
};

const NUMBERS = ['sampleRate', 'flushInterval', 'maxBatch', 'maxQueue', 'breadcrumbs'];
const FLAGS = ['respectDoNotTrack', 'pageload', 'errors', 'clicks', 'stripQuery'];
const STRINGS = ['endpoint', 'key', 'appName', 'deployVersion', 'environment', 'userId'];

/**
 * Options from a script tag's dataset (`data-app-name` → appName). A flag is on when present
 * (`data-respect-do-not-track`) unless its value is "false" or "0".
 */
export function fromDataset(dataset: Record<string, string | undefined>): Options {
  const out: Record<string, unknown> = {};
  for (const key in dataset) {
    const v = dataset[key]!;
    if (NUMBERS.includes(key) && v.trim() && Number.isFinite(+v)) out[key] = +v;
    else if (FLAGS.includes(key)) out[key] = v != 'false' && v != '0';
    else if (STRINGS.includes(key)) out[key] = v;
  }
  return out as Options;
}

/** Merges options over settings, ignoring undefined, and keeps numbers within sane bounds. */
export function settle(base: Settings, options: Options): Settings {
  const s = { ...base } as Record<string, unknown>;
  for (const key in options) {
    const v = (options as Record<string, unknown>)[key];
    if (v !== undefined) s[key] = v;
  }
  const out = s as Settings;
  const num = (v: number, lo: number, hi: number, dflt: number) => (typeof v == 'number' && v >= lo ? Math.min(v, hi) : dflt);
  out.sampleRate = num(out.sampleRate, 0, 1, 1);
  out.flushInterval = num(out.flushInterval, 0, 60_000, DEFAULTS.flushInterval);
  out.maxBatch = Math.floor(num(out.maxBatch, 1, 50, DEFAULTS.maxBatch));
  out.maxQueue = Math.floor(num(out.maxQueue, 1, 10_000, DEFAULTS.maxQueue));
  out.breadcrumbs = Math.floor(num(out.breadcrumbs, 0, 100, DEFAULTS.breadcrumbs));
  out.endpoint = String(out.endpoint ?? '').replace(/\/+$/, '');
  return out;
}
