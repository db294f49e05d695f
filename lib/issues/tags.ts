// Tag distributions of an issue: how its events split by browser, system, device, release,
// environment, page and country. An issue is rewritten on every slice of events, so each tag keeps
// at most TAG_VALUES values, each with the exact count of its events since it took its place. A
// new value takes a place when one is free, else the place of the least counted value, whose events
// move to `other` (then `truncated` shows on the tag): values that keep coming (a new release, a
// page everyone visits) stay, one-off values come and go, and the counts always add up to the
// events that carried the tag.
import { routeKey, UNKNOWN } from '../event-keys.ts';
import { environmentOf as storedEnvironment } from '../event-fields.ts';

export const TAG_NAMES = ['browser', 'os', 'device', 'release', 'environment', 'page', 'country'] as const;
export type TagName = (typeof TAG_NAMES)[number];
/** Values counted per tag; the others' events are counted in `other`. */
export const TAG_VALUES = 20;
/** Longest value kept: longer ones are cut, so that a hostile value cannot grow the issue. */
export const TAG_VALUE_LENGTH = 80;

/** One tag: `[value, events]` in the order first seen, and the events of values past the bound. */
export interface TagCount {
  values: [string, number][];
  other: number;
}
export type IssueTags = Partial<Record<TagName, TagCount>>;
export type EventTags = Partial<Record<TagName, string>>;

/** The fields of a stored event tags are read from; custom fields may hold anything. */
export interface TaggedEvent {
  deployVersion: string | null;
  route: string | null;
  url: string | null;
  page_url: string | null;
  client?: unknown;
  environment?: unknown;
  userId?: unknown;
}

const text = (v: unknown, max = TAG_VALUE_LENGTH): string | null =>
  typeof v === 'string' && v !== '' ? v.slice(0, max) : null;

/** An event's environment as ingest keeps it (lib/event-fields.ts), else null. */
export const environmentOf = (e: object): string | null => storedEnvironment((e as { environment?: unknown }).environment);

/** The tags of one event (absent: the event does not say). Pure. */
export function eventTags(e: TaggedEvent): EventTags {
  const client = typeof e.client === 'object' && e.client !== null ? (e.client as Record<string, unknown>) : {};
  const out: EventTags = {};
  const put = (name: TagName, v: string | null) => {
    if (v !== null) out[name] = v;
  };
  put('browser', text(client.browser));
  put('os', text(client.os));
  put('device', text(client.device));
  put('release', text(e.deployVersion));
  put('environment', environmentOf(e));
  const page = e.route || e.url || e.page_url ? routeKey(e) : UNKNOWN;
  put('page', page === UNKNOWN ? null : text(page));
  const country = client.country;
  put('country', typeof country === 'string' && /^[A-Z]{2}$/.test(country) ? country : null);
  return out;
}

/** An event's user: its own `userId` field when a non-empty string, else null. */
export function eventUser(e: { userId?: unknown }): string | null {
  return typeof e.userId === 'string' && e.userId !== '' ? e.userId : null;
}

/** Copies the tags so that addTags can change the copy. */
export const copyTags = (tags: IssueTags | undefined): IssueTags => {
  const out: IssueTags = {};
  for (const name of TAG_NAMES) {
    const t = tags?.[name];
    if (t) out[name] = { values: t.values.map(([v, n]): [string, number] => [v, n]), other: t.other };
  }
  return out;
};

/** Counts one event's tags into `tags` (mutated). */
export function addTags(tags: IssueTags, event: EventTags): void {
  for (const name of TAG_NAMES) {
    const value = event[name];
    if (value === undefined) continue;
    const t = (tags[name] ??= { values: [], other: 0 });
    const known = t.values.find(([v]) => v === value);
    if (known) known[1]++;
    else {
      if (t.values.length >= TAG_VALUES) {
        let least = 0;
        for (let i = 1; i < t.values.length; i++) if (t.values[i][1] < t.values[least][1]) least = i;
        t.other += t.values[least][1];
        t.values.splice(least, 1);
      }
      t.values.push([value, 1]);
    }
  }
}

/** Whether the issue's counted values of `name` include `value`. */
export const hasTag = (tags: IssueTags | undefined, name: TagName, value: string): boolean =>
  tags?.[name]?.values.some(([v]) => v === value) ?? false;

/** The distributions as the API shows them: every tag, values by count (ties by first seen). */
export function publicTags(tags: IssueTags | undefined): Record<TagName, { values: { value: string; count: number }[]; other: number; truncated: boolean; total: number }> {
  const out = {} as ReturnType<typeof publicTags>;
  for (const name of TAG_NAMES) {
    const t = tags?.[name] ?? { values: [], other: 0 };
    const values = t.values.map(([value, count]) => ({ value, count })).sort((a, b) => b.count - a.count);
    out[name] = { values, other: t.other, truncated: t.other > 0, total: values.reduce((s, v) => s + v.count, t.other) };
  }
  return out;
}
