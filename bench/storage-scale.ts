/**
 * `npm run bench:storage-scale [-- --postgres] [--plants N] [--big N] [--recheck MS] [--adapter <dist>] [--smoke]`:
 * what the MongoDB adapter's start-up, index rebuild and pages cost on a large collection, on one FerretDB (SQLite
 * handler, or PostgreSQL with `--postgres`). Seeds `--plants` documents (default 120,000) in bulk straight through the
 * driver: one owner of `--big` plants (default 50,000), the rest owners of 1,000; then prints
 * - what each command the index upkeep may send costs on that collection (timed through the bare driver);
 * - a page of the big owner at several limits and positions, through the adapter (`repository.page`);
 * - a restart: a new adapter instance (a process just started) until its readiness check (`ping`, what `/readyz`
 *   asks) answers;
 * - the slot index dropped under a running adapter (its index check every `--recheck` ms, default 5,000; a service
 *   checks every 30 s) while 4 clients create plants under the default quota for owners of their own and one client
 *   pages: when the drop is noticed, when the index is listed again, when creates are stored again, and every
 *   outcome counted.
 * `--adapter` loads the adapter from another build's dist/ (say main before a change) to compare. `--smoke` seeds
 * 1,000 plants and shortens every wait (test/bench/storage-scale-smoke.test.ts runs it so, in seconds).
 */
import { ObjectId } from 'mongodb';
import { pino } from 'pino';
import type { Logger } from '../application/ports/logger.js';
import type { PlantRepository } from '../application/ports/plant-repository.js';
import type { Owner, Plant, PlantId, PlantName } from '../domain/plant.js';
import { adapterOptions, arg, benchStore, loadAdapter } from './storage-bench.js';

const smoke = process.argv.includes('--smoke');
const PLANTS = Number(arg('--plants') ?? (smoke ? 1000 : 120_000));
const BIG = Number(arg('--big') ?? (smoke ? 500 : 50_000));
const RECHECK_MS = Number(arg('--recheck') ?? (smoke ? 200 : 5000));
/** How long the drop scenario waits for creates to be stored again before it gives up (and says so). */
const GIVE_UP_MS = smoke ? 20_000 : 120_000;
const QUOTA = 10_000;
for (const [name, value] of [
  ['--plants', PLANTS],
  ['--big', BIG],
  ['--recheck', RECHECK_MS],
] as const) {
  if (!(Number.isInteger(value) && value > 0)) throw new Error(`${name} must be a positive integer`);
}
if (BIG > PLANTS) throw new Error('--big must be at most --plants');

const SLOT_INDEX_PREFIX = 'owner_1_slot_1_unique';

const { adapter, dist } = await loadAdapter();
const { server, handler, db, client, collection } = await benchStore('plantstore_scale');
/** What the adapter logs (warn and above), with the time since the bench started, for the drop scenario's story. */
const started = performance.now();
const logged: string[] = [];
const logger: Logger = pino(
  { level: 'info' },
  {
    write: (line: string) => {
      const { level, msg } = JSON.parse(line) as { level: number; msg: string };
      logged.push(
        `${((performance.now() - started) / 1000).toFixed(1)} s ${level >= 50 ? 'error' : level >= 40 ? 'warn' : 'info'}: ${msg}`,
      );
    },
  },
);
const openAdapter = (indexRecheckMs?: number) =>
  adapter.mongodbPlantRepository({
    ...adapterOptions(server.uri, db, logger),
    ...(indexRecheckMs === undefined ? {} : { indexRecheckMs }),
  });

const ms = (t0: number) => Math.round(performance.now() - t0);
const timed = async <A>(label: string, run: () => Promise<A>): Promise<A> => {
  const t0 = performance.now();
  try {
    const a = await run();
    console.log(`  ${label}: ${ms(t0)} ms`);
    return a;
  } catch (e) {
    console.log(`  ${label}: failed after ${ms(t0)} ms (${e instanceof Error ? e.message : String(e)})`);
    return undefined as A;
  }
};
const slotIndexes = async () =>
  (await collection.listIndexes().toArray())
    .map((i) => String(i['name']))
    .filter((n) => n.startsWith(SLOT_INDEX_PREFIX));

const BIG_OWNER = 'scale-big';
const smallOwner = (i: number) => `scale-${i}`;

