/**
 * `npm run bench:creates [-- --postgres] [--seconds N] [--rounds N] [--adapter <dist>]`: creates per second through
 * the MongoDB adapter with the default quota (10,000 per owner), side by side with the bare driver's `insertOne` of
 * the same document into the same collection, on one FerretDB (SQLite handler, or PostgreSQL with `--postgres`),
 * 16 concurrent clients, for an owner with no plants and for one at 75% of its quota. Rounds alternate (driver,
 * adapter, driver, adapter...) and each round takes a fresh owner, so both see the same collection size. `--adapter`
 * loads the adapter from another build's dist/ (say, the tree before a change) to compare. Each round first warms
 * both up for `--warmup` seconds (default 2, not counted: the pool's connections, and the adapter's one load of the
 * owner's slots, which on FerretDB/SQLite reads the whole collection). Prints medians.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient, ObjectId } from 'mongodb';
import { pino } from 'pino';
import type { PlantRepository } from '../application/ports/plant-repository.js';
import type { Owner, Plant, PlantId, PlantName } from '../domain/plant.js';
import { ferretDbBinary, postgresBinaries, startFerretDb, startFerretDbOnPostgres } from '../harness/servers.js';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
};
const seconds = Number(arg('--seconds') ?? 5);
const rounds = Number(arg('--rounds') ?? 3);
const warmup = Number(arg('--warmup') ?? 2);
const onPostgres = process.argv.includes('--postgres');
const dist = resolve(arg('--adapter') ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
const CLIENTS = 16;
const QUOTA = 10_000;
const COLLECTION = 'plants';

interface AdapterModule {
  readonly mongodbPlantRepository: (options: {
    uri: string;
    db: string;
    timeoutMs: number;
    writeConcern: 'majority';
    journal: boolean;
    logger: ReturnType<typeof pino>;
  }) => { repository: PlantRepository; close: () => Promise<void> };
}
const adapter = (await import(join(dist, 'adapters/storage/mongodb/mongodb-plant-repository.js'))) as AdapterModule;

const ferret = ferretDbBinary();
if ('skip' in ferret) throw new Error(ferret.skip);
const pg = onPostgres ? postgresBinaries() : undefined;
if (pg !== undefined && 'skip' in pg) throw new Error(pg.skip);
const server = pg === undefined ? await startFerretDb(ferret.bin) : await startFerretDbOnPostgres(ferret.bin, pg);

const db = `plantstore_bench_${randomUUID().slice(0, 8)}`;
const client = new MongoClient(server.uri, { useBigInt64: true });
const collection = client.db(db).collection(COLLECTION);
const store = adapter.mongodbPlantRepository({
  uri: server.uri,
  db,
  timeoutMs: 2000,
  writeConcern: 'majority',
  journal: true,
  logger: pino({ level: 'silent' }),
});

/** Gives the owner `n` plants as the adapter stores them (slots 0..n-1), in bulk. */
const seed = async (owner: string, n: number) => {
  for (let i = 0; i < n; i += 2500) {
    await collection.insertMany(
      Array.from({ length: Math.min(2500, n - i) }, (_, k) => ({
        owner,
        id: BigInt(i + k),
        name: `plant ${i + k}`,
        slot: i + k,
      })),
    );
  }
};

/** `CLIENTS` loops creating distinct plants for `seconds`; creates per second that were stored. */
const drive = async (
  create: (id: bigint) => Promise<boolean>,
  first: bigint,
  secs = seconds,
): Promise<{ rate: number; failed: number }> => {
  let next = first;
  let stored = 0;
  let failed = 0;
  const until = performance.now() + secs * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < until) {
        if (await create(next++)) stored++;
        else failed++;
      }
    }),
  );
  return { rate: stored / ((performance.now() - started) / 1000), failed };
};

const bare = (owner: string) => (id: bigint) =>
  collection
    .insertOne(
      { _id: new ObjectId(), owner, id, name: `plant ${id}`, slot: 2 ** 48 + randomInt(2 ** 47) },
      { writeConcern: { w: 'majority', journal: true, wtimeoutMS: 2000 } },
    )
    .then(
      () => true,
      () => false,
    );
const viaAdapter = (owner: string) => async (id: bigint) => {
  const plant: Plant = { id: id as PlantId, name: `plant ${id}` as PlantName };
  const outcome = await store.repository.insert(owner as Owner, plant, QUOTA)();
  return outcome._tag === 'Right' && outcome.right._tag === 'Inserted';
};

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

try {
  await store.repository.ping(); // builds the indexes
  // A collection of some size, as a deployment has: 20,000 plants of other owners.
  await seed('bench-background-a', 10_000);
  await seed('bench-background-b', 10_000);
  console.log(
    `creates per second, ${CLIENTS} concurrent clients, ${rounds} rounds of ${seconds} s, FerretDB ${pg === undefined ? 'SQLite' : 'PostgreSQL'}; adapter from ${dist}`,
  );
  for (const [label, fill] of [
    ['owner with no plants', 0],
    ['owner at 75% of its quota', (QUOTA * 3) / 4],
  ] as const) {
    const rates: [number[], number[]] = [[], []];
    for (let round = 1; round <= rounds; round++) {
      const driverOwner = `bench-driver-${randomUUID()}`;
      const adapterOwner = `bench-adapter-${randomUUID()}`;
      await seed(driverOwner, fill);
      await seed(adapterOwner, fill);
      // Not counted: the pool's connections, and the adapter's first load of the owner's slots (its cold cost).
      await drive(bare(driverOwner), 1_000_000n, warmup);
      const w = await drive(viaAdapter(adapterOwner), 1_000_000n, warmup);
      if (w.failed > 0) console.log(`  ${label}, round ${round}: ${w.failed} creates not stored while warming up`);
      const d = await drive(bare(driverOwner), 2_000_000n);
      const a = await drive(viaAdapter(adapterOwner), 2_000_000n);
      rates[0].push(d.rate);
      rates[1].push(a.rate);
      console.log(
        `  ${label}, round ${round}: bare insertOne ${d.rate.toFixed(0)}/s${d.failed ? ` (${d.failed} failed)` : ''}, adapter ${a.rate.toFixed(0)}/s${a.failed ? ` (${a.failed} not stored)` : ''}`,
      );
    }
    const [md, ma] = [median(rates[0]), median(rates[1])];
    console.log(
      `  ${label}: median bare insertOne ${md.toFixed(0)}/s, adapter ${ma.toFixed(0)}/s, adapter/driver ${(ma / md).toFixed(2)}`,
    );
  }
} finally {
  await store.close();
  await client.db(db).dropDatabase();
  await client.close();
  await server.dispose();
}
process.exit(0);
