import { randomUUID } from 'node:crypto';
import * as E from 'fp-ts/lib/Either.js';
import { MongoClient, ObjectId } from 'mongodb';
import * as assert from 'uvu/assert';
import {
  COLLECTION,
  mongodbPlantRepository,
  type MongodbPlantRepository,
} from '../../adapters/storage/mongodb/mongodb-plant-repository.js';
import {
  INDEX_NAME,
  INDEX_SPECS,
  REPAIR_COMMAND,
  SLOT_INDEX_NAME,
  missingIndexes,
  notInPlace,
} from '../../adapters/storage/mongodb/indexes.js';
import { OUTSIDE_FROM } from '../../adapters/storage/mongodb/quota.js';
import { repairStorage } from '../../adapters/storage/mongodb/repair.js';
import type { PlantId } from '../../domain/plant.js';
import { ferretDbBinary, sharedFerretDb } from '../../harness/servers.js';
import { aPlant, freshOwner, left, right } from '../support/fixtures.js';
import { captureLogs, type Line } from '../support/log-capture.js';
import { suiteWith } from '../support/suites.js';
import { eventually } from '../support/wait.js';

/**
 * The unique indexes under a running adapter (indexes.ts): a dropped one is noticed by the periodic check, creates
 * answer 503 and readiness fails until it is back; the adapter rebuilds it when it can, and when documents written
 * meanwhile share a key it says so once, naming the repair, which mends them (repair.ts) without losing a plant.
 */
const binary = ferretDbBinary();
const RECHECK_MS = 100;

const { test, subject, run } = suiteWith(
  'MongoDB unique indexes under a running adapter [FerretDB]',
  'skip' in binary ? binary : async () => ({ uri: (await sharedFerretDb(binary.bin)).uri }),
);

interface Under {
  readonly db: string;
  readonly store: MongodbPlantRepository;
  readonly admin: MongoClient;
  readonly lines: Line[];
  readonly done: () => Promise<void>;
}

const under = async (uri: string): Promise<Under> => {
  const db = `plantstore_index_${randomUUID().slice(0, 8)}`;
  const { logger, lines } = captureLogs();
  const store = mongodbPlantRepository({
    uri,
    db,
    timeoutMs: 2000,
    writeConcern: 'majority',
    journal: true,
    logger,
    indexRecheckMs: RECHECK_MS,
  });
  const admin = new MongoClient(uri, { serverSelectionTimeoutMS: 2000, useBigInt64: true });
  await right(store.repository.ping);
  return {
    db,
    store,
    admin,
    lines,
    done: async () => {
      await store.close();
      await admin.db(db).dropDatabase();
      await admin.close();
    },
  };
};

const listed = async (u: Under) =>
  ((await u.admin.db(u.db).collection(COLLECTION).listIndexes().toArray()) as Array<{ name?: unknown }>).map((i) =>
    String(i.name),
  );

const repair = (uri: string, db: string, keepFirst = false) => {
  const said: string[] = [];
  return repairStorage({ uri, db, noticeMs: 5 * RECHECK_MS, keepFirst, report: (line) => void said.push(line) }).then(
    (outcome) => ({ outcome, said }),
  );
};

test('both unique indexes dropped: noticed within the check, creates 503 and readiness fails meanwhile, rebuilt by the adapter, logged once each way', async (ctx) => {
  const u = await under(subject(ctx).uri);
  const owner = freshOwner();
  try {
    await right(u.store.repository.insert(owner, aPlant(1n), 10));
    await u.admin.db(u.db).collection(COLLECTION).dropIndexes();
    await eventually('both back', async () => {
      const names = await listed(u);
      return names.includes(INDEX_NAME) && names.includes(SLOT_INDEX_NAME);
    });
    assert.ok(E.isRight(await u.store.repository.ping()));
    assert.equal(await right(u.store.repository.insert(owner, aPlant(2n), 10)), { _tag: 'Inserted', count: 2 });
    const missing = u.lines.filter((l) => l.level === 'error' && /a unique index is missing/.test(l.message));
    assert.is(missing.length, 1, JSON.stringify(u.lines));
    assert.ok(u.lines.some((l) => l.level === 'info' && /in place; serving creates again/.test(l.message)));
  } finally {
    await u.done();
  }
});