/** The plants, as the adapter stores them (slots 0..n-1 of each owner), in batches of 10,000 through the driver. */
const seed = async () => {
  const docs: Array<Record<string, unknown>> = [];
  const flush = async () => {
    if (docs.length > 0) await collection.insertMany(docs.splice(0), { ordered: false });
  };
  for (let i = 0; i < BIG; i++) {
    docs.push({ owner: BIG_OWNER, id: BigInt(i + 1), name: `plant ${i + 1}`, slot: i });
    if (docs.length >= 10_000) await flush();
  }
  for (let i = 0; i < PLANTS - BIG; i++) {
    docs.push({
      owner: smallOwner(Math.floor(i / 1000)),
      id: BigInt((i % 1000) + 1),
      name: `plant ${i}`,
      slot: i % 1000,
    });
    if (docs.length >= 10_000) await flush();
  }
  await flush();
};

const aPlant = (id: bigint): Plant => ({ id: id as PlantId, name: `plant ${id}` as PlantName });

/** Polls the readiness check until it answers, or `withinMs`; the time it took, or undefined. */
const readyWithin = async (repository: PlantRepository, withinMs: number): Promise<number | undefined> => {
  const t0 = performance.now();
  while (performance.now() - t0 < withinMs) {
    if ((await repository.ping())._tag === 'Right') return ms(t0);
    await new Promise((r) => setTimeout(r, 50));
  }
  return undefined;
};

