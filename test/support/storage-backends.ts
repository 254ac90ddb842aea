import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { memoryPlantRepository } from '../../adapters/storage/memory/memory-plant-repository.js';
import { mongodbPlantRepository } from '../../adapters/storage/mongodb/mongodb-plant-repository.js';
import type { RepositorySetup, RepositoryUnderTest } from '../contracts/plant-repository.contract.js';
import { ferretDbBinary, postgresBinaries, sharedFerretDb, sharedFerretDbOnPostgres } from '../../harness/servers.js';

/**
 * Every storage adapter the suites run against on this machine: memory, FerretDB on SQLite and on PostgreSQL, and
 * MONGODB_URI when set.
 */
export interface StorageBackend {
  readonly name: string;
  readonly setup: RepositorySetup;
}

const quiet = pino({ level: 'silent' });

/** A MongoDB adapter on a database of its own, dropped afterwards. */
export const mongoRepository = async (uri: string, timeoutMs = 2000): Promise<RepositoryUnderTest & { db: string }> => {
  const db = `plantstore_test_${randomUUID().slice(0, 8)}`;
  const store = mongodbPlantRepository({ uri, db, timeoutMs, writeConcern: 'majority', journal: true, logger: quiet });
  return {
    db,
    repo: store.repository,
    teardown: async () => {
      const { MongoClient } = await import('mongodb');
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

export const storageBackends = (): StorageBackend[] => {
  const ferret = ferretDbBinary();
  const backends: StorageBackend[] = [
    { name: 'memory', setup: async () => ({ repo: memoryPlantRepository(), teardown: async () => {} }) },
    {
      name: 'mongodb on FerretDB',
      setup: 'skip' in ferret ? ferret : async () => mongoRepository((await sharedFerretDb(ferret.bin)).uri),
    },
    {
      name: 'mongodb on FerretDB/PostgreSQL',
      setup: (() => {
        if ('skip' in ferret) return ferret;
        const pg = postgresBinaries();
        if ('skip' in pg) return pg;
        return async () => mongoRepository((await sharedFerretDbOnPostgres(ferret.bin, pg)).uri);
      })(),
    },
  ];
  const real = process.env['MONGODB_URI'];
  if (real !== undefined && real !== '')
    backends.push({ name: 'mongodb on MONGODB_URI', setup: () => mongoRepository(real) });
  return backends;
};
