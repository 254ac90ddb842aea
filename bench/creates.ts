/**
 * `npm run bench:creates [-- --postgres] [--seconds N] [--rounds N] [--adapter <dist>]`: creates per second through
 * the MongoDB adapter with the default quota (10,000 per owner), side by side with the bare driver's `insertOne` of
 * the same document into the same collection, on one FerretDB (SQLite handler, or PostgreSQL with `--postgres`),
 * 16 concurrent clients, for an owner with no plants and for one at 75% of its quota, held by the process and not held
 * (its memory budget full: each create glances at the owner's highest slot first); the adapter's creates rotate over
 * such owners, 24% of the quota each (2,400), so that none reaches its quota. Rounds alternate (driver,
 * adapter, driver, adapter...) in one collection, so both see the same collection size. `--quota N`, `--owners N`
 * (per case; default 32 empty ones and 10 at 75%) and `--clients N` shrink it (test/bench/creates-smoke.test.ts runs
 * it in a few seconds that way); each client makes at least one create per round. `--adapter`
 * loads the adapter from another build's dist/ (say, the tree before a change) to compare. Each round opens a new
 * adapter instance, as a process just started, and makes each owner's first create before the clock runs (one load
 * of its slots; its time is printed apart). Prints medians.
 *
 * `--one-owner`: one owner (quota 2,000 unless `--quota`), 1, 16 and then 32 creates at once through one adapter
 * instance until the owner is 75% full, beside the bare driver's insertOne with as many at once; counts the creates
 * answered 503 (the bench of an integrator importing plants in parallel). The owner's first create, a glance at its
 * highest slot, is made before the clock runs and timed apart. Prints the commands and reply bytes per create too.
 * `--instances N`: the creates spread over N adapter instances (as processes); `--not-held`: a budget of one byte.
 *
 * `--fills`: one create at a time into owners at 10, 500 and 999 of 1,000, held and not held: commands and reply bytes.
 *
 * `--storm N`: N plants stored in owners of 5,000, then a new adapter instance (a process just restarted) and
 * `--creators K` (default 6) of those owners each creating one plant at once, retrying every 250 ms on 503: the time
 * until all are stored, and the 503s. `--replace`: an owner at its bound of 10,000 deleting a plant and creating one
 * through three adapter instances in turn (each request to a random one): commands and bytes read per create.
 */
import { randomInt } from 'node:crypto';
import { BSON, ObjectId } from 'mongodb';
import { pino } from 'pino';
import type { PlantRepository } from '../application/ports/plant-repository.js';
import type { Owner, Plant, PlantId, PlantName } from '../domain/plant.js';
import { adapterOptions, arg, benchStore, loadAdapter, seedOwner } from './storage-bench.js';

const seconds = Number(arg('--seconds') ?? 5);
const rounds = Number(arg('--rounds') ?? 3);
const CLIENTS = Number(arg('--clients') ?? 16);
const ONE_OWNER = process.argv.includes('--one-owner');
const NOT_HELD = process.argv.includes('--not-held');
const FILLS = process.argv.includes('--fills');
const INSTANCES = Number(arg('--instances') ?? 1);
const QUOTA = Number(arg('--quota') ?? (ONE_OWNER ? 2000 : 10_000));
const OWNERS = arg('--owners');
for (const [name, value] of [
  ['--seconds', seconds],
  ['--rounds', rounds],
  ['--clients', CLIENTS],
  ['--quota', QUOTA],
  ['--owners', Number(OWNERS ?? 1)],
] as const) {
  if (!(value > 0) || (name !== '--seconds' && !Number.isInteger(value))) {
    throw new Error(`${name} must be a positive ${name === '--seconds' ? 'number' : 'integer'}`);
  }
}

