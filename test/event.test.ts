import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, uuidv7 } from '../lib/event.ts';

const now = Date.parse('2026-05-16T12:00:00.000Z');

test('normalise: snake_case aliases fold into both shapes', () => {
  const e = normalise({ type: 'pageload', session_id: 's1', app_version: '1.2.0', page_url: 'https://a.test/x' }, { now, owner: 'u1' });
  assert.is(e.sessionId, 's1');
  assert.is(e.session_id, 's1');
  assert.is(e.deployVersion, '1.2.0');
  assert.is(e.app_version, '1.2.0');
  assert.is(e.url, 'https://a.test/x');
  assert.is(e.page_url, 'https://a.test/x');
  assert.is(e.user_id, 'u1');
  assert.is(e.receivedAt, '2026-05-16T12:00:00.000Z');
  assert.is(e.timestamp, e.receivedAt);
  assert.ok(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(e.id));
});

test('uuidv7 ids sort by time', () => {
  assert.ok(uuidv7(1000) < uuidv7(2000));
});
test.run();
