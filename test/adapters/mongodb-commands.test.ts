import { randomUUID } from 'node:crypto';
import { MongoClient, type CommandStartedEvent } from 'mongodb';
import { pino } from 'pino';
import * as assert from 'uvu/assert';
import {
  COLLECTION,
  mongodbPlantRepository,
  type MongodbPlantRepository,
} from '../../adapters/storage/mongodb/mongodb-plant-repository.js';
import type { PlantId } from '../../domain/plant.js';
import { aPlant, freshOwner, right } from '../support/fixtures.js';
import { ferretDbServers } from '../support/storage-backends.js';
import { suiteWith } from '../support/suites.js';

/**
 * Round trips per operation, counted by the driver's command monitoring: what the storage sends for a create, an
 * identical retry, a conflicting create (409), a delete and a page, for an owner at 10, 5,000 and 9,999 of a bound of
 * 10,000, in a collection that holds all three owners. In the steady state a create costs 1 (2 for an owner the
 * process holds nothing of, at a low fill), a delete 3 (the last one the hint of the freed slot), a page 1.
 */
const MAX = 10_000;
const FILLS = [10, 5000, 9999] as const;

const backends = ferretDbServers().map(({ name, setup }) => ({
  name: name === 'FerretDB' ? 'SQLite' : 'PostgreSQL',
  setup: typeof setup === 'function' ? async () => ({ server: await setup() }) : setup,
}));

/** The commands `run` sends, by name, in order. */
const commandsOf = async (store: MongodbPlantRepository, run: () => Promise<unknown>): Promise<string[]> => {
  const seen: string[] = [];
  const listener = (e: CommandStartedEvent) => seen.push(e.commandName);
  for (const client of [store.client, store.slotClient]) client.on('commandStarted', listener);
  try {
    await run();
  } finally {
    for (const client of [store.client, store.slotClient]) client.off('commandStarted', listener);
  }
  return seen;
};

for (const backend of backends) {
  const { test, subject, run } = suiteWith(
    `MongoDB adapter: round trips per operation [FerretDB/${backend.name}]`,
    backend.setup,
  );

  test('create, identical retry, conflict, delete and page each cost a constant number of commands at 10, 5,000 and 9,999 of 10,000', async (ctx) => {
    const { uri } = subject(ctx).server;
    const db = `plantstore_commands_${randomUUID().slice(0, 8)}`;
    const admin = new MongoClient(uri, { serverSelectionTimeoutMS: 5000, useBigInt64: true });
    const store = mongodbPlantRepository({
      uri,
      db,
      timeoutMs: 30_000,
      writeConcern: 'majority',
      journal: true,
      logger: pino({ level: 'silent' }),
      indexRecheckMs: 3_600_000,
      // A refusal rests on the load of the owner before it, however slow the server (see owner-slots.ts).
      fullRecheckMs: 600_000,
      monitorCommands: true,
    });
    const repo = store.repository;
    try {
      await right(repo.ping);
      // This version's first create in the database (it marks the bound, see owner-slots.ts) before the plants are
      // written behind its back: they stand for plants it stored itself, not for a version from before markers.
      await right(repo.insert(freshOwner('first'), aPlant(1n), MAX));
      // The owners' plants as the adapter stores them (one document each, an inside slot each), written in bulk.
      const owners = FILLS.map((n) => ({ n, owner: freshOwner(`fill${n}`) }));
      for (const { n, owner } of owners) {
        const docs = Array.from({ length: n }, (_, i) => ({ owner, id: BigInt(i), name: `plant ${i}`, slot: i }));
        for (let i = 0; i < docs.length; i += 5000)
          await admin
            .db(db)
            .collection(COLLECTION)
            .insertMany(docs.slice(i, i + 5000));
      }
      const rows: string[] = [];
      for (const { n, owner } of owners) {
        const next = BigInt(n + 1000);
        const cold = await commandsOf(store, () => right(repo.insert(owner, aPlant(next, 'new'), MAX)));
        const remove = await commandsOf(store, async () => assert.ok(await right(repo.remove(owner, next as PlantId))));
        const warm = await commandsOf(store, async () =>
          assert.is((await right(repo.insert(owner, aPlant(next, 'new'), MAX)))._tag, 'Inserted'),
        );
        const retry = await commandsOf(store, async () =>
          assert.is((await right(repo.insert(owner, aPlant(next, 'new'), MAX)))._tag, 'Exists'),
        );
        const conflict = await commandsOf(store, async () => {
          const outcome = await right(repo.insert(owner, aPlant(next, 'other'), MAX));
          assert.ok(outcome._tag === 'Exists' && outcome.stored.name === 'new');
        });
        const page = await commandsOf(store, async () =>
          assert.ok((await right(repo.page(owner, 3n as PlantId, 1000))).plants.length > 0),
        );
        const refuse = () =>
          commandsOf(store, async () =>
            assert.is((await right(repo.insert(owner, aPlant(next + 1n, 'new'), MAX)))._tag, 'OwnerFull'),
          );
        // Full: the first refusal after this process's own delete looks at the owner's slots again; the next do not.
        const firstFull = n + 1 < MAX ? [] : await refuse();
        const full = n + 1 < MAX ? [] : await refuse();
        rows.push(
          `${n}: create ${cold.length} (first of this owner here: ${cold.join('+')}), then ${warm.length}; retry ${retry.length}; 409 ${conflict.length}; delete ${remove.length}; page ${page.length}${full.length > 0 ? `; refused at the bound ${firstFull.length} then ${full.length}` : ''}`,
        );
        // An owner this process holds nothing of: the markers (unless read within the last second), then inserts
        // from a random place (a full owner it learns by collisions and one load).
        if (n < MAX / 100)
          assert.ok(cold.length <= 2 && cold.at(-1) === 'insert', `first create at ${n}: ${cold.join(', ')}`);
        else assert.ok(cold.length <= 40, `first create at ${n}: ${cold.join(', ')}`);
        // At the bound, after its own delete: the freed slot is taken through its hint (left to the hint, since
        // another process would likely take it first; see owner-slots.ts).
        assert.equal(warm, n + 1 >= MAX ? ['find', 'insert'] : ['insert'], `create at ${n}`);
        if (n + 1 >= MAX) {
          assert.ok(firstFull.length <= 3, `first refusal: ${firstFull.join(', ')}`);
          assert.equal(full, ['find', 'find'], `refused at the bound (the hints of freed slots, the id)`);
        }
        assert.ok(retry.length <= 2, `identical retry at ${n}: ${retry.join(', ')}`);
        assert.ok(conflict.length <= 2, `409 at ${n}: ${conflict.join(', ')}`);
        assert.equal(remove, ['find', 'delete', 'update'], `delete at ${n} (the last: the hint of the freed slot)`);
        assert.equal(page, ['find'], `page at ${n}`);
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

  run();
}