const { adapter, dist } = await loadAdapter();
const { server, handler, db, client, collection } = await benchStore('plantstore_bench');
/** An adapter instance; `held: false` gives it a budget too small to hold any owner (each create glances at it). */
const openAdapter = (held: boolean) =>
  adapter.mongodbPlantRepository({
    ...adapterOptions(server.uri, db, pino({ level: 'silent' })),
    ...(held ? {} : { slotCacheBytes: 1 }),
  });

const seed = (owner: string, n: number) => seedOwner(collection, owner, n);

/**
 * Creates of one target within a round, rotating over its owners: each takes `PER_OWNER` creates, then the next
 * one, so that the fill stays between the case's and that plus `PER_OWNER` (the quota is never reached).
 */
const PER_OWNER = Math.max(1, Math.floor((QUOTA * 24) / 100));
/** Owners per case: an empty one costs nothing to prepare; one at 75% costs 7,500 plants to seed. */
const ownersFor = (fill: number) => (OWNERS !== undefined ? Number(OWNERS) : fill === 0 ? 32 : 10);

/**
 * `CLIENTS` loops creating distinct plants for `seconds` (each at least one), or until `room` creates are taken (the
 * owners' room, when the parameters are small); creates per second that were stored, over the time it ran.
 */
const drive = async (
  create: (owner: number, id: bigint) => Promise<boolean>,
  secs = seconds,
  room = Number.POSITIVE_INFINITY,
): Promise<{ rate: number; failed: number; outOfRoom: boolean }> => {
  let next = 0;
  let stored = 0;
  let failed = 0;
  const until = performance.now() + secs * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      do {
        const n = next++;
        if (n >= room) return;
        if (await create(Math.floor(n / PER_OWNER), BigInt(1_000_000 + n))) stored++;
        else failed++;
      } while (performance.now() < until);
    }),
  );
  return { rate: stored / ((performance.now() - started) / 1000), failed, outOfRoom: next > room };
};

/** The bare driver has no quota to run into: its owners take turns all the same, without plants of their own. */
const bare = (owners: readonly string[]) => (owner: number, id: bigint) =>
  collection
    .insertOne(
      {
        _id: new ObjectId(),
        owner: owners[owner % owners.length],
        id,
        name: `plant ${id}`,
        slot: 2 ** 48 + randomInt(2 ** 47),
      },
      { writeConcern: { w: 'majority', journal: true, wtimeoutMS: 2000 } },
    )
    .then(
      () => true,
      () => false,
    );
const viaAdapter = (repository: PlantRepository, owners: readonly string[]) => async (owner: number, id: bigint) => {
  const plant: Plant = { id: id as PlantId, name: `plant ${id}` as PlantName };
  const outcome = await repository.insert(owners[owner] as Owner, plant, QUOTA)();
  return outcome._tag === 'Right' && outcome.right._tag === 'Inserted';
};

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

