import * as E from 'fp-ts/lib/Either.js';
import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { pino } from 'pino';
import type { PlantRepository } from '../../application/ports/plant-repository.js';
import type { Logger } from '../../application/ports/logger.js';
import { memoryPlantRepository } from '../../adapters/storage/memory/memory-plant-repository.js';
import {
  COLLECTION,
  mongodbPlantRepository,
  type MongodbPlantRepository,
  type MongoOptions,
} from '../../adapters/storage/mongodb/mongodb-plant-repository.js';
import { INDEX_NAME, SLOT_INDEX_NAME } from '../../adapters/storage/mongodb/indexes.js';
import { repairStorage } from '../../adapters/storage/mongodb/repair.js';
import type { RepositorySetup, RepositoryUnderTest, StoreDrift } from '../contracts/plant-repository.contract.js';
import type { Setup } from './suites.js';
import { eventually } from './wait.js';
import {
  ferretDbBinary,
  postgresBinaries,
  sharedFerretDb,
  sharedFerretDbOnPostgres,
  type RunningServer,
} from '../../harness/servers.js';

/**
 * Every storage adapter the suites run against on this machine: memory, FerretDB on SQLite and on PostgreSQL, and
 * MONGODB_URI when set.
 */
export interface StorageBackend {
  readonly name: string;
  readonly setup: RepositorySetup;
}

const quiet = pino({ level: 'silent' });

/** How often the contract's MongoDB instances check their indexes (a running service: every 30 s). */
const CONTRACT_RECHECK_MS = 100;

/**
 * One adapter instance (one service process) on `db`, as the contract's are: a 2 s storage timeout, a quiet logger and
 * an index check every 100 ms, unless `extra` says otherwise.
 */
export const mongoInstance = (
  uri: string,
  db: string,
  extra: Partial<Omit<MongoOptions, 'uri' | 'db'>> & { readonly logger?: Logger } = {},
): MongodbPlantRepository =>
  mongodbPlantRepository({
    uri,
    db,
    timeoutMs: 2000,
    writeConcern: 'majority',
    journal: true,
    logger: quiet,
    indexRecheckMs: CONTRACT_RECHECK_MS,
    ...extra,
  });

/**
 * The contract is about what is stored, not how fast: its instances get 10 s, not 2 s. On FerretDB/SQLite every read
 * but one by `_id` scans the collection, and on a loaded 2-core machine such a read in a race of three instances
 * passed 2 s now and then, answering StorageUnavailable where the case expected an outcome (the deadline itself is
 * tested with its own bound in mongodb-faults, mongodb-network-faults and mongodb-index-upkeep).
 */
const CONTRACT_TIMEOUT_MS = 10_000;

const instancesOn = (uri: string, db: string, count: number) =>
  Array.from({ length: count }, () => mongoInstance(uri, db, { timeoutMs: CONTRACT_TIMEOUT_MS }));

