import { createHandler } from '../lib/handler.ts';
import { createMemoryRecords } from '../lib/records/memory.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
const records = createMemoryRecords();
await records.put([{ kind: 'project', id: '7', userId: 'pat', body: { name: 'shop' } }]);
const handler = createHandler({ store: createMemoryStore(), records, log: (...a: unknown[]) => console.log('LOG', ...a) });
const r = await handler(new Request('http://x/api/projects', { method: 'POST', headers: { 'x-idp-user-id': 'pat', 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Checkout app' }) }));
console.log(r.status, await r.text());
await handler.close();