/** Commands and reply bytes an adapter instance's client sends and reads. */
const metered = (c: { on: (e: string, f: (ev: { reply?: unknown; commandName?: string }) => void) => void }) => {
  const m = { commands: 0, bytes: 0 };
  c.on('commandStarted', (e) => void (e.commandName === 'listIndexes' || m.commands++));
  c.on('commandSucceeded', (e) => void (m.bytes += BSON.calculateObjectSize(e.reply as BSON.Document)));
  return m;
};
/** One owner filled to 75% by `clients` creates at once: creates stored per second, and how many answered 503. */
const oneOwner = async (clients: number, round: number) => {
  const owner = `bench-one-${clients}-${round}` as Owner;
  const stores = Array.from({ length: INSTANCES }, () =>
    adapter.mongodbPlantRepository({
      ...adapterOptions(server.uri, db, pino({ level: 'silent' })),
      ...(NOT_HELD ? { slotCacheBytes: 1 } : {}),
      monitorCommands: true,
    }),
  );
  const store = stores[0] as (typeof stores)[number];
  const meters = stores.map((st) => metered(st.client));
  const meter = {
    get commands() {
      return meters.reduce((sum, m) => sum + m.commands, 0);
    },
    get bytes() {
      return meters.reduce((sum, m) => sum + m.bytes, 0);
    },
    reset: () => meters.forEach((m) => ([m.commands, m.bytes] = [0, 0])),
  };
  const driverOwner = `bench-one-driver-${clients}-${round}`;
  const target = Math.floor((QUOTA * 3) / 4);
  const loop = async (create: (id: bigint) => Promise<'ok' | '503' | 'other'>) => {
    let next = 0;
    const tally = { ok: 0, unavailable: 0, other: 0 };
    const started = performance.now();
    await Promise.all(
      Array.from({ length: clients }, async () => {
        for (let n = next++; n < target; n = next++) {
          const r = await create(BigInt(1_000_000 + n));
          if (r === 'ok') tally.ok++;
          else if (r === '503') tally.unavailable++;
          else tally.other++;
        }
      }),
    );
    return { rate: tally.ok / ((performance.now() - started) / 1000), ...tally };
  };
  try {
    const d = await loop((id) => bare([driverOwner])(0, id).then((ok) => (ok ? ('ok' as const) : ('503' as const))));
    // Timed apart, as a process's first create of an owner: a glance at its highest slot, which on MongoDB reads one
    // index key and on FerretDB scans the collection (growing with the rounds); the creates at once then share none.
    const t0 = performance.now();
    const first = { id: 999_999n as PlantId, name: 'first' as PlantName };
    while ((await store.repository.insert(owner, first, QUOTA)())._tag === 'Left')
      if (performance.now() - t0 > 20_000) break;
    for (const other of stores.slice(1)) await other.repository.insert(owner, first, QUOTA)(); // each holds the owner
    const firstMs = performance.now() - t0;
    meter.reset();
    const a = await loop(async (id) => {
      const outcome = await (stores[Number(id % BigInt(INSTANCES))] as typeof store).repository.insert(
        owner,
        { id: id as PlantId, name: `plant ${id}` as PlantName },
        QUOTA,
      )();
      return outcome._tag === 'Left' ? '503' : outcome.right._tag === 'Inserted' ? 'ok' : 'other';
    });
    console.log(
      `  ${clients} at once, round ${round}: bare insertOne ${d.rate.toFixed(0)}/s, adapter ${a.rate.toFixed(0)}/s (${a.ok} stored, ${a.unavailable} answered 503, ${a.other} other), adapter/driver ${(a.rate / d.rate).toFixed(2)}, ${(meter.commands / a.ok).toFixed(2)} commands and ${Math.round(meter.bytes / a.ok)} B read a create; the owner's first create before, ${Math.round(firstMs)} ms`,
    );
  } finally {
    for (const st of stores) await st.close();
  }
};

