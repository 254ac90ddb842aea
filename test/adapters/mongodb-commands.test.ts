import { randomUUID } from 'node:crypto';
import { BSON, MongoClient, type CommandStartedEvent, type CommandSucceededEvent } from 'mongodb';
import { pino } from 'pino';
import * as assert from 'uvu/assert';
import {
  COLLECTION,
  mongodbPlantRepository,
  type MongodbPlantRepository,
  type MongoOptions,
} from '../../adapters/storage/mongodb/mongodb-plant-repository.js';
import type { Owner, PlantId } from '../../domain/plant.js';
import { aPlant, freshOwner, right } from '../support/fixtures.js';
import { ferretDbServers } from '../support/storage-backends.js';
import { suiteWith } from '../support/suites.js';

/**
 * Round trips per operation, counted by the driver's command monitoring, and the bytes of the replies: what the storage
 * sends for a create, an identical retry, a conflicting create (409), a refusal at the bound, a delete and a page, for
 * owners at 10, 500 and 999 of a bound of 1,000 in one collection. The port's promise (docs/storage.md): constant
 * commands per operation whatever the owner's fill; one command per create for an owner this process holds.
 */
const MAX = 1000;
const FILLS = [10, 500, 999] as const;

const backends = ferretDbServers().map(({ name, setup }) => ({
  name: name === 'FerretDB' ? 'SQLite' : 'PostgreSQL',
  setup: typeof setup === 'function' ? async () => ({ server: await setup() }) : setup,
}));

interface Sent {
  readonly commands: string[];
  /** Bytes of the replies (BSON), what the operation read from the server. */
  readonly bytes: number;
}

/** The commands `run` sends, by name, in order, and the bytes of their replies. */
const sentBy = async (store: MongodbPlantRepository, run: () => Promise<unknown>): Promise<Sent> => {
  const commands: string[] = [];
  let bytes = 0;
  const started = (e: CommandStartedEvent) => {
    if (e.commandName !== 'listIndexes') commands.push(e.commandName);
  };
  const succeeded = (e: CommandSucceededEvent) => {
    if (e.commandName !== 'listIndexes') bytes += BSON.calculateObjectSize(e.reply as BSON.Document);
  };
  store.client.on('commandStarted', started);
  store.client.on('commandSucceeded', succeeded);
  try {
    await run();
  } finally {
    store.client.off('commandStarted', started);
    store.client.off('commandSucceeded', succeeded);
  }
  return { commands, bytes };
};

const storeOn = (uri: string, db: string, extra: Partial<MongoOptions> = {}) =>
  mongodbPlantRepository({
    uri,
    db,
    timeoutMs: 10_000, // the looks then are trusted 25 s (mongodb-plant-repository.ts, lookTtlFor)
    writeConcern: 'majority',
    journal: true,
    logger: pino({ level: 'silent' }),
    indexRecheckMs: 3_600_000,
    monitorCommands: true,
    ...extra,
  });

/** Gives each owner its plants as the adapter stores them (slots 0..n-1), in bulk. */
const seed = async (admin: MongoClient, db: string, owners: ReadonlyArray<{ n: number; owner: Owner }>) => {
  for (const { n, owner } of owners) {
    const docs = Array.from({ length: n }, (_, i) => ({ owner, id: BigInt(i), name: `plant ${i}`, slot: i }));
    if (docs.length > 0) await admin.db(db).collection(COLLECTION).insertMany(docs);
  }
};

