/**
 * `npm run bench:scale [-- --postgres] [--smoke] [--adapter <dist>] [--only a,c,...]`: the MongoDB adapter's write path
 * at scale (issue 26), on one FerretDB (SQLite handler, or PostgreSQL with `--postgres`), through the repository port (several adapter
 * instances in this process stand for several service processes), counting commands by the driver's monitoring:
 *
 *   a. many owners: 8 times more active owners than the slot memory budget holds (the budget set to hold 80 of them),
 *      chosen uniformly, by Zipf (s = 1) and round-robin; creates/s side by side with the bare driver's insertOne
 *      (half-second slices in turn, same collection), commands and loads of an owner's slots per create. Each round's
 *      adapter instance is measured past its start-up: its sweep for outside plants done, and the first 80 owners it
 *      saw (while its budget had room) loaded, one read each (on FerretDB a scan of the collection: that start-up
 *      transient would otherwise weigh on the first seconds of each round);
 *   c. replacing plants at the quota across 3 instances: delete through one, create through the next; commands per
 *      delete and per create, loads, creates answered 403 while there was room and how long until they stored;
 *   d. filling one owner from 0 to the quota across 3 instances, 16 clients: inserts per create, 503s, loads;
 *   e. a restart over 120,000 plants (20 owners of 6,000): a new instance, the 20 owners' first creates at once: 503s
 *      and the time until all stored.
 *
 * `--adapter` loads the adapter from another build's dist/ (the tree before a change) to compare. `--smoke` runs every
 * case small, in seconds (test/bench/scale-smoke.test.ts). Throughput on a shared machine is noisy: compare ratios
 * within one run.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { CommandStartedEvent } from 'mongodb';
import { pino } from 'pino';
import type { PlantRepository } from '../application/ports/plant-repository.js';
import type { Owner, Plant, PlantId, PlantName } from '../domain/plant.js';
import {
  adapterOptions,
  arg,
  bareInsert,
  benchStore,
  COLLECTION,
  loadAdapter,
  ownerPickers,
  seedOwner,
} from './storage-bench.js';

const smoke = process.argv.includes('--smoke');
const only = new Set((arg('--only') ?? 'a,c,d,e').split(','));
const P = smoke
  ? { quota: 200, seconds: 0.5, rounds: 1, held: 4, seeded: 10, replacements: 30, restartOwners: 4, restartEach: 100 }
  : {
      quota: 10_000,
      seconds: 5,
      rounds: 2,
      held: 80,
      seeded: 100,
      replacements: 300,
      restartOwners: 20,
      restartEach: 6000,
    };
if (arg('--quota') !== undefined) Object.assign(P, { quota: Number(arg('--quota')) });
const CLIENTS = 16;
const TIMEOUT_MS = 2000;

const { adapter, dist } = await loadAdapter();
type Store = ReturnType<typeof adapter.mongodbPlantRepository>;
const slotsModule = (await import(join(dist, 'adapters/storage/mongodb/owner-slots.js'))) as Record<string, unknown>;
/** Bytes the adapter weighs for one owner of `plants` plants at the quota: its state now, 64 a plant before. */
const ownerBytes = (plants: number): number =>
  typeof slotsModule['STATE_BYTES'] === 'number'
    ? (slotsModule['STATE_BYTES'] as number) + Math.ceil(P.quota / 8)
    : 200 + plants * 64;

const { server, handler, client: admin } = await benchStore('scale');

/** An adapter instance (a service process), and `warm`: one create, then until its scan for outside plants is done. */
const instance = (db: string, extra: Record<string, unknown> = {}): Store & { warm: () => Promise<void> } => {
  let swept: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (swept = resolve));
  const store = adapter.mongodbPlantRepository({
    ...adapterOptions(
      server.uri,
      db,
      pino(
        { level: 'debug' }, // the sweep's end is a debug line when it found nothing quickly
        {
          write: (line: string) => {
            if (process.env['SCALE_LOG'] !== undefined) process.stderr.write(line);
            if (line.includes('owners without any need no look')) swept(); // the sweep's end, or its record taken up
          },
        },
      ),
    ),
    monitorCommands: true,
    ...extra,
  });
  const warm = async () => {
    // Until one is stored: the first may find the quota's index still being built (503).
    while ((await store.repository.insert(`warm-${randomUUID()}` as Owner, plantOf(1n), P.quota)())._tag === 'Left');
    // The steady state is what is measured (a restart is case e); a build before outside-plants.ts has no such scan.
    await Promise.race([done, new Promise((resolve) => setTimeout(resolve, slotsModule['STATE_BYTES'] ? 120_000 : 0))]);
  };
  return { ...store, warm };
};