const STORM = arg('--storm');
const REPLACE = process.argv.includes('--replace');
if (STORM !== undefined || REPLACE) {
  try {
    const owners = REPLACE ? 1 : Math.ceil(Number(STORM) / 5000);
    const per = REPLACE ? 10_000 : 5000;
    for (let o = 0; o < owners; o++) await seed(`storm-${o}`, per);
    console.log(`${owners * per} plants in ${owners} owners of ${per}, FerretDB ${handler}; adapter from ${dist}`);
    const open = () =>
      adapter.mongodbPlantRepository({
        ...adapterOptions(server.uri, db, pino({ level: 'silent' })),
        ...(REPLACE ? { timeoutMs: 10_000 } : {}), // bytes and commands, not FerretDB's scans, are measured there
        monitorCommands: true,
      });
    if (REPLACE) {
      const stores = [open(), open(), open()];
      const meters = stores.map((st) => metered(st.client as never));
      const pick = () => stores[randomInt(3)] as (typeof stores)[number];
      const owner = 'storm-0' as Owner;
      for (const st of stores) await st.repository.ping(); // connected, indexes checked
      let createsMeasured = 0;
      let createsBytes = 0;
      let createsCommands = 0;
      const sum = () =>
        meters.reduce((a, m) => ({ commands: a.commands + m.commands, bytes: a.bytes + m.bytes }), {
          commands: 0,
          bytes: 0,
        });
      let victim = 0;
      for (let i = 0; i < 200; i++) {
        await pick().repository.remove(owner, BigInt(victim++) as PlantId)();
        const st = pick();
        const before = sum();
        const t = await st.repository.insert(
          owner,
          { id: BigInt(100_000 + i) as PlantId, name: 'new' as PlantName },
          10_000,
        )();
        const after = sum();
        if (i >= 20) {
          createsMeasured++;
          createsBytes += after.bytes - before.bytes;
          createsCommands += after.commands - before.commands;
        }
        if (t._tag === 'Left' || t.right._tag !== 'Inserted') console.log(`  create ${i}: ${JSON.stringify(t)}`);
      }
      console.log(
        `  replacement at 10,000 through three processes: ${(createsCommands / createsMeasured).toFixed(2)} commands and ${Math.round(createsBytes / createsMeasured)} bytes read a create (${createsMeasured} creates after 20 to warm up)`,
      );
      for (const st of stores) await st.close();
    } else {
      const creators = Number(arg('--creators') ?? 6);
      const st = open();
      const t0 = performance.now();
      let unavailable = 0;
      const times = await Promise.all(
        Array.from({ length: creators }, async (_, o) => {
          for (;;) {
            const r = await st.repository.insert(
              `storm-${o}` as Owner,
              { id: 999_999n as PlantId, name: 'n' as PlantName },
              10_000,
            )();
            if (r._tag === 'Right') return performance.now() - t0;
            unavailable++;
            if (performance.now() - t0 > 120_000) return Number.POSITIVE_INFINITY;
            await new Promise((f) => setTimeout(f, 250));
          }
        }),
      );
      console.log(
        `  ${creators} owners creating at once after a restart: all stored after ${(Math.max(...times) / 1000).toFixed(1)} s, ${unavailable} answered 503`,
      );
      await st.close();
    }
  } finally {
    await client.db(db).dropDatabase();
    await client.close();
    await server.dispose();
  }
  process.exit(0);
}

if (FILLS) {
  // One create at a time into owners at 10, 500 and 999 of 1,000, held and not held (a budget of one byte).
  try {
    console.log(`one create at a time at a bound of 1,000, FerretDB ${handler}; adapter from ${dist}`);
    for (const held of [true, false]) {
      for (const fill of [10, 500, 999]) {
        const owner = `bench-fill-${fill}-${held}`;
        await seed(owner, fill);
        const store = adapter.mongodbPlantRepository({
          ...adapterOptions(server.uri, db, pino({ level: 'silent' })),
          ...(held ? {} : { slotCacheBytes: 1 }),
          timeoutMs: 10_000, // commands and bytes are measured here, not FerretDB's scans
          monitorCommands: true,
        });
        const meter = metered(store.client);
        await store.repository.ping();
        const create = (id: number) =>
          store.repository.insert(owner as Owner, { id: BigInt(id) as PlantId, name: 'x' as PlantName }, 1000)();
        await create(5000); // the process's first create of the owner: not counted
        await store.repository.remove(owner as Owner, 5000n as PlantId)();
        const sum = { commands: 0, bytes: 0, creates: 20 };
        for (let id = 5001; id <= 5000 + sum.creates; id++) {
          [meter.commands, meter.bytes] = [0, 0];
          await create(id);
          [sum.commands, sum.bytes] = [sum.commands + meter.commands, sum.bytes + meter.bytes];
          await store.repository.remove(owner as Owner, BigInt(id) as PlantId)(); // room again, not counted
        }
        const [commands, bytes] = [sum.commands / sum.creates, sum.bytes / sum.creates];
        console.log(
          `  ${held ? 'held' : 'not held'}, ${fill} of 1,000: ${commands.toFixed(2)} commands and ${Math.round(bytes)} B read a create`,
        );
        await store.close();
      }
    }
  } finally {
    await client.db(db).dropDatabase();
    await client.close();
    await server.dispose();
  }
  process.exit(0);
}

