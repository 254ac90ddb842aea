import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import * as assert from 'uvu/assert';
import {
  COLLECTION,
  INDEX_NAME,
  SLOT_INDEX_NAME,
  type MongodbPlantRepository,
} from '../../adapters/storage/mongodb/mongodb-plant-repository.js';
import type { Owner } from '../../domain/plant.js';
import { aPlant, freshOwner, right } from '../support/fixtures.js';
import { ferretDbServers, mongoInstance } from '../support/storage-backends.js';
import { captureLogs } from '../support/log-capture.js';
import { suiteWith } from '../support/suites.js';
import { carries, startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { eventually, sleep } from '../support/wait.js';

/**
 * The slot index rebuilt under running processes (adapters/storage/mongodb/indexes.ts). While it was missing, two
 * processes may have put plants of one owner in the same slot; the process that rebuilds it moves all but one of each
 * to outside slots (they are kept, and count). Every other process remembers the owner's slots without those outside
 * plants, so it must drop what it remembers before it admits another create, or the owner grows past its bound. It
 * learns of the rebuild by the name of the index it finds (every build names it anew): at its periodic look, or in its
 * own rebuild when it saw the index missing and another process's index was in place first.
 *
 * Process B (an adapter instance behind a TCP proxy, so that the test decides what it can see) knows an owner of 3
 * plants; the index is dropped; 6 plants are stored under B's slots (what other processes do without the index); a
 * process A started then mends them (3 inside, 6 outside: 9 of a bound of 10) and rebuilds the index. Of 20 creates
 * through B afterwards exactly one may store. A B that kept its map would store 7 (16 plants).
 */
const MAX = 10;

/**
 * What B can see of the rebuild:
 * - `rename only`: B's index checks are held on the wire from before the drop until A has rebuilt: B never sees the
 *   index missing, only the rebuilt index's name;
 * - `gap, then A`: B sees the index missing, but its own build is held until A's is in place: B then finds an
 *   index it did not build;
 * - `two rebuilds`: as `rename only`, and after A's rebuild the index is dropped once more and A rebuilds it again,
 *   with nothing left to mend, before B looks.
 */
type Sight = 'rename only' | 'gap, then A' | 'two rebuilds';

for (const { name, setup } of ferretDbServers()) {
  const { test, subject, run } = suiteWith(
    `MongoDB slot index rebuilt under running processes [${name}]`,
    typeof setup === 'function'
      ? async () => {
          const { uri, port } = await setup();
          const admin = new MongoClient(uri, { serverSelectionTimeoutMS: 5000, useBigInt64: true });
          return { uri, port, admin, teardown: () => admin.close() };
        }
      : setup,
  );

  const slotIndexes = async (admin: MongoClient, db: string): Promise<string[]> =>
    (await admin.db(db).collection(COLLECTION).listIndexes().toArray())
      .map((i) => String(i['name']))
      .filter((n) => n.startsWith(SLOT_INDEX_NAME));
  const dropSlotIndexes = async (admin: MongoClient, db: string) => {
    for (const name of await slotIndexes(admin, db)) await admin.db(db).collection(COLLECTION).dropIndex(name);
  };

  const scenario = async (ctx: Parameters<typeof subject>[0], sight: Sight) => {
    const { uri, port, admin } = subject(ctx);
    const db = `plantstore_rebuild_${randomUUID().slice(0, 8)}`;
    const proxy: TcpProxy = await startTcpProxy(port);
    const seen = captureLogs();
    const b = mongoInstance(`mongodb://127.0.0.1:${proxy.port}/`, db, { logger: seen.logger });
    let a: MongodbPlantRepository | undefined;
    const plants = admin.db(db).collection(COLLECTION);
    const owner: Owner = freshOwner();
    try {
      for (let id = 1n; id <= 3n; id++) {
        assert.equal(await right(b.repository.insert(owner, aPlant(id), MAX)), { _tag: 'Inserted', count: Number(id) });
      }
      const before = await slotIndexes(admin, db);
      const slotsOfB = (await plants.find({ owner }).toArray()).map((d) => Number(d['slot']));

      if (sight === 'gap, then A') proxy.holdUpstream(carries('createIndexes'));
      else {
        proxy.holdUpstream(carries('listIndexes'));
        await sleep(500); // an index check already on its way has been answered before the drop
      }
      await dropSlotIndexes(admin, db);
      // What two processes store without the index: plants of the owner in slots B already holds.
      await plants.insertMany(
        Array.from({ length: 6 }, (_, i) => ({ owner, id: BigInt(100 + i), name: `gap ${i}`, slot: slotsOfB[i % 3] })),
      );
      if (sight === 'gap, then A') {
        await eventually('B sees the index missing', () =>
          seen.lines.some((l) => l.level === 'warn' && /went missing/.test(l.message)),
        );
      }

      // A process started now mends the shared slots and builds the index anew.
      a = mongoInstance(uri, db);
      await right(a.repository.ping);
      const rebuilt = await slotIndexes(admin, db);
      assert.is(rebuilt.length, 1, `one slot index: ${rebuilt.join(', ')}`);
      assert.not.equal(rebuilt, before, 'the rebuilt index has a new name');
      assert.is(await plants.countDocuments({ owner, slot: { $gte: MAX } }), 6, 'six plants mended to outside slots');
      if (sight === 'two rebuilds') {
        await dropSlotIndexes(admin, db);
        await eventually('A puts the index back again', async () => (await slotIndexes(admin, db)).length === 1);
      }

      proxy.releaseAll();
      await eventually('B answers its readiness check', async () => (await b.repository.ping())._tag === 'Right');
      if (sight !== 'gap, then A') {
        assert.not.ok(
          seen.lines.some((l) => /went missing/.test(l.message)),
          'the premise: B never saw the index missing',
        );
      }

      const outcomes = await Promise.all(
        Array.from({ length: 20 }, (_, i) => right(b.repository.insert(owner, aPlant(200n + BigInt(i)), MAX))),
      );
      const inserted = outcomes.filter((o) => o._tag === 'Inserted').length;
      const stored = await plants.countDocuments({ owner });
      assert.is(inserted, 1, `of 20 creates through B at 9 of ${MAX}, ${inserted} stored (${stored} plants kept)`);
      assert.is(stored, MAX);
      for (const o of outcomes) if (o._tag !== 'Inserted') assert.equal(o, { _tag: 'OwnerFull', count: MAX });
    } finally {
      proxy.releaseAll();
      await Promise.all([b.close(), a?.close()]);
      await proxy.close();
      await admin.db(db).dropDatabase();
    }
  };

  test('a process that never saw the index missing drops its slot maps once it sees the rebuilt index’s new name', (ctx) =>
    scenario(ctx, 'rename only'));

  test('a process that saw the index missing, whose own build found the index another process had rebuilt, drops its slot maps', (ctx) =>
    scenario(ctx, 'gap, then A'));

  test('two rebuilds before a process looks (the second with nothing to mend): it still drops its slot maps', (ctx) =>
    scenario(ctx, 'two rebuilds'));

  test('plants stored in one slot again while the index is being rebuilt: mended again, without an error line', async (ctx) => {
    const { port, admin } = subject(ctx);
    const db = `plantstore_rebuild_${randomUUID().slice(0, 8)}`;
    const proxy = await startTcpProxy(port);
    const seen = captureLogs();
    const plants = admin.db(db).collection(COLLECTION);
    const owner = freshOwner();
    let a: MongodbPlantRepository | undefined;
    try {
      // Left by a slot index dropped under processes: two plants of the owner in one slot.
      await plants.createIndex({ owner: 1, id: 1 }, { unique: true, name: INDEX_NAME });
      await plants.insertMany([1n, 2n].map((id) => ({ owner, id, name: `plant ${id}`, slot: 0 })));
      // A process starts; its second try at the slot index (after its first mend) is held on the wire while a process
      // that has not noticed the missing index yet stores two more plants in one slot.
      let slotBuilds = 0;
      proxy.holdUpstream(
        (chunk) => carries('createIndexes')(chunk) && chunk.includes(SLOT_INDEX_NAME) && ++slotBuilds >= 2,
      );
      a = mongoInstance(`mongodb://127.0.0.1:${proxy.port}/`, db, { logger: seen.logger });
      await eventually('the second try at the slot index is on the wire', () => proxy.links().some((l) => l.held()));
      await plants.insertMany([3n, 4n].map((id) => ({ owner, id, name: `plant ${id}`, slot: 1 })));
      proxy.releaseAll();
      await eventually('A answers its readiness check', async () => (await a?.repository.ping())?._tag === 'Right');
      const errors = seen.lines.filter((l) => l.level === 'error');
      assert.equal(errors, [], 'no error line (nothing for an operator to do)');
      assert.ok(
        seen.lines.some((l) => l.level === 'warn' && /and 2 plants sharing one/.test(l.message)),
        JSON.stringify(seen.lines),
      );
      assert.is((await slotIndexes(admin, db)).length, 1);
      assert.is(await plants.countDocuments({ owner }), 4, 'every plant is kept');
      assert.is(await plants.countDocuments({ owner, slot: { $gte: 3 } }), 2, 'two of them moved outside');
      assert.equal(await right(a.repository.insert(owner, aPlant(5n), 3)), { _tag: 'OwnerFull', count: 4 });
    } finally {
      proxy.releaseAll();
      await a?.close();
      await proxy.close();
      await admin.db(db).dropDatabase();
    }
  });

  test('another process’s build of the slot index under its own name, not listed yet (MongoDB lists an index once built): waited for, without an error line', async (ctx) => {
    const { port, admin } = subject(ctx);
    const db = `plantstore_rebuild_${randomUUID().slice(0, 8)}`;
    const proxy = await startTcpProxy(port);
    const seen = captureLogs();
    const plants = admin.db(db).collection(COLLECTION);
    let a: MongodbPlantRepository | undefined;
    try {
      await plants.createIndex({ owner: 1, id: 1 }, { unique: true, name: INDEX_NAME });
      // A's build of the slot index waits on the wire while another process builds its own, under another name: A
      // is answered IndexOptionsConflict (85). On MongoDB that index is listed only once built; here A's look at the
      // listed indexes waits until that index is gone again, so A sees what it would see there: none yet.
      proxy.holdUpstream((chunk) => carries('createIndexes')(chunk) && chunk.includes(SLOT_INDEX_NAME));
      a = mongoInstance(`mongodb://127.0.0.1:${proxy.port}/`, db, { logger: seen.logger });
      await eventually('A’s build of the slot index is on the wire', () => proxy.links().some((l) => l.held()));
      await plants.createIndex({ owner: 1, slot: 1 }, { unique: true, name: `${SLOT_INDEX_NAME}_other` });
      proxy.releaseAll();
      proxy.holdUpstream(carries('listIndexes'));
      await eventually('A looks at the listed indexes after the conflict', () => proxy.links().some((l) => l.held()));
      await plants.dropIndex(`${SLOT_INDEX_NAME}_other`);
      proxy.releaseAll();
      await eventually('A answers its readiness check', async () => (await a?.repository.ping())?._tag === 'Right');
      assert.equal(
        seen.lines.filter((l) => l.level === 'error'),
        [],
        'no error line',
      );
      assert.is((await slotIndexes(admin, db)).length, 1);
      const owner = freshOwner();
      assert.equal(await right(a.repository.insert(owner, aPlant(1n), 1)), { _tag: 'Inserted', count: 1 });
    } finally {
      proxy.releaseAll();
      await a?.close();
      await proxy.close();
      await admin.db(db).dropDatabase();
    }
  });

  run();
}
