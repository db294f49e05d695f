import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { resolveOwner } from '../lib/owner.ts';

test('the signed-in user wins over everything', () => {
  assert.is(resolveOwner({ authUser: 'u1', defaultOwner: 'd', eventUserId: 'e' }), 'u1');
});
test('the default ingest owner when nobody is signed in', () => {
  assert.is(resolveOwner({ authUser: null, defaultOwner: 'd', eventUserId: 'e' }), 'd');
});
test("an event's own userId is kept when there is neither", () => {
  assert.is(resolveOwner({ authUser: null, defaultOwner: null, eventUserId: 'e' }), 'e');
});
test('otherwise nobody: null', () => {
  assert.is(resolveOwner({ authUser: null, defaultOwner: null, eventUserId: undefined }), null);
  assert.is(resolveOwner({ authUser: null, defaultOwner: null, eventUserId: '' }), null);
  assert.is(resolveOwner({ authUser: null, defaultOwner: null, eventUserId: 42 }), null);
  assert.is(resolveOwner({ authUser: '', defaultOwner: '', eventUserId: null }), null);
});
test.run();
