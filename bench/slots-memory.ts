/**
 * `node --expose-gc dist/bench/slots-memory.js [owners] [plants] [--budget bytes]`: the heap that what a process
 * remembers of owners' slots (adapters/storage/mongodb/owner-slots.ts) holds, measured, beside what its LRU weighs:
 * `owners` owners (default 1,000) grown through one instance from 0 to `plants` plants each (default 10,000, the
 * quota), with the memory budget `--budget` (default 64 MiB, the default of MONGODB_SLOTS_MEMORY_BYTES). The store is
 * an in-memory stand-in that answers every insert `inserted` (one process: no collisions), so that only the states are
 * on the heap. Prints the heap and the weighed bytes at several fills.
 */
import { ownerSlots, type SlotStore } from '../adapters/storage/mongodb/owner-slots.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');
const positional = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && all[i - 1] !== '--budget');
const owners = Number(positional[0] ?? 1000);
const plants = Number(positional[1] ?? 10_000);
const budgetAt = process.argv.indexOf('--budget');
const budget = budgetAt < 0 ? 64 * 1024 * 1024 : Number(process.argv[budgetAt + 1]);

const store: SlotStore = {
  load: async () => [],
  insert: async () => 'inserted',
  find: async () => undefined,
  move: async () => true,
  markers: async () => [{ _id: 'init' }],
  mark: async () => undefined,
  anyPlant: async () => false,
  hint: async () => undefined,
  hints: async () => [],
};
const heap = () => {
  gc();
  gc();
  // A bitset's bytes live in an ArrayBuffer, outside the JS heap proper: both count.
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
};

const before = heap();
const slots = ownerSlots(store, { budgetBytes: budget, fullRecheckMs: 1000 });
const fields = { id: 0n, name: 'p' };
const checkpoints = new Set([1, 10, 100, 1000, 5000, plants]);
console.log(
  `${owners.toLocaleString('en')} owners grown to ${plants.toLocaleString('en')} plants each through one instance, budget ${budget.toLocaleString('en')} bytes`,
);
for (let fill = 1; fill <= plants; fill++) {
  for (let o = 0; o < owners; o++) {
    await slots.insert(`owner-${o}`, plants, BigInt(fill), fields, () => undefined, Date.now() + 60_000);
  }
  if (checkpoints.has(fill)) {
    const used = heap() - before;
    const { bytes, owners: held } = slots.usage();
    console.log(
      `  at ${fill.toLocaleString('en')} plants each: heap and buffers +${(used / 2 ** 20).toFixed(2)} MiB (${Math.round(used / owners)} bytes an owner), weighed ${(bytes / 2 ** 20).toFixed(2)} MiB for ${held.toLocaleString('en')} owners held (${held > 0 ? Math.round(bytes / held) : 0} an owner)`,
    );
  }
}
