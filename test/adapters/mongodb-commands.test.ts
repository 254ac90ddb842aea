import { randomUUID } from 'node:crypto';
import { MongoClient, type CommandStartedEvent } from 'mongodb';
import { pino } from 'pino';
import * as assert from 'uvu/assert';
import {
  BOUNDS_COLLECTION,
  COLLECTION,
  mongodbPlantRepository,
  SWEEPS_COLLECTION,
  type MongodbPlantRepository,
} from '../../adapters/storage/mongodb/mongodb-plant-repository.js';
import type { PlantId } from '../../domain/plant.js';
import { aPlant, freshOwner, right } from '../support/fixtures.js';
import { ferretDbServers } from '../support/storage-backends.js';
import { suiteWith } from '../support/suites.js';
import { eventually } from '../support/wait.js';

/**
 * Round trips per operation, counted by the driver's command monitoring: what the storage sends for a create, an
 * identical retry, a conflicting create (409), a delete and a page, for an owner at 10, 5,000 and 9,999 of a bound of
 * 10,000, in a collection that holds all three owners. The bounds are the port's: in the steady state a create costs
 * at most 2 (1 once the owner's slots are known), a delete 2 (3 at the bound), a page 1, whatever the owner's fill.
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
  // The bounds registry's upkeep (outside-plants.ts: an announcement every 10 s, a read every second) and the sweep
  // record's read (once per start) are the process's, not an operation's.
  const listener = (e: CommandStartedEvent) => {
    const on = e.command[e.commandName];
    if (on !== BOUNDS_COLLECTION && on !== SWEEPS_COLLECTION) seen.push(e.commandName);
  };
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
      // The owner at its bound is looked at again only after this process's own delete, never because a second passed
      // between two refusals (on a loaded machine FerretDB/SQLite took that long, and the count was one load more).
      fullRecheckMs: 3_600_000,
      // The bounds registry (outside-plants.ts) is read once, by the warm-up create, not by a measured operation.
      boundsViewMs: 3_600_000,
      monitorCommands: true,
    });
    const repo = store.repository;
    try {
      await right(repo.ping);
      await right(repo.insert(freshOwner('warm-up'), aPlant(1n), MAX));
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
        // Under one bound, with the scan for outside plants done: an insert into a slot chosen at random; when another
        // plant holds it (likelier the fuller the owner), one more at random, then a load of the owner's slots and an
        // insert into a free one.
        assert.ok(cold.length <= 4, `first create at ${n}: ${cold.join(', ')}`);
        assert.equal(warm, ['insert'], `create at ${n}`);
        if (n + 1 >= MAX) {
          assert.ok(firstFull.length <= 2, `first refusal: ${firstFull.join(', ')}`);
          // The last slot (where a delete through another process leaves a full owner's room), then the id.
          assert.equal(full, ['insert', 'find'], `refused at the bound`);
        }
        // FerretDB does not say which unique index refused an insert: one more slot is tried, then the id is looked
        // up (owner-slots.ts). So an identical retry or a 409 costs up to 3 there (2 on MongoDB, which names the index).
        assert.ok(retry.length <= 3, `identical retry at ${n}: ${retry.join(', ')}`);
        assert.ok(conflict.length <= 3, `409 at ${n}: ${conflict.join(', ')}`);
        assert.equal(remove, ['find', 'delete'], `delete at ${n}`);
        if (n + 1 >= MAX) {
          // At the bound, the plant in the last slot moves into the one a delete frees (owner-slots.ts), and the next
          // create, through any process, finds the room there.
          const compacting = await commandsOf(store, async () =>
            assert.ok(await right(repo.remove(owner, 0n as PlantId))),
          );
          assert.equal(compacting, ['find', 'delete', 'update'], 'delete at the bound');
          const refill = await commandsOf(store, async () =>
            assert.is((await right(repo.insert(owner, aPlant(0n, 'again'), MAX)))._tag, 'Inserted'),
          );
          assert.equal(refill, ['insert'], 'create into the room a delete at the bound left');
        }
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

  test("a process started over a swept collection takes up the sweep record: no scan, and a new owner's first create is one load and one insert", async (ctx) => {
    const { uri } = subject(ctx).server;
    const db = `plantstore_restart_${randomUUID().slice(0, 8)}`;
    const admin = new MongoClient(uri, { serverSelectionTimeoutMS: 5000, useBigInt64: true });
    const lines: string[] = [];
    const instance = () =>
      mongodbPlantRepository({
        uri,
        db,
        timeoutMs: 30_000,
        writeConcern: 'majority',
        journal: true,
        logger: pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) }),
        indexRecheckMs: 3_600_000,
        boundsViewMs: 3_600_000,
        monitorCommands: true,
      });
    const first = instance();
    try {
      await right(first.repository.insert(freshOwner('before'), aPlant(1n), MAX));
      const record = await eventually(
        'the sweep recorded',
        async () =>
          (await admin
            .db(db)
            .collection(SWEEPS_COLLECTION)
            .findOne({ _id: String(MAX) as never })) ?? undefined,
      );
      assert.equal(record['owners'], []);
    } finally {
      await first.close();
    }
    lines.length = 0;
    const second = instance();
    try {
      await right(second.repository.ping);
      const sent = await commandsOf(second, () =>
        right(second.repository.insert(freshOwner('after'), aPlant(2n), MAX)),
      );
      assert.equal(sent, ['find', 'insert'], 'the owner loaded (its count), then the insert');
      const said = lines.map((l) => String(JSON.parse(l).msg));
      assert.ok(
        said.some((m) => m.includes('as the last sweep recorded them')),
        `the record taken up: ${said.join(' | ')}`,
      );
      assert.not.ok(
        said.some((m) => m.includes('a scan of the collection')),
        'no scan',
      );
    } finally {
      await second.close();
      await admin.db(db).dropDatabase();
      await admin.close();
    }
  });

  run();
}
