import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { resolveOwner } from '../lib/owner.ts';

const dev = { trustEventUserId: true };

test('the signed-in user wins over everything', () => {
  assert.is(resolveOwner({ authUser: 'u1', projectOwner: 'p', defaultOwner: 'd', eventUserId: 'e', ...dev }), 'u1');
});
test("the project key's owner when nobody is signed in", () => {
  assert.is(resolveOwner({ authUser: null, projectOwner: 'p', defaultOwner: 'd', eventUserId: 'e', ...dev }), 'p');
});
test('the default ingest owner when there is neither', () => {
  assert.is(resolveOwner({ authUser: null, projectOwner: null, defaultOwner: 'd', eventUserId: 'e', ...dev }), 'd');
});
test("an event's own userId only in header-trust development mode", () => {
  assert.is(resolveOwner({ authUser: null, defaultOwner: null, eventUserId: 'e', ...dev }), 'e');
  assert.is(resolveOwner({ authUser: null, defaultOwner: null, eventUserId: 'e' }), null, 'not by default');
  assert.is(resolveOwner({ authUser: null, defaultOwner: null, eventUserId: 'e', trustEventUserId: false }), null);
});
test('otherwise nobody: null', () => {
  assert.is(resolveOwner({ authUser: null, defaultOwner: null, eventUserId: undefined, ...dev }), null);
  assert.is(resolveOwner({ authUser: null, defaultOwner: null, eventUserId: '', ...dev }), null);
  assert.is(resolveOwner({ authUser: null, defaultOwner: null, eventUserId: 42, ...dev }), null);
  assert.is(resolveOwner({ authUser: '', projectOwner: '', defaultOwner: '', eventUserId: null, ...dev }), null);
});
test.run();
