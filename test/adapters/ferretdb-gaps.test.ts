import { MongoClient } from 'mongodb';
import * as assert from 'uvu/assert';
import { INDEX_NAME } from '../../adapters/storage/mongodb/indexes.js';
import {
  ferretDbBinary,
  postgresBinaries,
  sharedFerretDb,
  sharedFerretDbOnPostgres,
  type RunningServer,
} from '../../harness/servers.js';
import { suiteWith, type Setup } from '../support/suites.js';

/**
 * What FerretDB 1.24 does differently from MongoDB, as docs/storage.md states it: the facts the MongoDB adapter is kept
 * clear of (no transactions, no TTL or partial indexes) and whose query plans serve a page. When an upgrade changes
 * one of them, this suite says so and the table in docs/storage.md needs the new fact.
 */
const ferret = ferretDbBinary();
const backends: Array<{ name: string; setup: Setup<{ server: RunningServer }>; pushdown: Pushdown }> = [
  {
    name: 'SQLite',
    setup: 'skip' in ferret ? ferret : async () => ({ server: await sharedFerretDb(ferret.bin) }),
    pushdown: { filterPushdown: false, sortPushdown: false, limitPushdown: false },
  },
  {
    name: 'PostgreSQL',
    setup: (() => {
      if ('skip' in ferret) return ferret;
      const pg = postgresBinaries();
      return 'skip' in pg ? pg : async () => ({ server: await sharedFerretDbOnPostgres(ferret.bin, pg) });
    })(),
    pushdown: { filterPushdown: true, sortPushdown: false, limitPushdown: false },
  },
];

/** The error message a call is refused with; fails when it succeeds. */
const refusal = async (call: () => Promise<unknown>): Promise<string> => {
  try {
    await call();
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
  assert.unreachable('expected the server to refuse the call');
  return '';
};

interface Pushdown {
  readonly filterPushdown: boolean;
  readonly sortPushdown: boolean;
  readonly limitPushdown: boolean;
}

/** A collection shaped like the adapter's, on a database of its own, dropped afterwards. */
const withPlants = async (uri: string, run: (client: MongoClient, db: string) => Promise<void>) => {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5000, useBigInt64: true });
  const db = `plantstore_gaps_${Math.random().toString(36).slice(2, 10)}`;
  try {
    const plants = client.db(db).collection('plants');
    await plants.createIndex({ owner: 1, id: 1 }, { unique: true, name: INDEX_NAME });
    await plants.insertMany(Array.from({ length: 20 }, (_, i) => ({ owner: `o${i % 2}`, id: BigInt(i), name: 'n' })));
    await run(client, db);
  } finally {
    await client
      .db(db)
      .dropDatabase()
      .catch(() => undefined);
    await client.close();
  }
};

for (const backend of backends) {
  const { test, subject, run } = suiteWith(`FerretDB/${backend.name} against MongoDB`, backend.setup);

  test('a page query (owner equal, id after the cursor, sorted by id, limited) is planned as the README says', async (ctx) => {
    await withPlants(subject(ctx).server.uri, async (client, db) => {
      const plan = await client
        .db(db)
        .collection('plants')
        .find({ owner: 'o1', id: { $gt: 3n } }, { projection: { _id: 0 } })
        .sort({ id: 1 })
        .limit(3)
        .explain();
      const { filterPushdown, sortPushdown, limitPushdown } = plan as unknown as Pushdown;
      assert.equal({ filterPushdown, sortPushdown, limitPushdown }, backend.pushdown);
    });
  });

  test('multi-document transactions, TTL indexes and partial indexes are refused (the adapter uses none)', async (ctx) => {
    await withPlants(subject(ctx).server.uri, async (client, db) => {
      const plants = client.db(db).collection('plants');
      const session = client.startSession();
      try {
        session.startTransaction();
        assert.ok(await refusal(() => plants.insertOne({ owner: 't', id: 1n, name: 'n' }, { session })));
      } finally {
        await session.abortTransaction().catch(() => undefined);
        await session.endSession();
      }
      assert.is(await plants.countDocuments({ owner: 't' }), 0, 'nothing written by the refused transaction');
      assert.match(await refusal(() => plants.createIndex({ at: 1 }, { expireAfterSeconds: 60 })), /not implemented/);
      assert.match(
        await refusal(() => plants.createIndex({ tag: 1 }, { partialFilterExpression: { tag: { $exists: true } } })),
        /not implemented/,
      );
    });
  });

  run();
}