/** Counts the commands the stores send, by name (`insert` counted apart when into `plants`), and loads of slots. */
const counter = (stores: readonly Store[]) => {
  const c = { total: 0, plantInserts: 0, loads: 0, byName: {} as Record<string, number> };
  const main = (e: CommandStartedEvent) => {
    c.total++;
    c.byName[e.commandName] = (c.byName[e.commandName] ?? 0) + 1;
    // Documents, not commands: the adapter sends the creates of one turn in one command.
    if (e.commandName === 'insert' && e.command['insert'] === 'plants')
      c.plantInserts += Array.isArray(e.command['documents']) ? e.command['documents'].length : 1;
  };
  const slot = (e: CommandStartedEvent) => {
    main(e);
    if (e.commandName === 'find') c.loads++;
  };
  for (const s of stores) {
    s.client.on('commandStarted', main);
    s.slotClient.on('commandStarted', slot);
  }
  return {
    c,
    reset: () => Object.assign(c, { total: 0, plantInserts: 0, loads: 0, byName: {} }),
    stop: () => {
      for (const s of stores) {
        s.client.off('commandStarted', main);
        s.slotClient.off('commandStarted', slot);
      }
    },
  };
};

const seed = (db: string, owner: string, n: number) => seedOwner(admin.db(db).collection(COLLECTION), owner, n);
const plantOf = (id: bigint): Plant => ({ id: id as PlantId, name: `plant ${id}` as PlantName });
let nextId = 1_000_000n;
const create = async (repo: PlantRepository, owner: string) => {
  const e = await repo.insert(owner as Owner, plantOf(nextId++), P.quota)();
  return e._tag === 'Left' ? 'unavailable' : e.right._tag;
};

const ms = (t0: number) => performance.now() - t0;
const fmt = (x: number, d = 2) => x.toFixed(d);

/** `CLIENTS` loops for `secs`; the rate of `op`s that answered true. */
const drive = async (op: (n: number) => Promise<boolean>, secs: number) => {
  let n = 0;
  let ok = 0;
  const until = performance.now() + secs * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      do if (await op(n++)) ok++;
      while (performance.now() < until);
    }),
  );
  return { rate: ok / (ms(t0) / 1000), ok, tried: n };
};