if (ONE_OWNER) {
  try {
    console.log(`one owner, quota ${QUOTA}, filled to 75%, FerretDB ${handler}; adapter from ${dist}`);
    await drive(bare(['bench-warm']), 1).catch(() => undefined); // the pool's connections
    for (const clients of [1, 16, 32]) for (let round = 1; round <= rounds; round++) await oneOwner(clients, round);
  } finally {
    await client.db(db).dropDatabase();
    await client.close();
    await server.dispose();
  }
  process.exit(0);
}

try {
  console.log(
    `creates per second, ${CLIENTS} concurrent clients, quota ${QUOTA}, ${rounds} rounds of ${seconds} s, FerretDB ${handler}; adapter from ${dist}`,
  );
  for (const [label, fill, held] of [
    ['owner with no plants', 0, true],
    ['owner at 75% of its quota', Math.floor((QUOTA * 3) / 4), true],
    ['owner at 75% of its quota, not held (memory budget full)', Math.floor((QUOTA * 3) / 4), false],
  ] as const) {
    const driverOwners = Array.from({ length: ownersFor(fill) }, (_, i) => `bench-driver-${fill}-${held}-${i}`);
    const adapterOwners = Array.from({ length: ownersFor(fill) }, (_, i) => `bench-adapter-${fill}-${held}-${i}`);
    for (const owner of adapterOwners) await seed(owner, fill);
    const rates: [number[], number[]] = [[], []];
    for (let round = 1; round <= rounds; round++) {
      // Each round: the owners back at the case's fill, and a new adapter instance (as a process just started).
      await collection.deleteMany({ id: { $gte: 1_000_000n } });
      const store = openAdapter(held);
      try {
        // Not counted: the pool's connections, and the adapter's first create of each owner (one load of its
        // slots, which on FerretDB/SQLite reads the whole collection); timed and shown apart.
        await drive(bare(driverOwners), Math.min(1, seconds)).catch(() => undefined);
        await collection.deleteMany({ id: { $gte: 1_000_000n } });
        const cold: number[] = [];
        for (const owner of adapterOwners) {
          const t0 = performance.now();
          const plant: Plant = { id: 999_999n as PlantId, name: 'first' as PlantName };
          // Until it is stored: a request may give up (503) while the load goes on; the next one finds its answer.
          while ((await store.repository.insert(owner as Owner, plant, QUOTA)())._tag === 'Left') {
            if (performance.now() - t0 > 20_000) break; // shown as 20 s and more: the store never answered in time
          }
          cold.push(performance.now() - t0);
        }
        const d = await drive(bare(driverOwners));
        const a = await drive(viaAdapter(store.repository, adapterOwners), seconds, adapterOwners.length * PER_OWNER);
        rates[0].push(d.rate);
        rates[1].push(a.rate);
        console.log(
          `  ${label}, round ${round}: bare insertOne ${d.rate.toFixed(0)}/s${d.failed ? ` (${d.failed} failed)` : ''}, adapter ${a.rate.toFixed(0)}/s${a.failed ? ` (${a.failed} not stored)` : ''}${a.outOfRoom ? " (stopped early: the owners' room ran out, raise --owners)" : ''}; an owner's first create ${Math.round(Math.max(...cold))} ms at most (${(await collection.estimatedDocumentCount()).toLocaleString('en')} plants stored)`,
        );
      } finally {
        await store.close();
      }
    }
    const [md, ma] = [median(rates[0]), median(rates[1])];
    console.log(
      `  ${label}: median bare insertOne ${md.toFixed(0)}/s, adapter ${ma.toFixed(0)}/s, adapter/driver ${(ma / md).toFixed(2)}`,
    );
  }
} finally {
  await client.db(db).dropDatabase();
  await client.close();
  await server.dispose();
}
process.exit(0);
