// The group commit in front of the PostgreSQL insert (lib/store/postgres/insert/group-commit.ts), on its
// own: which requests share a statement, in what order, with what bound, and what each is answered.
// The writer here keeps the stored (owner, id)s in a set and answers when told to, so the test
// decides when a statement "commits". The same behaviour against a real server: postgres.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type StoredEvent } from '../lib/event.ts';
import { groupCommit } from '../lib/store/postgres/insert/group-commit.ts';

const ev = (id: string, owner: string | null): StoredEvent =>
  normalise({ type: 'custom', id } as never, { now: Date.now(), owner });
const key = (e: StoredEvent) => `${e.user_id ?? ''}/${e.id}`;

/** A writer whose statements finish when released, recording what each carried. */
function writer() {
  const stored = new Set<string>();
  const statements: { events: StoredEvent[]; finish: (fail?: Error) => void }[] = [];
  const write = (events: StoredEvent[]) =>
    new Promise<Set<StoredEvent>>((resolve, reject) => {
      statements.push({
        events,
        finish: (fail) => {
          if (fail) return reject(fail);
          const fresh = new Set(events.filter((e) => !stored.has(key(e))));
          for (const e of fresh) stored.add(key(e));
          resolve(fresh);
        },
      });
    });
  return { write, statements, stored };
}
const tick = () => new Promise((r) => setTimeout(r, 0));

test('one statement per owner in flight: requests arriving meanwhile are merged into the next, in order', async () => {
  const w = writer();
  const insert = groupCommit(w.write, { maxInflight: 4, maxEvents: 100 });
  const a = insert([ev('1', 'u'), ev('2', 'u')]);
  const b = insert([ev('2', 'u'), ev('3', 'u')]);
  const c = insert([ev('3', 'u'), ev('3', 'u'), ev('4', 'u')]);
  const other = insert([ev('1', 'v')]);
  await tick();
  // u's first request alone; v's beside it (no shared counter rows); u's others wait.
  assert.equal(w.statements.map((s) => s.events.map(key)), [['u/1', 'u/2'], ['v/1']]);
  w.statements[0].finish();
  assert.equal((await a).map(key), ['u/1', 'u/2']);
  await tick();
  // b and c in one statement, each (owner, id) once, the first occurrence kept.
  assert.equal(w.statements[2].events.map(key), ['u/2', 'u/3', 'u/4']);
  w.statements[2].finish();
  assert.equal((await b).map(key), ['u/3'], 'u/2 was stored by a');
  assert.equal((await c).map(key), ['u/4'], 'u/3 went to b, the earlier request');
  w.statements[1].finish();
  assert.equal((await other).map(key), ['v/1']);
});

test('the merged statement is bounded; a request over the bound goes alone; a user\'s order is kept', async () => {
  const w = writer();
  const insert = groupCommit(w.write, { maxInflight: 4, maxEvents: 5 });
  const first = insert([ev('0', 'u')]);
  const batches = [3, 2, 7, 1, 1].map((n, r) => insert(Array.from({ length: n }, (_, i) => ev(`${r}-${i}`, 'u'))));
  await tick();
  assert.is(w.statements.length, 1);
  for (let s = 0; s < 4; s++) {
    w.statements[s].finish();
    await tick();
    await tick();
  }
  // [0], then 3+2 (= 5), then 7 alone, then 1+1.
  assert.equal(w.statements.map((s) => s.events.length), [1, 5, 7, 2]);
  assert.equal(w.statements.flatMap((s) => s.events.map((e) => e.id)).slice(1),
    [3, 2, 7, 1, 1].flatMap((n, r) => Array.from({ length: n }, (_, i) => `${r}-${i}`)));
  await first;
  for (const b of batches) await b;
});

test('a failing statement fails every request merged into it, and the next ones are written', async () => {
  const w = writer();
  const insert = groupCommit(w.write, { maxInflight: 4, maxEvents: 100 });
  const a = insert([ev('a', 'u')]);
  const merged = [insert([ev('b', 'u')]), insert([ev('c', 'u'), ev('d', null)])];
  const settled = Promise.allSettled(merged);
  await tick();
  w.statements[0].finish();
  await a;
  await tick();
  assert.is(w.statements.length, 2);
  w.statements[1].finish(new Error('the statement failed'));
  const results = await settled;
  assert.equal(results.map((r) => r.status), ['rejected', 'rejected']);
  const later = insert([ev('b', 'u')]);
  await tick();
  w.statements[2].finish();
  assert.equal((await later).map(key), ['u/b'], 'nothing of the failed statement was stored');
});

test.run();