/** The contract's MongoDB subject: three adapter instances on a database of their own, as three processes. */
const mongoPeers = async (uri: string): Promise<RepositoryUnderTest> => {
  const db = `plantstore_test_${randomUUID().slice(0, 8)}`;
  const admin = new MongoClient(uri, { serverSelectionTimeoutMS: 2000, useBigInt64: true });
  const stores = instancesOn(uri, db, 3);
  const peers = stores.map((s) => s.repository) as [PlantRepository, PlantRepository, PlantRepository];
  const indexes = async (name: string) =>
    (await admin.db(name).collection(COLLECTION).listIndexes().toArray()).map((i) =>
      String((i as { name: unknown }).name),
    );
  const drift: StoreDrift = {
    dropQuotaIndex: async () => {
      await admin.db(db).collection(COLLECTION).dropIndex(SLOT_INDEX_NAME);
    },
    indexesBack: async () => {
      const until = performance.now() + 10_000;
      let names: string[] = [];
      await eventually(
        'both unique indexes are back',
        async () => {
          names = await indexes(db);
          return names.includes(INDEX_NAME) && names.includes(SLOT_INDEX_NAME);
        },
        { timeoutMs: 10_000, everyMs: CONTRACT_RECHECK_MS, detail: () => `listed: ${names.join(', ')}` },
      );
      // Every instance answers its readiness check again (each has looked at the indexes since: its timer, or the
      // check itself), within the same bound.
      for (const [i, peer] of peers.entries()) {
        let last = '';
        await eventually(
          `adapter instance ${i + 1} of 3 ready again (ping answers) once the indexes are back`,
          async () => {
            const pinged = await peer.ping();
            last = JSON.stringify(pinged);
            return E.isRight(pinged);
          },
          {
            timeoutMs: Math.max(0, until - performance.now()),
            everyMs: CONTRACT_RECHECK_MS,
            detail: () => `last ping: ${last}`,
          },
        );
      }
    },
    repaired: async () => {
      // No request is under way when the contract calls this: the wait covers the instances' index checks alone.
      await repairStorage({ uri, db, noticeMs: 5 * CONTRACT_RECHECK_MS, keepFirst: false, report: () => {} });
      await drift.indexesBack();
    },
  };
  return {
    repo: peers[0],
    peers,
    drift,
    teardown: async () => {
      await Promise.all(stores.map((s) => s.close()));
      await admin
        .db(db)
        .dropDatabase()
        .catch(() => undefined);
      await admin.close();
    },
  };
};

/** Memory storage as the contract sees it: one repository (one process), nothing to drift. */
export const memoryUnderTest = (): RepositoryUnderTest => {
  const repo = memoryPlantRepository();
  return {
    repo,
    peers: [repo, repo, repo],
    drift: {
      dropQuotaIndex: async () => {},
      indexesBack: async () => {},
      repaired: async () => {},
    },
    teardown: async () => {},
  };
};

/** A MongoDB adapter on a database of its own, dropped afterwards. */
export const mongoRepository = async (
  uri: string,
  timeoutMs = 2000,
): Promise<{ repo: PlantRepository; db: string; teardown: () => Promise<void> }> => {
  const db = `plantstore_test_${randomUUID().slice(0, 8)}`;
  const store = mongodbPlantRepository({ uri, db, timeoutMs, writeConcern: 'majority', journal: true, logger: quiet });
  return {
    db,
    repo: store.repository,
    teardown: async () => {
      const admin = new MongoClient(uri, { serverSelectionTimeoutMS: 2000 });
      await admin
        .db(db)
        .dropDatabase()
        .catch(() => undefined);
      await admin.close();
      await store.close();
    },
  };
};

/**
 * The FerretDB servers the MongoDB suites run against on this machine, shared by the run: its SQLite handler
 * (`FerretDB`) and its PostgreSQL handler (`FerretDB/PostgreSQL`), or why each is skipped here.
 */
export const ferretDbServers = (): Array<{ readonly name: string; readonly setup: Setup<RunningServer> }> => {
  const ferret = ferretDbBinary();
  return [
    { name: 'FerretDB', setup: 'skip' in ferret ? ferret : () => sharedFerretDb(ferret.bin) },
    {
      name: 'FerretDB/PostgreSQL',
      setup: (() => {
        if ('skip' in ferret) return ferret;
        const pg = postgresBinaries();
        if ('skip' in pg) return pg;
        return () => sharedFerretDbOnPostgres(ferret.bin, pg);
      })(),
    },
  ];
};

export const storageBackends = (): StorageBackend[] => {
  const backends: StorageBackend[] = [
    { name: 'memory', setup: async () => memoryUnderTest() },
    ...ferretDbServers().map(({ name, setup }): StorageBackend => ({
      name: `mongodb on ${name}`,
      setup: typeof setup === 'function' ? async () => mongoPeers((await setup()).uri) : setup,
    })),
  ];
  const real = process.env['MONGODB_URI'];
  if (real !== undefined && real !== '')
    backends.push({ name: 'mongodb on MONGODB_URI', setup: () => mongoPeers(real) });
  return backends;
};