for (const backend of backends) {
  const { test, subject, run } = suiteWith(
    `MongoDB adapter: round trips per operation [FerretDB/${backend.name}]`,
    backend.setup,
  );

  test('create, identical retry, conflict, refusal, delete and page each cost a constant number of commands at 10, 500 and 999 of 1,000', async (ctx) => {
    const { uri } = subject(ctx).server;
    const db = `plantstore_commands_${randomUUID().slice(0, 8)}`;
    const admin = new MongoClient(uri, { serverSelectionTimeoutMS: 5000, useBigInt64: true });
    const store = storeOn(uri, db);
    const repo = store.repository;
    try {
      await right(repo.ping);
      const owners = FILLS.map((n) => ({ n, owner: freshOwner(`fill${n}`) }));
      await seed(admin, db, owners);
      const rows: string[] = [];
      for (const { n, owner } of owners) {
        const next = BigInt(n + 1000);
        const first = await sentBy(store, () => right(repo.insert(owner, aPlant(next, 'new'), MAX)));
        const remove = await sentBy(store, async () => assert.ok(await right(repo.remove(owner, next as PlantId))));
        const held = await sentBy(store, async () =>
          assert.is((await right(repo.insert(owner, aPlant(next, 'new'), MAX)))._tag, 'Inserted'),
        );
        const retry = await sentBy(store, async () =>
          assert.is((await right(repo.insert(owner, aPlant(next, 'new'), MAX)))._tag, 'Exists'),
        );
        const conflict = await sentBy(store, async () => {
          const outcome = await right(repo.insert(owner, aPlant(next, 'other'), MAX));
          assert.ok(outcome._tag === 'Exists' && outcome.stored.name === 'new');
        });
        const page = await sentBy(store, async () =>
          assert.ok((await right(repo.page(owner, 3n as PlantId, 100))).plants.length > 0),
        );
        const full =
          n + 1 < MAX
            ? undefined
            : await sentBy(store, async () =>
                assert.equal(await right(repo.insert(owner, aPlant(next + 1n, 'new'), MAX)), {
                  _tag: 'OwnerFull',
                  count: MAX,
                }),
              );
        rows.push(
          `${n}: first create here ${first.commands.join('+')} (${first.bytes} B), then ${held.commands.join('+')} (${held.bytes} B); retry ${retry.commands.join('+')}; 409 ${conflict.commands.join('+')}; delete ${remove.commands.join('+')}; page of 100 ${page.commands.join('+')}${full === undefined ? '' : `; refused at the bound ${full.commands.join('+')} (${full.bytes} B)`}`,
        );
        // A glance at the owner's highest slot, then a create is one insert.
        assert.equal(first.commands, ['find', 'insert'], `first create at ${n}`);
        assert.equal(held.commands, ['insert'], `create at ${n}`);
        // FerretDB does not say which unique index refused an insert: the id is looked up (MongoDB names the index), and
        // the slot it tried stays free. At the bound no slot is believed free: a glance at the highest slot (a delete
        // elsewhere leaves room above it), then the id.
        assert.equal(retry.commands, n + 1 < MAX ? ['insert', 'find'] : ['find', 'find'], `retry at ${n}`);
        assert.equal(conflict.commands, n + 1 < MAX ? ['insert', 'find'] : ['find'], `409 at ${n}`);
        // Refused: the id, the count of other ids, the id again (a plant of this id found by either: not a full owner).
        if (full !== undefined) assert.equal(full.commands, ['find', 'aggregate', 'find'], 'refused');
        // The delete, then the highest slot (here the deleted plant's own: nothing to move into its slot).
        assert.equal(remove.commands, ['find', 'delete', 'find'], `delete at ${n}`);
        assert.equal(page.commands, ['find'], `page at ${n}`);
      }
      process.stdout.write(
        `\n  [${backend.name}] commands per operation, by the owner's plants:\n    ${rows.join('\n    ')}\n`,
      );
    } finally {
      await store.close();
      await admin.db(db).dropDatabase();
      await admin.close();
    }
  });

  test('an owner not held (the budget full) costs a glance at its highest slot and an insert, and reads a few hundred bytes whatever its fill', async (ctx) => {
    const { uri } = subject(ctx).server;
    const db = `plantstore_unheld_${randomUUID().slice(0, 8)}`;
    const admin = new MongoClient(uri, { serverSelectionTimeoutMS: 5000, useBigInt64: true });
    // A budget of one byte holds no owner.
    const store = storeOn(uri, db, { slotCacheBytes: 1 });
    try {
      await right(store.repository.ping);
      const owners = [10, 500, 998].map((n) => ({ n, owner: freshOwner(`unheld${n}`) }));
      await seed(admin, db, owners);
      for (const { n, owner } of owners) {
        for (const id of [5000n, 5001n]) {
          const sent = await sentBy(store, async () =>
            assert.equal(await right(store.repository.insert(owner, aPlant(id), MAX)), {
              _tag: 'Inserted',
              count: n + 1 + Number(id - 5000n), // as the glance sees it: packed up to the highest slot
            }),
          );
          assert.equal(sent.commands, ['find', 'insert'], `create at ${n}`);
          assert.ok(sent.bytes < 2048, `create at ${n} read ${sent.bytes} bytes`);
        }
      }
    } finally {
      await store.close();
      await admin.db(db).dropDatabase();
      await admin.close();
    }
  });

  test('an owner not held whose highest slot is taken (it filled up, then deleted) reads its slots at each create', async (ctx) => {
    const { uri } = subject(ctx).server;
    const db = `plantstore_holes_${randomUUID().slice(0, 8)}`;
    const admin = new MongoClient(uri, { serverSelectionTimeoutMS: 5000, useBigInt64: true });
    const store = storeOn(uri, db, { slotCacheBytes: 1 });
    const owner = freshOwner();
    try {
      await right(store.repository.ping);
      await seed(admin, db, [{ n: MAX, owner }]);
      await admin.db(db).collection(COLLECTION).deleteOne({ owner, slot: 500 });
      const sent = await sentBy(store, async () =>
        assert.equal(await right(store.repository.insert(owner, aPlant(5000n), MAX)), { _tag: 'Inserted', count: MAX }),
      );
      assert.equal(sent.commands, ['find', 'find', 'aggregate', 'find', 'insert']);
      process.stdout.write(`\n  [${backend.name}] not held, 999 of 1,000 with a hole: ${sent.bytes} B read\n`);
    } finally {
      await store.close();
      await admin.db(db).dropDatabase();
      await admin.close();
    }
  });

  test('a held owner is looked at again once its look is older than the expiry: one index seek before the insert', async (ctx) => {
    const { uri } = subject(ctx).server;
    const db = `plantstore_relook_${randomUUID().slice(0, 8)}`;
    const store = storeOn(uri, db, { lookTtlMs: 0 });
    const owner = freshOwner();
    try {
      await right(store.repository.insert(owner, aPlant(1n), MAX));
      const sent = await sentBy(store, () => right(store.repository.insert(owner, aPlant(2n), MAX)));
      assert.equal(sent.commands, ['find', 'insert']);
    } finally {
      await store.close();
      const admin = new MongoClient(uri, { serverSelectionTimeoutMS: 5000 });
      await admin.db(db).dropDatabase();
      await admin.close();
    }
  });

  run();
}
