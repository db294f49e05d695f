// A child process for the kill -9 test of the file record store (test/records.test.ts): puts
// records as fast as it can and prints each one's id once put resolved, until it is killed.
import { nodeFs } from '../../lib/store/fs.ts';
import { openFileRecords } from '../../lib/records/file.ts';

const dir = process.argv[2]!;
const store = await openFileRecords({ dir, fs: nodeFs, compactAtBytes: 4096 });
for (let i = 1; ; i++) {
  // Each record is replaced once, so compactions (the log outgrows 4 KiB often) run mid-stream too.
  await store.put([{ kind: 'k', id: `r${i}`, userId: 'u', body: { i, pad: 'x'.repeat(100) } }]);
  if (i % 2 === 0) await store.put([{ kind: 'k', id: `r${i - 1}`, userId: 'u', body: { i: i - 1, again: true } }]);
  process.stdout.write(`acked ${i}\n`);
}
