import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { repair, type RepairStore, type Shared } from '../../adapters/storage/mongodb/repair.js';

/**
 * The repair's decisions over a store it is handed (repair.ts), where an outcome depends on what a running service does
 * during the repair's wait; the repair on a real server is in mongodb-index.test.ts and the storage contract.
 */
const test = suite('the repair of the unique indexes (repair.ts)');

test('a slot index a running service builds during the wait ends the repair without moving a plant', async () => {
  const slotIndex = { built: false };
  const moved: string[] = [];
  const said: string[] = [];
  const plant: Shared<string> = { ref: 'a', owner: 'o', slot: 0, plant: '{}' };
  const store: RepairStore<string> = {
    missing: async () => (slotIndex.built ? [] : ['slot']),
    sharing: async function* () {
      yield [plant, { ...plant, ref: 'b' }]; // what a scan would find if the index were still missing
    },
    delete: async () => true,
    move: async (doc) => moved.push(doc.ref) > 0,
    build: async (key) => key,
    sleep: async () => {
      slotIndex.built = true;
    },
  };
  const outcome = await repair(store, { noticeMs: 1, keepFirst: false, report: (line) => void said.push(line) });
  assert.equal(moved, []);
  assert.equal(outcome, { movedOut: 0, duplicatesDeleted: 0, conflicts: 0, indexesBuilt: [] });
  assert.ok(said.at(-1)?.startsWith('repair done'), said.join('\n'));
});

test.run();
