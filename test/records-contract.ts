// The record store contract (lib/records/types.ts): every record store runs these assertions.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { RecordConflictError, type RecordStore } from '../lib/records/types.ts';

export function recordsContract(name: string, factory: () => Promise<RecordStore>) {
  const t = suite(`record store contract: ${name}`);
  const opened: RecordStore[] = [];
  const open = async () => {
    const s = await factory();
    opened.push(s);
    return s;
  };
  t.after.each(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close().catch(() => {})));
  });

  t('put, get, list and delete are scoped to the owner', async () => {
    const s = await open();
    await s.put([
      { kind: 'project', id: '1', userId: 'a', body: { name: 'one', n: [1, 2] } },
      { kind: 'project', id: '2', userId: 'b', body: { name: 'two' } },
      { kind: 'issue', id: '1', userId: 'a', body: { title: 'é😀 <b>' } },
    ]);
    assert.equal(await s.get('project', '1', 'a'), { kind: 'project', id: '1', userId: 'a', body: { name: 'one', n: [1, 2] } });
    assert.is(await s.get('project', '1', 'b'), null, "another user's record reads as missing");
    assert.is(await s.get('project', '9', 'a'), null);
    assert.equal((await s.find('project', '2'))?.userId, 'b');
    assert.equal((await s.list('project', 'a')).map((r) => r.id), ['1']);
    assert.equal((await s.list('issue', 'a')).map((r) => r.body), [{ title: 'é😀 <b>' }]);
    assert.equal(await s.list('alert', 'a'), []);
    assert.is(await s.delete('project', '2', 'a'), false, "nobody deletes another user's record");
    assert.is(await s.delete('project', '1', 'a'), true);
    assert.is(await s.delete('project', '1', 'a'), false);
    assert.is(await s.get('project', '1', 'a'), null);
    assert.ok(await s.find('project', '2'));
  });

  t('put replaces by kind and id; a record of another owner is never replaced, and the batch is all or none', async () => {
    const s = await open();
    await s.put([{ kind: 'k', id: 'x', userId: 'a', body: 1 }]);
    await s.put([{ kind: 'k', id: 'x', userId: 'a', body: 2 }]);
    assert.equal((await s.get('k', 'x', 'a'))?.body, 2);
    try {
      await s.put([{ kind: 'k', id: 'y', userId: 'a', body: 3 }, { kind: 'k', id: 'x', userId: 'b', body: 4 }]);
      assert.unreachable('a conflicting put must reject');
    } catch (e) {
      assert.instance(e, RecordConflictError);
    }
    assert.equal((await s.get('k', 'x', 'a'))?.body, 2);
    assert.is(await s.get('k', 'y', 'a'), null, 'nothing of a rejected batch is stored');
  });

  t('records are copies: changing an object after put or get changes nothing stored', async () => {
    const s = await open();
    const body = { list: [1] };
    await s.put([{ kind: 'k', id: 'c', userId: 'a', body }]);
    body.list.push(2);
    const got = await s.get<{ list: number[] }>('k', 'c', 'a');
    got!.body.list.push(3);
    assert.equal((await s.get('k', 'c', 'a'))?.body, { list: [1] });
  });

  t('blobs: put, get whole, delete', async () => {
    const s = await open();
    const bytes = new Uint8Array(300_000).map((_, i) => i % 251);
    await s.putBlob('maps/1', bytes);
    assert.equal(await s.getBlob('maps/1'), bytes);
    assert.is(await s.getBlob('maps/2'), null);
    await s.deleteBlob('maps/1');
    assert.is(await s.getBlob('maps/1'), null);
    await s.deleteBlob('maps/1');
  });

  t.run();
}