const manyOwners = async () => {
  const db = `scale_a_${randomUUID().slice(0, 8)}`;
  const active = P.held * 8;
  const owners = Array.from({ length: active }, (_, i) => `owner-${i}`);
  for (const owner of owners) await seed(db, owner, P.seeded);
  const budget = P.held * ownerBytes(P.seeded);
  console.log(
    `a. ${active} active owners of ${P.seeded} plants, the slot memory budget holding ${P.held} (${budget.toLocaleString('en')} bytes); ${CLIENTS} clients, ${P.seconds} s a round`,
  );
  const collection = admin.db(db).collection(COLLECTION);
  const bare = (pick: () => number) => () => bareInsert(collection, `bare-${pick()}`, nextId++, TIMEOUT_MS);

  for (const [label, pickOf] of ownerPickers(active)) {
    for (let round = 1; round <= P.rounds; round++) {
      const store = instance(db, { slotCacheBytes: budget });
      await store.warm();
      // Past its start-up: the owners first seen while its memory budget had room were loaded (one read each, once).
      for (const owner of owners.slice(0, P.held)) await create(store.repository, owner);
      const count = counter([store]);
      count.stop();
      // Slices of half a second, bare and adapter in turn, so that a machine whose load changes weighs on both alike.
      const sum = { bare: { ok: 0, ms: 0 }, adapter: { ok: 0, ms: 0, tried: 0 } };
      const bareOf = bare(pickOf());
      const pick = pickOf();
      for (let slice = 0; slice < P.seconds * 2; slice++) {
        const d = await drive(bareOf, 0.5);
        sum.bare.ok += d.ok;
        sum.bare.ms += (d.ok / d.rate) * 1000;
        const listening = counter([store]);
        const a = await drive(
          async () => (await create(store.repository, owners[pick()] as string)) === 'Inserted',
          0.5,
        );
        listening.stop();
        count.c.total += listening.c.total;
        count.c.loads += listening.c.loads;
        for (const [name, n] of Object.entries(listening.c.byName))
          count.c.byName[name] = (count.c.byName[name] ?? 0) + n;
        sum.adapter.ok += a.ok;
        sum.adapter.tried += a.tried;
        sum.adapter.ms += (a.ok / a.rate) * 1000;
      }
      await store.close();
      const bareRate = sum.bare.ok / (sum.bare.ms / 1000);
      const rate = sum.adapter.ok / (sum.adapter.ms / 1000);
      console.log(
        `  ${label}, round ${round}: bare ${fmt(bareRate, 0)}/s, adapter ${fmt(rate, 0)}/s (${fmt(rate / bareRate)}), ${fmt(count.c.total / sum.adapter.tried)} commands and ${fmt(count.c.loads / sum.adapter.tried, 3)} loads per create, ${sum.adapter.tried - sum.adapter.ok} not stored; ${JSON.stringify(count.c.byName)}`,
      );
    }
  }
};

const replacing = async () => {
  const db = `scale_c_${randomUUID().slice(0, 8)}`;
  const owner = 'full-owner';
  await seed(db, owner, P.quota);
  const stores = [instance(db), instance(db), instance(db)];
  for (const store of stores) await store.warm();
  const repos = stores.map((s) => s.repository);
  // Each instance has seen the owner (as a running service has): one create each, refused.
  for (const repo of repos) await create(repo, owner);
  const count = counter(stores);
  let deleteCommands = 0;
  let createCommands = 0;
  let refusedWithRoom = 0;
  let unavailable = 0;
  let longestMs = 0;
  const createdBy: Record<string, number> = {};
  let loads = 0;
  const t0 = performance.now();
  for (let i = 0; i < P.replacements; i++) {
    count.reset();
    const gone = await repos[i % 3]?.remove(owner as Owner, BigInt(i) as PlantId)();
    if (gone?._tag !== 'Right' || !gone.right) throw new Error(`plant ${i} was not deleted`);
    deleteCommands += count.c.total;
    count.reset();
    const started = performance.now();
    for (;;) {
      const outcome = await create(repos[(i + 1) % 3] as PlantRepository, owner);
      if (outcome === 'Inserted') break;
      if (outcome === 'OwnerFull') refusedWithRoom++;
      else unavailable++;
      await new Promise((r) => setTimeout(r, 10));
    }
    longestMs = Math.max(longestMs, ms(started));
    createCommands += count.c.total;
    loads += count.c.loads;
    for (const [name, n] of Object.entries(count.c.byName)) createdBy[name] = (createdBy[name] ?? 0) + n;
  }
  const secs = ms(t0) / 1000;
  count.stop();
  console.log(
    `c. replacing plants at the quota (${P.quota}) across 3 instances, ${P.replacements} times: ${fmt(P.replacements / secs, 1)} replacements/s; per replacement ${fmt((deleteCommands + createCommands) / P.replacements)} commands (delete ${fmt(deleteCommands / P.replacements)}, create ${fmt(createCommands / P.replacements)}); ${refusedWithRoom} creates answered 403 while there was room, ${unavailable} 503; longest until stored ${fmt(longestMs, 0)} ms; the creates' commands: ${JSON.stringify(createdBy)}, ${loads} loads of the owner`,
  );
  await Promise.all(stores.map((s) => s.close()));
};

