// Run as a child process with the garbage collector exposed (test/history-api.test.ts): fills a
// memory store with EXPORT_EVENTS events of about 1 KB of JSON each, exports them through the
// handler while reading the body slowly, collects garbage before each sample, and prints one JSON
// line: how many bytes and lines it read and the most the live heap (plus array buffers) grew.
import { createHandler } from '../../lib/handler.ts';
import { normalise } from '../../lib/event.ts';
import { createMemoryStore } from '../../lib/store/memory.ts';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with the garbage collector exposed (--expose-gc)');
const EVENTS = Number(process.env.EXPORT_EVENTS ?? 200_000);

const store = createMemoryStore({ capacity: EVENTS });
// One string shared by every event: the store holds it once, the export writes it each time.
const pad = 'x'.repeat(800);
const t0 = Date.parse('2026-05-01T00:00:00.000Z');
for (let i = 0; i < EVENTS; i += 1000) {
  const batch = [];
  for (let j = i; j < Math.min(EVENTS, i + 1000); j++) {
    batch.push(normalise({ type: 'custom', id: `m-${j}`, data: { pad } }, { now: t0 + j, owner: 'big' }));
  }
  await store.insert(batch);
}
const handler = createHandler({ store, log: (m) => console.error(m) });

const live = () => {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
const base = live();
const res = await handler(new Request('http://watchtower.test/api/events/export', { headers: { 'x-idp-user-id': 'big' } }));
if (res.status !== 200) throw new Error(`export answered ${res.status}`);
const reader = res.body!.getReader();
let bytes = 0, lines = 0, chunks = 0, maxGrowth = 0;
for (;;) {
  const { done, value } = await reader.read();
  if (done) break;
  bytes += value.byteLength;
  for (const b of value) if (b === 10) lines++;
  // A slow client: the next read only after a turn of the event loop.
  await new Promise((r) => setTimeout(r, 0));
  if (++chunks % 10 === 0) maxGrowth = Math.max(maxGrowth, live() - base);
}
console.log(JSON.stringify({ bytes, lines, chunks, maxGrowth }));
