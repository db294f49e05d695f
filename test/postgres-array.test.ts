// The array literal every PostgreSQL statement binds its columns with (pgArray, lib/store/postgres/
// sql.ts), read back by the server itself: whatever the values hold (quotes, backslashes, commas,
// braces, the word NULL, blanks, any Unicode), the server's array has the same elements. Read back
// as JSON, so that only the server parses the literal.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import postgres from 'postgres';
import { pgArray } from '../lib/store/postgres/sql.ts';
import { ADMIN_URL, postgresAvailable } from './helpers/postgres.ts';
import { seededRandom } from './helpers/seeded.ts';

const PIECES = ['"', '\\', ',', '{', '}', ' ', 'NULL', 'null', '\\"', '""', 'a', 'é', '😀', '\t', '\n', "'", '$1', 'x'];

/** A random text made of the pieces an array literal could trip on. */
function text(rand: () => number): string {
  let s = '';
  for (let n = Math.floor(rand() * 6); n > 0; n--) s += PIECES[Math.floor(rand() * PIECES.length)];
  return s;
}

if (await postgresAvailable('PostgreSQL array literal tests')) {
  const sql = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });

  test('texts and nulls come back from ::text[] as they were given', async () => {
    for (let seed = 1; seed <= 60; seed++) {
      const rand = seededRandom(seed);
      const values = Array.from({ length: Math.floor(rand() * 12) }, () => (rand() < 0.15 ? null : text(rand)));
      const [row] = await sql<{ a: string }[]>`select array_to_json(${pgArray(values)}::text[])::text as a`;
      assert.equal(JSON.parse(row.a), values, `seed ${seed}: ${JSON.stringify(values)}`);
    }
  });

  test('numbers come back from ::float8[] as they were given, beside nulls', async () => {
    const values = [0, -1.5, 1e21, 0.1 + 0.2, null, 1_700_000_000_123, -0.000001];
    const [row] = await sql<{ a: string }[]>`select array_to_json(${pgArray(values)}::float8[])::text as a`;
    assert.equal(JSON.parse(row.a), values);
  });

  test('an empty list is an empty array', async () => {
    const [row] = await sql<{ n: number }[]>`select cardinality(${pgArray([])}::text[]) as n`;
    assert.is(row.n, 0);
  });

  test.after(() => sql.end({ timeout: 2 }));
  test.run();
}
