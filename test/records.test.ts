import { createMemoryRecords } from '../lib/records/memory.ts';
import { recordsContract } from './records-contract.ts';

recordsContract('memory', async () => createMemoryRecords());