try {
  console.log(
    `storage at scale: FerretDB ${handler}, ${PLANTS.toLocaleString('en')} plants (one owner of ${BIG.toLocaleString('en')}); adapter from ${dist}`,
  );
  // The indexes as a service made them, then the plants.
  const first = openAdapter();
  if ((await readyWithin(first.repository, 30_000)) === undefined) throw new Error('the empty store never got ready');
  await first.close();
  await timed(`seeded ${PLANTS.toLocaleString('en')} plants (insertMany of 10,000)`, seed);

  console.log('commands on the collection, through the bare driver:');
  await timed('listIndexes', () => collection.listIndexes().toArray());
  await timed('find({_id}) (an exact _id)', () => collection.findOne({ _id: 'none' as never }));
  await timed('find({slot: null}).limit(1000) (the mend of plants without a slot)', () =>
    collection.find({ slot: null }, { projection: { _id: 1 }, limit: 1000 }).toArray(),
  );
  await timed('deleteMany of the previous version’s sentinel owner', () =>
    collection.deleteMany({ owner: '\u0001plant-store:unique-index-sentinel' }),
  );
  await timed('find({}).sort({owner, slot}), every document (the mend of shared slots)', async () => {
    let n = 0;
    for await (const _ of collection
      .find({}, { projection: { _id: 1, owner: 1, slot: 1 } })
      .sort({ owner: 1, slot: 1 })
      .allowDiskUse(true)) {
      n++;
    }
    return n;
  });
  await timed('updateOne({_id}) (a slot move)', () =>
    collection.updateOne({ _id: new ObjectId() }, { $set: { slot: 1 } }),
  );
  await timed('updateOne({_id, slot: null}) (the mend’s write)', () =>
    collection.updateOne({ _id: new ObjectId(), slot: null }, { $set: { slot: 1 } }),
  );
  for (const [owner, plants] of [
    [BIG_OWNER, BIG],
    [smallOwner(0), 1000],
  ] as const) {
    for (const limit of [1, 1000]) {
      for (const [where, after] of [
        ['first page', undefined],
        ['middle', BigInt(Math.floor(plants / 2))],
      ] as const) {
        await timed(`a page of an owner of ${plants.toLocaleString('en')} plants, limit ${limit}, ${where}`, () =>
          collection
            .find(after === undefined ? { owner } : { owner, id: { $gt: after } }, { projection: { _id: 0 } })
            .sort({ id: 1 })
            .limit(limit + 1)
            .batchSize(limit + 1)
            .toArray(),
        );
      }
    }
  }
  await timed('find({owner}) of a 1,000-plant owner (the load of its slots)', () =>
    collection.find({ owner: smallOwner(0) }, { projection: { _id: 1, slot: 1 } }).toArray(),
  );
  const slotIndex = (await slotIndexes())[0];
  if (slotIndex !== undefined) {
    await timed('dropIndex (the slot index)', () => collection.dropIndex(slotIndex));
    await timed('createIndex({owner: 1, slot: 1}, unique) over the collection', () =>
      collection.createIndex({ owner: 1, slot: 1 }, { unique: true, name: slotIndex }),
    );
  }

  console.log(`a page of the owner of ${BIG.toLocaleString('en')} plants, through the adapter:`);
  {
    const store = openAdapter();
    try {
      if ((await readyWithin(store.repository, 60_000)) === undefined) console.log('  (never ready)');
      for (const limit of [1, 100, 1000]) {
        for (const [where, after] of [
          ['first page', undefined],
          ['middle', BigInt(Math.floor(BIG / 2)) as PlantId],
        ] as const) {
          const t0 = performance.now();
          const page = await store.repository.page(BIG_OWNER as Owner, after, limit)();
          console.log(
            `  limit ${limit}, ${where}: ${ms(t0)} ms${page._tag === 'Left' ? ' (503: storage unavailable)' : ` (${page.right.plants.length} plants)`}`,
          );
        }
      }
    } finally {
      await store.close();
    }
  }

  console.log('a restart (a new adapter instance, as a process just started):');
  {
    const store = openAdapter();
    try {
      const ready = await readyWithin(store.repository, 60_000);
      console.log(`  ready (ping answers) after: ${ready === undefined ? 'not within 60 s' : `${ready} ms`}`);
    } finally {
      await store.close();
    }
  }

  console.log(
    `the slot index dropped under a running adapter (index check every ${RECHECK_MS} ms), 4 clients creating, 1 paging:`,
  );
  {
    const store = openAdapter(RECHECK_MS);
    const counts = { stored: 0, unavailable: 0, other: 0, pages: 0, pagesUnavailable: 0 };
    /** Creates stored after the drop while no slot index was listed: admitted without the index guarding. */
    let storedWhileMissing = 0;
    /** The longest time after the drop without a stored create. */
    let longestStall = 0;
    let lastStoredAt = 0;
    let firstUnavailable: number | undefined;
    let backAt: number | undefined;
    let storedAgainAt: number | undefined;
    let listedAt: number | undefined;
    let droppedAt = 0;
    let stop = false;
    try {
      if ((await readyWithin(store.repository, 60_000)) === undefined) throw new Error('never ready before the drop');
      let next = 1_000_000n;
      const creators = Array.from({ length: 4 }, async (_, c) => {
        while (!stop) {
          const outcome = await store.repository.insert(smallOwner(c) as Owner, aPlant(next++), QUOTA)();
          const at = performance.now();
          if (outcome._tag === 'Left') {
            counts.unavailable++;
            firstUnavailable ??= droppedAt > 0 ? at : undefined;
            await new Promise((r) => setTimeout(r, 20));
          } else if (outcome.right._tag === 'Inserted') {
            counts.stored++;
            if (droppedAt > 0) {
              longestStall = Math.max(longestStall, at - Math.max(lastStoredAt, droppedAt));
              if (listedAt === undefined) storedWhileMissing++;
              else storedAgainAt ??= at;
            }
            lastStoredAt = at;
          } else counts.other++;
        }
      });
      const pager = (async () => {
        while (!stop) {
          const page = await store.repository.page(smallOwner(10) as Owner, undefined, 100)();
          counts.pages++;
          if (page._tag === 'Left') counts.pagesUnavailable++;
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      await new Promise((r) => setTimeout(r, smoke ? 200 : 1000));
      const before = { ...counts };
      const name = (await slotIndexes())[0];
      if (name === undefined) throw new Error('no slot index to drop');
      droppedAt = performance.now();
      await collection.dropIndex(name);
      while (performance.now() - droppedAt < GIVE_UP_MS) {
        if (listedAt === undefined && (await slotIndexes()).length > 0) listedAt = performance.now();
        // Done once the index is back and creates are stored again (after their 503s, if there were any).
        if (storedAgainAt !== undefined) {
          backAt ??= performance.now();
          if (performance.now() - backAt > (smoke ? 200 : 1000)) break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      stop = true;
      await Promise.all([...creators, pager]);
      const since = (t: number | undefined) => (t === undefined ? 'never' : `${((t - droppedAt) / 1000).toFixed(1)} s`);
      console.log(
        `  before the drop: ${before.stored} stored, ${before.unavailable} 503; after it (${((performance.now() - droppedAt) / 1000).toFixed(1)} s): ${counts.stored - before.stored} stored, ${counts.unavailable - before.unavailable} 503, ${counts.other} other`,
      );
      console.log(
        `  first 503 after the drop: ${since(firstUnavailable)}; slot index listed again: ${since(listedAt)}; first create stored after that: ${since(storedAgainAt)}; longest time without a stored create: ${(longestStall / 1000).toFixed(1)} s`,
      );
      console.log(
        `  creates stored while no slot index was listed (the index not guarding): ${storedWhileMissing}; pages after the drop: ${counts.pages - before.pages}, of them 503: ${counts.pagesUnavailable - before.pagesUnavailable}`,
      );
    } finally {
      stop = true;
      await store.close();
    }
  }
  console.log('what the adapters logged:');
  for (const line of logged) console.log(`  ${line.length > 400 ? `${line.slice(0, 400)}…` : line}`);
} finally {
  await client
    .db(db)
    .dropDatabase()
    .catch(() => undefined);
  await client.close();
  await server.dispose();
}
process.exit(0);
