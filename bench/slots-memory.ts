/**
 * `node --expose-gc dist/bench/slots-memory.js [owners] [plants] [--budget bytes]`: the heap that what a process
 * remembers of owners' slots (adapters/storage/mongodb/owner-slots.ts) holds, measured, beside what it weighs:
 * `owners` owners (default 1,000) grown through one instance from 0 to `plants` plants each (default 10,000, the
 * quota), under the memory budget `--budget` (default 64 MiB, the default of MONGODB_SLOTS_MEMORY_BYTES). The store is
 * an in-memory stand-in that answers every insert `inserted` (one process: no collisions) and a sweep that finds no
 * outside plant, so that only the states are on the heap. Prints the heap and the weighed bytes at several fills.
 */
import { pino } from 'pino';
import { outsidePlants } from '../adapters/storage/mongodb/outside-plants.js';
import { ownerSlots, type SlotStore } from '../adapters/storage/mongodb/owner-slots.js';
import type { PlantId, PlantName } from '../domain/plant.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');
const positional = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && all[i - 1] !== '--budget');
const owners = Number(positional[0] ?? 1000);
const plants = Number(positional[1] ?? 10_000);
const budgetAt = process.argv.indexOf('--budget');
const budget = budgetAt < 0 ? 64 * 1024 * 1024 : Number(process.argv[budgetAt + 1]);

const store: SlotStore = {
  load: async () => [],
  hasOutside: async () => false,
  insert: async () => 'inserted',
  find: async () => undefined,
  move: async (moves) => moves.map(() => true),
  compact: async () => 'empty',
  lock: async () => true,
  unlock: async () => undefined,
  unstore: async () => undefined,
};
const announced = new Map<string, number>();
const outside = outsidePlants(
  {
    announce: async (bound) => {
      announced.set(bound, Date.now());
    },
    announced: async () => [...announced].map(([bound, at]) => ({ bound, at })),
    outsideOwners: async () => new Set(),
    recall: async () => undefined,
    remember: async () => undefined,
  },
  {
    logger: pino({ level: 'silent' }),
    viewMs: 1000,
    heartbeatMs: 10_000,
    expiryMs: 60_000,
    retryMs: 60_000,
    cap: 1000,
  },
);
const heap = () => {
  gc();
  gc();
  // A bitset's bytes live in an ArrayBuffer, outside the JS heap proper: both count.
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
};

const slots = ownerSlots(store, outside, { budgetBytes: budget, fullRecheckMs: 1000 });
await slots.insert(
  'warm-up',
  plants,
  { id: 0n as PlantId, name: 'p' as PlantName },
  () => undefined,
  Date.now() + 60_000,
);
const before = heap();
const checkpoints = new Set([1, 10, 100, 1000, 5000, plants]);
let most = 0;
console.log(
  `${owners.toLocaleString('en')} owners grown to ${plants.toLocaleString('en')} plants each through one instance, budget ${budget.toLocaleString('en')} bytes`,
);
for (let fill = 1; fill <= plants; fill++) {
  for (let o = 0; o < owners; o++) {
    const plant = { id: BigInt(fill) as PlantId, name: 'p' as PlantName };
    await slots.insert(`owner-${o}`, plants, plant, () => undefined, Date.now() + 60_000);
    most = Math.max(most, slots.heldBytes());
  }
  if (checkpoints.has(fill)) {
    const used = heap() - before;
    console.log(
      `  at ${fill.toLocaleString('en')} plants each: heap and buffers +${(used / 2 ** 20).toFixed(2)} MiB (${Math.round(used / owners)} bytes an owner); weighed ${(slots.heldBytes() / 2 ** 20).toFixed(2)} MiB, at most ${(most / 2 ** 20).toFixed(2)} MiB so far`,
    );
  }
}
