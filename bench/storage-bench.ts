/**
 * What the storage bench (`creates.ts`) uses: their arguments, the adapter of the build named
 * by `--adapter` (this build by default, to compare a change with the tree before it), and one FerretDB (SQLite
 * handler, or PostgreSQL with `--postgres`) started on a free port with a fresh database's `plants` collection.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient, ObjectId, type Collection, type Document } from 'mongodb';
import type { Logger } from '../application/ports/logger.js';
import type { PlantRepository } from '../application/ports/plant-repository.js';
import { ferretDbBinary, postgresBinaries, startFerretDb, startFerretDbOnPostgres } from '../harness/servers.js';

/** The value after `name` on the command line. */
export const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
};

export const COLLECTION = 'plants';

/** The options every bench gives an adapter instance: a 2 s storage timeout, majority and journaled writes. */
export const adapterOptions = (uri: string, db: string, logger: Logger) =>
  ({ uri, db, timeoutMs: 2000 as number, writeConcern: 'majority', journal: true, logger }) as const;

interface AdapterModule {
  readonly mongodbPlantRepository: (options: ReturnType<typeof adapterOptions> & Record<string, unknown>) => {
    readonly repository: PlantRepository;
    readonly close: () => Promise<void>;
    readonly client: MongoClient;
  };
}

/** The MongoDB adapter of the build `--adapter` names (a dist/ folder), or of this one. */
export const loadAdapter = async (): Promise<{ readonly adapter: AdapterModule; readonly dist: string }> => {
  const dist = resolve(arg('--adapter') ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
  const adapter = (await import(join(dist, 'adapters/storage/mongodb/mongodb-plant-repository.js'))) as AdapterModule;
  return { adapter, dist };
};

/** FerretDB on SQLite, or on PostgreSQL with `--postgres`, and a client on a database of its own (`prefix_<random>`). */
export const benchStore = async (prefix: string) => {
  const ferret = ferretDbBinary();
  if ('skip' in ferret) throw new Error(ferret.skip);
  const pg = process.argv.includes('--postgres') ? postgresBinaries() : undefined;
  if (pg !== undefined && 'skip' in pg) throw new Error(pg.skip);
  const server = pg === undefined ? await startFerretDb(ferret.bin) : await startFerretDbOnPostgres(ferret.bin, pg);
  const db = `${prefix}_${randomUUID().slice(0, 8)}`;
  const client = new MongoClient(server.uri, { useBigInt64: true });
  const handler = pg === undefined ? 'SQLite' : 'PostgreSQL';
  return { server, handler, db, client, collection: client.db(db).collection(COLLECTION) };
};

/** Gives the owner `n` plants as the adapter stores them (ids and slots 0..n-1), in bulk. */
export const seedOwner = async (collection: Collection<Document>, owner: string, n: number): Promise<void> => {
  for (let i = 0; i < n; i += 5000) {
    await collection.insertMany(
      Array.from({ length: Math.min(5000, n - i) }, (_, k) => ({
        owner,
        id: BigInt(i + k),
        name: `plant ${i + k}`,
        slot: i + k,
      })),
    );
  }
};

/** Picks one of `n` indices by Zipf's law (s = 1): index 0 the likeliest, index i about 1/(i+1) as likely. */
const zipfPicker = (n: number) => {
  const weights = Array.from({ length: n }, (_, i) => 1 / (i + 1));
  const total = weights.reduce((a, b) => a + b, 0);
  const cdf: number[] = [];
  let acc = 0;
  for (const w of weights) cdf.push((acc += w / total));
  return () => {
    const r = Math.random();
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((cdf[mid] as number) < r) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
};

/** How the many-owners cases choose among `n` active owners: each a name and a maker of a fresh picker. */
export const ownerPickers = (n: number) =>
  [
    ['uniform', () => () => randomInt(n)],
    ['Zipf', () => zipfPicker(n)],
    [
      'round-robin',
      () => {
        let i = 0;
        return () => i++ % n;
      },
    ],
  ] as const;

/**
 * The bare driver's create, the reference the adapter is measured against: one `insertOne` of a plant-shaped document
 * (an outside slot at random, so that it never collides) with the adapter's write concern. True once stored.
 */
export const bareInsert = async (
  collection: Collection<Document>,
  owner: string,
  id: number | bigint,
  timeoutMs: number,
): Promise<boolean> => {
  try {
    await collection.insertOne(
      { _id: new ObjectId(), owner, id, name: 'bare', slot: 2 ** 48 + randomInt(2 ** 47) },
      { writeConcern: { w: 'majority', journal: true, wtimeoutMS: timeoutMs } },
    );
    return true;
  } catch {
    return false;
  }
};