const filling = async () => {
  const db = `scale_d_${randomUUID().slice(0, 8)}`;
  const owner = 'filling-owner';
  const stores = [instance(db), instance(db), instance(db)];
  for (const store of stores) await store.warm();
  const count = counter(stores);
  let creates = 0;
  let unavailable = 0;
  let full = 0;
  const t0 = performance.now();
  let stored = 0;
  const progress =
    process.env['SCALE_PROGRESS'] === undefined
      ? undefined
      : setInterval(
          () =>
            console.log(
              `    ${stored} stored, ${full} full, ${unavailable} 503, ${count.c.plantInserts} inserts, ${count.c.loads} loads`,
            ),
          2000,
        );
  let done = false;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      while (!done) {
        creates++;
        const outcome = await create((stores[c % 3] as Store).repository, owner);
        if (outcome === 'Inserted') stored++;
        else if (outcome === 'OwnerFull') {
          full++;
          // A create answered 503 may have stored its plant: the owner is full when the collection says so.
          done ||= (await admin.db(db).collection(COLLECTION).countDocuments({ owner })) >= P.quota;
        } else unavailable++;
      }
    }),
  );
  const secs = ms(t0) / 1000;
  clearInterval(progress);
  count.stop();
  const kept = await admin.db(db).collection(COLLECTION).countDocuments({ owner });
  console.log(
    `d. filling one owner from 0 to ${P.quota} across 3 instances, ${CLIENTS} clients: ${fmt(stored / secs, 0)} creates/s, ${fmt(count.c.plantInserts / stored, 3)} inserts per stored create, ${count.c.loads} loads, ${unavailable} answered 503, ${full} refused at the quota (${stored} answered stored, ${kept} stored)`,
  );
  await Promise.all(stores.map((s) => s.close()));
};

const restart = async () => {
  const db = `scale_e_${randomUUID().slice(0, 8)}`;
  const owners = Array.from({ length: P.restartOwners }, (_, i) => `restart-${i}`);
  for (const owner of owners) await seed(db, owner, P.restartEach);
  /** A new instance, and the owners' first creates through it at once. */
  const startAndCreate = async (what: string) => {
    const store = instance(db);
    const t0 = performance.now();
    let unavailable = 0;
    let firstUnavailable = 0;
    const times = await Promise.all(
      owners.map(async (owner) => {
        for (let attempt = 0; ; attempt++) {
          const outcome = await create(store.repository, owner);
          if (outcome === 'Inserted') return ms(t0);
          if (outcome === 'unavailable') {
            unavailable++;
            if (attempt === 0) firstUnavailable++;
          }
        }
      }),
    );
    console.log(
      `e. ${what} over ${(P.restartOwners * P.restartEach).toLocaleString('en')} plants, ${P.restartOwners} owners' first creates at once: ${firstUnavailable} of ${P.restartOwners} first answers 503 (${unavailable} in all), the last stored after ${fmt(Math.max(...times), 0)} ms`,
    );
    return store;
  };
  // The first process over data it never saw: its scan for outside plants runs while these creates wait.
  const first = await startAndCreate('a first start');
  // A restart: the process before ran in the steady state (its scan done, and recorded where the build has records).
  await first.warm();
  const records = admin.db(db).collection('plants_sweeps');
  for (let i = 0; i < 100 && (await records.countDocuments()) === 0 && slotsModule['STATE_BYTES'] !== undefined; i++)
    await new Promise((resolve) => setTimeout(resolve, 50));
  await first.close();
  await (await startAndCreate('a restart')).close();
};

try {
  console.log(`FerretDB ${handler}; adapter from ${dist}${smoke ? '; smoke' : ''}`);
  if (only.has('a')) await manyOwners();
  if (only.has('c')) await replacing();
  if (only.has('d')) await filling();
  if (only.has('e')) await restart();
} finally {
  const dbs = await admin.db().admin().listDatabases();
  for (const { name } of dbs.databases) if (name.startsWith('scale_')) await admin.db(name).dropDatabase();
  await admin.close();
  await server.dispose();
}
process.exit(0);