test('plants sharing a slot, written while the slot index was missing: the rebuild is refused and logged once with the repair; creates 503, pages and deletes served; the repair mends without losing a plant, and says so once', async (ctx) => {
  const { uri } = subject(ctx);
  const u = await under(uri);
  const owner = freshOwner();
  try {
    for (const id of [1n, 2n]) await right(u.store.repository.insert(owner, aPlant(id), 3));
    const plants = u.admin.db(u.db).collection(COLLECTION);
    await plants.dropIndex(SLOT_INDEX_NAME);
    // What two processes that had not noticed yet could write: two plants in one slot (one no other plant holds;
    // outside, so that the delete below moves neither into the slot it frees).
    await plants.insertMany([
      { _id: new ObjectId(), owner, id: 3n, name: 'plant 3', slot: OUTSIDE_FROM + 7 },
      { _id: new ObjectId(), owner, id: 4n, name: 'plant 4', slot: OUTSIDE_FROM + 7 },
    ]);
    await eventually('the refused rebuild logged', async () =>
      u.lines.some((l) => l.level === 'error' && l.message.includes(REPAIR_COMMAND)),
    );
    assert.equal(await left(u.store.repository.insert(owner, aPlant(5n), 3)), { _tag: 'StorageUnavailable' });
    assert.ok(E.isLeft(await u.store.repository.ping()));
    assert.is((await right(u.store.repository.page(owner, undefined, 10))).plants.length, 4);
    assert.ok(await right(u.store.repository.remove(owner, 1n as PlantId)));

    const first = await repair(uri, u.db);
    // The index is built by the repair, or by the adapter's own check once nothing shares a slot.
    const { indexesBuilt, ...mended } = first.outcome;
    assert.equal(mended, { movedOut: 1, duplicatesDeleted: 0, conflicts: 0 });
    assert.ok(indexesBuilt.length <= 1);
    await eventually('the slot index back', async () => (await listed(u)).includes(SLOT_INDEX_NAME));
    const again = await repair(uri, u.db);
    assert.equal(again.said, ['both unique indexes are in place: nothing to repair']);
    await eventually('ready again', async () => E.isRight(await u.store.repository.ping()));
    // Three plants kept over a bound of 3 (one of them outside): refused, then exactly enough room after a delete.
    assert.equal(await right(u.store.repository.insert(owner, aPlant(5n), 3)), { _tag: 'OwnerFull', count: 3 });
    assert.ok(await right(u.store.repository.remove(owner, 3n as PlantId)));
    assert.is((await right(u.store.repository.insert(owner, aPlant(5n), 3)))._tag, 'Inserted');
    assert.equal(await right(u.store.repository.insert(owner, aPlant(6n), 3)), { _tag: 'OwnerFull', count: 3 });
    const refusals = u.lines.filter((l) => l.level === 'error' && l.message.includes(REPAIR_COMMAND));
    assert.is(refusals.length, 1, 'said once, not at every check');
  } finally {
    await u.done();
  }
});

test('the repair moves no plant before every process can have noticed the missing slot index, even when its first scan found no shared slot (4 plants under a bound of 3, indexes back)', async (ctx) => {
  const { uri } = subject(ctx);
  const u = await under(uri);
  const owner = freshOwner();
  try {
    for (const id of [1n, 2n]) await right(u.store.repository.insert(owner, aPlant(id), 3));
    const plants = u.admin.db(u.db).collection(COLLECTION);
    await plants.dropIndex(SLOT_INDEX_NAME);
    const repaired = repair(uri, u.db);
    // Written after the repair's first look, by processes that have not noticed: a slot shared, the owner at 3.
    await plants.insertMany([
      { _id: new ObjectId(), owner, id: 3n, name: 'plant 3', slot: 1 },
      { _id: new ObjectId(), owner, id: 4n, name: 'plant 4', slot: 1 },
    ]);
    await plants.deleteOne({ owner, id: 2n });
    await new Promise((resolve) => setTimeout(resolve, 2 * RECHECK_MS));
    const slots = async () => (await plants.find({ owner }).toArray()).map((d) => Number(d['slot'])).sort();
    assert.equal(await slots(), [0, 1, 1], 'nothing moved while a process may still trust a look');
    assert.is((await repaired).outcome.movedOut, 1);
    await eventually('ready again', async () => E.isRight(await u.store.repository.ping()));
    assert.equal(await right(u.store.repository.insert(owner, aPlant(5n), 3)), { _tag: 'OwnerFull', count: 3 });
    assert.is(await plants.countDocuments({ owner }), 3);
  } finally {
    await u.done();
  }
});

