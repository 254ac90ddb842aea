import { randomUUID } from 'node:crypto';
import {
  MongoClient,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoServerError,
  ObjectId,
  type Document,
} from 'mongodb';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { insertBatches, type BatchedInsert, type SendInserts } from '../../adapters/storage/mongodb/insert-batches.js';
import { isDuplicateKey } from '../../adapters/storage/mongodb/mongodb-errors.js';
import { ferretDbServers } from '../support/storage-backends.js';
import { suiteWith } from '../support/suites.js';

/** A send that records each command's documents and answers what `answer` says (by default: all inserted). */
const recording = (answer: (documents: Document[], call: number) => Promise<Document> = async () => ({ ok: 1 })) => {
  const commands: Document[][] = [];
  const send: SendInserts = (documents) => {
    commands.push(documents);
    return answer(documents, commands.length);
  };
  return { commands, send };
};

const settled = (promises: Array<Promise<BatchedInsert>>) => Promise.allSettled(promises);

const unit = suite('insert batches: the inserts of one turn in one command');

unit(
  'inserts asked for in one turn of the event loop go to the server in one command, in the order asked',
  async () => {
    const { commands, send } = recording();
    const insert = insertBatches(send);
    const outcomes = await Promise.all([1, 2, 3].map((n) => insert({ n })));
    assert.equal(commands, [[{ n: 1 }, { n: 2 }, { n: 3 }]]);
    assert.equal(outcomes, ['inserted', 'inserted', 'inserted']);
  },
);

unit('inserts asked for in different turns go in different commands', async () => {
  const { commands, send } = recording();
  const insert = insertBatches(send);
  await insert({ n: 1 });
  await insert({ n: 2 });
  assert.equal(commands, [[{ n: 1 }], [{ n: 2 }]]);
});

unit('each insert gets its own write error, by its index in the command; the others are inserted', async () => {
  const { send } = recording(async () => ({
    ok: 1,
    n: 1,
    writeErrors: [
      { index: 0, code: 11000, errmsg: 'E11000 duplicate key error', keyPattern: { owner: 1, id: 1 } },
      { index: 2, code: 11000, errmsg: 'E11000 duplicate key error', keyPattern: { owner: 1, slot: 1 } },
    ],
  }));
  const insert = insertBatches(send);
  const [first, second, third] = await Promise.all([1, 2, 3].map((n) => insert({ n })));
  assert.instance(first, MongoServerError);
  assert.equal((first as MongoServerError).keyPattern, { owner: 1, id: 1 });
  assert.is(second, 'inserted');
  assert.instance(third, MongoServerError);
  assert.equal((third as MongoServerError).keyPattern, { owner: 1, slot: 1 });
  assert.ok(isDuplicateKey(third));
});

unit('more inserts in one turn than a command holds go in several commands of at most that many', async () => {
  const { commands, send } = recording();
  const insert = insertBatches(send, 2);
  await Promise.all([1, 2, 3, 4, 5].map((n) => insert({ n })));
  assert.equal(
    commands.map((c) => c.length),
    [2, 2, 1],
  );
});

unit('a command that fails fails every insert in it with the same error, its class kept', async () => {
  const refused = new MongoServerError({ ok: 0, code: 10107, errmsg: 'not primary' });
  const { send } = recording(async (_, call) => {
    if (call <= 2) throw refused; // the first send and the one sent again after a primary gone
    return { ok: 1 };
  });
  const insert = insertBatches(send);
  const outcomes = await settled([insert({ n: 1 }), insert({ n: 2 })]);
  assert.equal(
    outcomes.map((o) => (o.status === 'rejected' ? o.reason : o.value)),
    [refused, refused],
  );
});

unit('after a network error the command is sent once more, as the driver retries a write', async () => {
  const { commands, send } = recording(async (_, call) => {
    if (call === 1) throw new MongoNetworkError('connection reset');
    return { ok: 1 };
  });
  const insert = insertBatches(send);
  assert.equal(await Promise.all([insert({ n: 1 }), insert({ n: 2 })]), ['inserted', 'inserted']);
  assert.is(commands.length, 2);
  assert.equal(commands[1], [{ n: 1 }, { n: 2 }]);
});

unit('after a network timeout the command is not sent again (its time is out), and every insert fails', async () => {
  const timeout = new MongoNetworkTimeoutError('socket timeout');
  const { commands, send } = recording(async () => {
    throw timeout;
  });
  const insert = insertBatches(send);
  const [outcome] = await settled([insert({ n: 1 })]);
  assert.is(commands.length, 1);
  assert.equal(outcome, { status: 'rejected', reason: timeout });
});

unit('a fault that is not a network error or a failover is not sent again', async () => {
  const fault = new MongoServerError({ ok: 0, code: 2, errmsg: 'BadValue' });
  const { commands, send } = recording(async () => {
    throw fault;
  });
  const insert = insertBatches(send);
  const [outcome] = await settled([insert({ n: 1 })]);
  assert.is(commands.length, 1);
  assert.equal(outcome, { status: 'rejected', reason: fault });
});

unit.run();

// The same, against the server: each document of one command inserted or refused on its own, as insertOne would.
for (const { name, setup } of ferretDbServers()) {
  const { test, subject, run } = suiteWith(`insert batches against the server [${name}]`, setup);

  test("one command's documents are each inserted or refused by the unique indexes on their own, as one insert each", async (ctx) => {
    const { uri } = subject(ctx);
    const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5000, useBigInt64: true });
    const db = client.db(`plantstore_batches_${randomUUID().slice(0, 8)}`);
    const plants = db.collection('plants');
    try {
      await plants.createIndex({ owner: 1, id: 1 }, { unique: true });
      await plants.createIndex({ owner: 1, slot: 1 }, { unique: true });
      await plants.insertOne({ _id: new ObjectId(), owner: 'a', slot: 5, id: 100n });
      const insert = insertBatches((documents) =>
        db.command({ insert: 'plants', documents, ordered: false, writeConcern: { w: 'majority', j: true } }),
      );
      const docs = [
        { owner: 'a', slot: 1, id: 1n }, // stored
        { owner: 'a', slot: 5, id: 2n }, // its slot taken by a stored plant
        { owner: 'a', slot: 6, id: 100n }, // its id taken by a stored plant
        { owner: 'a', slot: 7, id: 1n }, // its id taken by the first of this command
        { owner: 'a', slot: 1, id: 9n }, // its slot taken by the first of this command
        { owner: 'b', slot: 1, id: 1n }, // another owner: stored
      ].map((d) => ({ _id: new ObjectId(), ...d }));
      const outcomes = await Promise.all(docs.map((d) => insert(d)));
      assert.equal(
        outcomes.map((o) => (o === 'inserted' ? o : isDuplicateKey(o) ? 'duplicate' : o.message)),
        ['inserted', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'inserted'],
      );
      const stored = await plants
        .find({}, { projection: { _id: 0 } })
        .sort({ owner: 1, slot: 1 })
        .toArray();
      assert.equal(stored, [
        { owner: 'a', slot: 1, id: 1n },
        { owner: 'a', slot: 5, id: 100n },
        { owner: 'b', slot: 1, id: 1n },
      ]);
    } finally {
      await db.dropDatabase().catch(() => undefined);
      await client.close();
    }
  });

  run();
}
