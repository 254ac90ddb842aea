/**
 * `node --expose-gc dist/bench/new-owners.js [N] [--budget BYTES] [--clients K] [--postgres] [--adapter <dist>]`:
 * N owners new to one adapter instance (20,000 by default) each create one plant, K at once (16), at the default
 * quota (10,000), with `MONGODB_SLOTS_MEMORY_BYTES` at BYTES (4 MiB): what the process holds of owners must stay
 * within the budget, whatever the number of owners it meets. A create answered 503 is retried after 250 ms (a slow
 * store's look outlives the request, as a client would see it). Prints, after every tenth of the run (no request in
 * flight), the heap and array buffers in use after a full GC over those after the warm-up, and at the end the time,
 * the 503s and the commands a create sent. Each new owner's first create glances at its highest slot: one index key on MongoDB, a scan
 * of the whole collection on FerretDB/SQLite, which has no pushdown for `owner` (docs/storage.md).
 */
import { pino } from 'pino';
import type { Owner, PlantId, PlantName } from '../domain/plant.js';
import { HELD_BYTES } from '../adapters/storage/mongodb/quota.js';
import { adapterOptions, arg, benchStore, loadAdapter } from './storage-bench.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');
const positional = process.argv[2]?.startsWith('--') === false ? process.argv[2] : undefined;
const OWNERS = Number(positional ?? 20_000);
const BUDGET = Number(arg('--budget') ?? 4 * 1024 * 1024);
const CLIENTS = Number(arg('--clients') ?? 16);
const QUOTA = 10_000;
for (const [name, value] of [
  ['N', OWNERS],
  ['--budget', BUDGET],
  ['--clients', CLIENTS],
] as const) {
  if (!Number.isInteger(value) || value < (name === '--budget' ? 0 : 1)) throw new Error(`${name}: ${value}`);
}

const { adapter, dist } = await loadAdapter();
const { server, handler, db, client } = await benchStore('plantstore_owners');
const open = (budget: number) =>
  adapter.mongodbPlantRepository({
    ...adapterOptions(server.uri, db, pino({ level: 'silent' })),
    slotCacheBytes: budget,
    monitorCommands: true,
  });
let store = open(0);
let commands = 0;
const countCommands = () =>
  store.client.on(
    'commandStarted',
    (e: { commandName: string }) => void (e.commandName === 'listIndexes' || commands++),
  );

/** One create of a new owner's first plant, retried on 503 until stored; the 503s it met. */
const createFirst = async (owner: string): Promise<number> => {
  const { repository } = store;
  const plant = { id: 1n as PlantId, name: 'first' as PlantName };
  for (let unavailable = 0; ; unavailable++) {
    const outcome = await repository.insert(owner as Owner, plant, QUOTA)();
    if (outcome._tag === 'Right') {
      // Exists: an attempt answered 503 had stored it (the retry's 200).
      if (outcome.right._tag === 'OwnerFull') throw new Error(`${owner}: refused`);
      return unavailable;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
};

/** Heap and array buffers in use after a full GC: a held owner's bitset is a buffer of its own, outside the heap. */
const used = () => (gc(), process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers);
const MiB = (bytes: number) => (bytes / 2 ** 20).toFixed(2);
try {
  /** Owners `from` to `to` (excluded), K at once, each until stored; the 503s met. */
  const createAll = async (prefix: string, from: number, to: number) => {
    let [next, unavailable] = [from, 0];
    const client = async () => {
      for (let i = next++; i < to; i = next++) unavailable += await createFirst(`${prefix}-${i}`);
    };
    await Promise.all(Array.from({ length: CLIENTS }, client));
    return unavailable;
  };
  // The warm-up: 1,000 owners through an instance holding none, so that the code the run takes is compiled before the
  // baseline; then the measured instance, K owners at once opening its pool's connections (their states are counted).
  await createAll('warm', 0, 1000);
  await store.close();
  store = open(BUDGET);
  await createAll('pool', 0, CLIENTS);
  const before = used();
  const heldAtMost = Math.floor(BUDGET / (Math.ceil(QUOTA / 8) + HELD_BYTES));
  console.log(
    `${OWNERS.toLocaleString('en')} new owners, ${CLIENTS} at once, budget ${MiB(BUDGET)} MiB (${heldAtMost.toLocaleString('en')} owners held at most), FerretDB ${handler}; adapter from ${dist}`,
  );
  countCommands();
  let [unavailable, growth] = [0, 0];
  const started = performance.now();
  // A tenth at a time, measured between tenths: no request in flight then, so that only what is kept is counted.
  for (let tenth = 1; tenth <= 10; tenth++) {
    unavailable += await createAll('new', Math.floor((OWNERS * (tenth - 1)) / 10), Math.floor((OWNERS * tenth) / 10));
    const grown = used() - before;
    growth = Math.max(growth, grown);
    const s = (performance.now() - started) / 1000;
    console.log(
      `  ${Math.floor((OWNERS * tenth) / 10).toLocaleString('en')} owners after ${s.toFixed(0)} s: +${MiB(grown)} MiB`,
    );
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `  all stored in ${seconds.toFixed(0)} s (${(OWNERS / seconds).toFixed(0)} creates/s), ${unavailable} answered 503, ${(commands / OWNERS).toFixed(2)} commands a create; heap and buffers grown at most ${MiB(growth)} MiB, for a budget of ${MiB(BUDGET)} MiB`,
  );
} finally {
  await store.close();
  await client.db(db).dropDatabase();
  await client.close();
  await server.dispose();
}
process.exit(0);
