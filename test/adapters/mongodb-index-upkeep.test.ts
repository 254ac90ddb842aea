import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import * as assert from 'uvu/assert';
import {
  COLLECTION,
  INDEX_NAME,
  SLOT_INDEX_NAME,
  type MongodbPlantRepository,
} from '../../adapters/storage/mongodb/mongodb-plant-repository.js';
import { aPlant, freshOwner, left, right } from '../support/fixtures.js';
import { ferretDbServers, mongoInstance } from '../support/storage-backends.js';
import { captureLogs } from '../support/log-capture.js';
import { suiteWith } from '../support/suites.js';
import { carries, startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { eventually } from '../support/wait.js';

/**
 * The indexes' upkeep runs in the background (adapters/storage/mongodb/indexes.ts): a start-up over a collection whose
 * indexes are in place scans nothing; while the slot index is being built, the requests that need only the (owner, id)
 * index are served; and a step of the build that takes longer than a request may wait still completes.
 */
const DEADLINE_MS = 300;

/** A filter on `slot: null` (BSON type 10): the mend's scan for plants without a slot. */
const slotNull = Buffer.from('\u000aslot\u0000', 'latin1');

for (const { name, setup } of ferretDbServers()) {
  const { test, subject, run } = suiteWith(
    `MongoDB index upkeep in the background [${name}]`,
    typeof setup === 'function'
      ? async () => {
          const { uri, port } = await setup();
          const admin = new MongoClient(uri, { serverSelectionTimeoutMS: 5000, useBigInt64: true });
          return { uri, port, admin, teardown: () => admin.close() };
        }
      : setup,
  );

  /** A database with the (owner, id) index and plants in slots, the slot index missing (dropped, or never built). */
  const withoutSlotIndex = async (admin: MongoClient, owner: string) => {
    const db = `plantstore_upkeep_${randomUUID().slice(0, 8)}`;
    const plants = admin.db(db).collection(COLLECTION);
    await plants.createIndex({ owner: 1, id: 1 }, { unique: true, name: INDEX_NAME });
    await plants.insertMany([1n, 2n, 3n].map((id) => ({ owner, id, name: `plant ${id}`, slot: Number(id) })));
    return { db, plants };
  };

  const slotIndexes = async (admin: MongoClient, db: string) =>
    (await admin.db(db).collection(COLLECTION).listIndexes().toArray())
      .map((i) => String(i['name']))
      .filter((n) => n.startsWith(SLOT_INDEX_NAME));

  test('a start-up over a collection whose indexes are in place reads no document and deletes none', async (ctx) => {
    const { uri, port, admin } = subject(ctx);
    const db = `plantstore_upkeep_${randomUUID().slice(0, 8)}`;
    const first = mongoInstance(uri, db);
    let proxy: TcpProxy | undefined;
    let second: MongodbPlantRepository | undefined;
    try {
      await right(first.repository.insert(freshOwner(), aPlant(1n), 10));
      proxy = await startTcpProxy(port);
      second = mongoInstance(`mongodb://127.0.0.1:${proxy.port}/`, db);
      await right(second.repository.ping);
      const sent = proxy
        .links()
        .map((l) => l.sent())
        .join('');
      for (const command of ['find', 'aggregate', 'count', 'delete', 'update']) {
        assert.not.ok(carries(command)(Buffer.from(sent, 'latin1')), `no ${command} at start-up`);
      }
    } finally {
      await Promise.all([first.close(), second?.close()]);
      await proxy?.close();
      await admin.db(db).dropDatabase();
    }
  });

  test('while the slot index is being built: pages, deletes and creates without a bound are served, creates under a quota answer 503 and readiness reports storage; then all are served', async (ctx) => {
    const { port, admin } = subject(ctx);
    const owner = freshOwner();
    const { db } = await withoutSlotIndex(admin, owner);
    const proxy = await startTcpProxy(port);
    const seen = captureLogs();
    let store: MongodbPlantRepository | undefined;
    try {
      proxy.holdUpstream((chunk) => carries('createIndexes')(chunk) && chunk.includes(SLOT_INDEX_NAME));
      store = mongoInstance(`mongodb://127.0.0.1:${proxy.port}/`, db, { logger: seen.logger, timeoutMs: DEADLINE_MS });
      const repo = store.repository;
      await eventually('the slot index’s build is on the wire', () => proxy.links().some((l) => l.held()));
      assert.equal(
        (await right(repo.page(owner, undefined, 10))).plants.map((p) => p.id),
        [1n, 2n, 3n],
      );
      assert.is(await right(repo.remove(owner, aPlant(3n).id)), true);
      assert.equal(await right(repo.insert(owner, aPlant(4n))), { _tag: 'Inserted' });
      assert.equal(await left(repo.insert(owner, aPlant(5n), 10)), { _tag: 'StorageUnavailable' });
      assert.equal(await left(repo.ping), { _tag: 'StorageUnavailable' });
      assert.ok(
        seen.lines.some((l) => l.level === 'info' && /building the quota's index/.test(l.message)),
        'the build is logged as it starts',
      );
      proxy.releaseAll();
      await eventually('ready once the index is built', async () => (await repo.ping())._tag === 'Right');
      assert.equal(await right(repo.insert(owner, aPlant(5n), 10)), { _tag: 'Inserted', count: 4 });
      assert.ok(seen.lines.some((l) => l.level === 'info' && /is in place after/.test(l.message)));
      assert.equal(
        seen.lines.filter((l) => l.level === 'error'),
        [],
      );
    } finally {
      proxy.releaseAll();
      await store?.close();
      await proxy.close();
      await admin.db(db).dropDatabase();
    }
  });

  test('a mend whose scan takes longer than a request may wait (each time) still completes, and creates under a quota are then served', async (ctx) => {
    const { port, admin } = subject(ctx);
    const owner = freshOwner();
    const { db } = await withoutSlotIndex(admin, owner);
    const proxy = await startTcpProxy(port);
    let store: MongodbPlantRepository | undefined;
    // Every scan for plants without a slot answers only after 3 deadlines: held on the wire, then delivered.
    proxy.holdUpstream((chunk) => chunk.includes(slotNull));
    const heldSince = new Map<number, number>();
    const delayer = setInterval(() => {
      for (const link of proxy.links()) {
        if (!link.held()) continue;
        const since = heldSince.get(link.id) ?? performance.now();
        heldSince.set(link.id, since);
        if (performance.now() - since < 3 * DEADLINE_MS) continue;
        heldSince.delete(link.id);
        link.release();
      }
    }, 20);
    try {
      store = mongoInstance(`mongodb://127.0.0.1:${proxy.port}/`, db, { timeoutMs: DEADLINE_MS });
      const repo = store.repository;
      await eventually(
        'a create under a quota is stored',
        async () => (await repo.insert(owner, aPlant(4n), 10)())._tag === 'Right',
        { timeoutMs: 10_000, everyMs: 100 },
      );
      assert.is((await slotIndexes(admin, db)).length, 1);
      assert.equal(await right(repo.insert(owner, aPlant(5n), 10)), { _tag: 'Inserted', count: 5 });
    } finally {
      clearInterval(delayer);
      proxy.releaseAll();
      await store?.close();
      await proxy.close();
      await admin.db(db).dropDatabase();
    }
  });

  run();
}