test('plants sharing an id: identical copies are deleted, different ones listed and left, unless the repair keeps the first written', async (ctx) => {
  const { uri } = subject(ctx);
  const u = await under(uri);
  const owner = freshOwner();
  // The repair alone: no adapter rebuilding an index as soon as nothing shares its key.
  await u.store.close();
  try {
    const plants = u.admin.db(u.db).collection(COLLECTION);
    await plants.dropIndexes();
    await plants.insertMany([
      { _id: new ObjectId(), owner, id: 1n, name: 'Fern', slot: 0 },
      { _id: new ObjectId(), owner, id: 1n, name: 'Fern', slot: 1 },
      { _id: new ObjectId(), owner, id: 2n, name: 'Moss', slot: 2 },
      { _id: new ObjectId(), owner, id: 2n, name: 'Palm', slot: 3 },
    ]);
    const first = await repair(uri, u.db);
    assert.equal(first.outcome, { movedOut: 0, duplicatesDeleted: 1, conflicts: 1, indexesBuilt: [SLOT_INDEX_NAME] });
    assert.is(await plants.countDocuments({ owner }), 3);
    const kept = await repair(uri, u.db, true);
    assert.equal(kept.outcome, { movedOut: 0, duplicatesDeleted: 1, conflicts: 0, indexesBuilt: [INDEX_NAME] });
    assert.equal(
      (await plants.find({ owner }).sort({ id: 1 }).toArray()).map((d) => `${String(d['id'])} ${String(d['name'])}`),
      ['1 Fern', '2 Moss'],
    );
  } finally {
    await u.done();
  }
});

/** An index as MongoDB's `$indexStats` shows it (a `spec` as listIndexes lists it; `building: true` while built). */
const stat = (spec: (typeof INDEX_SPECS)[number], more: { building?: true; shard?: string } = {}) => ({
  name: spec.name,
  key: spec.key,
  spec: { v: 2, key: spec.key, name: spec.name, unique: true },
  ...more,
});

test('an index MongoDB shows as still being built ($indexStats `building`), on any shard, is not in place', () => {
  const [id, slot] = INDEX_SPECS;
  assert.equal(notInPlace([stat(id), stat(slot)]), []);
  assert.equal(notInPlace([stat(id), stat(slot, { building: true })]), [slot]);
  assert.equal(notInPlace([stat(id, { shard: 'a' }), stat(id, { shard: 'b', building: true }), stat(slot)]), [id]);
  assert.equal(notInPlace([stat(id), { ...stat(slot), spec: { key: slot.key } }]), [slot]);
  // listIndexes's shape, what FerretDB answers with: an index listed is complete.
  assert.equal(notInPlace([{ key: { _id: 1 } }, id, slot]), []);
});

test('FerretDB does not implement $indexStats: the indexes it lists are in place, a dropped one is not', async (ctx) => {
  const u = await under(subject(ctx).uri);
  try {
    const plants = u.admin.db(u.db).collection(COLLECTION);
    const refused = await plants
      .aggregate([{ $indexStats: {} }])
      .toArray()
      .then(
        () => undefined,
        (e: unknown) => (e as { code?: unknown }).code,
      );
    assert.is(refused, 238, 'NotImplemented');
    assert.equal(await missingIndexes(plants), []);
    await plants.dropIndex(SLOT_INDEX_NAME);
    assert.equal(
      (await missingIndexes(plants)).map((s) => s.name),
      [SLOT_INDEX_NAME],
    );
  } finally {
    await u.done();
  }
});

test('a store that is closed answers unavailable, not a fault', async (ctx) => {
  const u = await under(subject(ctx).uri);
  await u.done();
  assert.equal(await left(u.store.repository.insert(freshOwner(), aPlant(1n), 10)), { _tag: 'StorageUnavailable' });
  assert.equal(await left(u.store.repository.page(freshOwner(), undefined, 10)), { _tag: 'StorageUnavailable' });
});

run();
