import { randomUUID } from 'node:crypto';
import {
  MongoBulkWriteError,
  MongoClient,
  MongoNetworkError,
  MongoServerError,
  ObjectId,
  type BulkWriteResult,
  type WriteError as DriverWriteError,
  type Document,
} from 'mongodb';
import { createRequire } from 'node:module';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { insertBatches, type Inserts } from '../../adapters/storage/mongodb/insert-batches.js';
import { isDuplicateKey, isUnavailable } from '../../adapters/storage/mongodb/mongodb-errors.js';
import { ferretDbServers } from '../support/storage-backends.js';
import { suiteWith, type Setup } from '../support/suites.js';

/** Inserts that record what each call carried and answer what `answer` says (by default: all stored). */
const recording = (answer: (documents: Document[]) => Promise<void> = async () => undefined) => {
  const calls: Array<{ readonly kind: 'one' | 'many'; readonly documents: Document[] }> = [];
  const inserts: Inserts<Document> = {
    insertOne: (document) => {
      calls.push({ kind: 'one', documents: [document] });
      return answer([document]);
    },
    insertMany: (documents) => {
      calls.push({ kind: 'many', documents });
      return answer(documents);
    },
  };
  return { calls, inserts };
};

/** How each insert ended: `stored`, or what it was rejected with. */
const outcomes = async (promises: Array<Promise<void>>): Promise<unknown[]> =>
  (await Promise.allSettled(promises)).map((o) => (o.status === 'fulfilled' ? 'stored' : o.reason));

/** A bulk write's result as the driver's MongoBulkWriteError carries it, with or without a write concern error. */
const bulkResult = (writeConcernError?: { code: number; errmsg: string }) =>
  ({ getWriteConcernError: () => writeConcernError }) as unknown as BulkWriteResult;

/**
 * What insertMany throws when the server refused some documents of the command (their indices in it), or did not
 * confirm it at the write concern: the code of the first refusal, or of the write concern error.
 */
const refusing = (indices: readonly number[], writeConcernError?: { code: number; errmsg: string }) =>
  new MongoBulkWriteError(
    {
      message: indices.length > 0 ? 'E11000 duplicate key error' : (writeConcernError?.errmsg ?? ''),
      code: indices.length > 0 ? 11000 : (writeConcernError?.code ?? 0),
      writeErrors: indices.map(
        (index) => new WriteError({ index, code: 11000, errmsg: 'E11000 duplicate key error', errInfo: {}, op: {} }),
      ),
    },
    bulkResult(writeConcernError),
  );

// The driver's WriteError (what a bulk write's error lists): its class is not exported, only its type.
const { WriteError } = createRequire(import.meta.url)('mongodb/lib/bulk/common.js') as {
  readonly WriteError: new (err: DriverWriteError['err']) => DriverWriteError;
};

const unit = suite('insert batches: the inserts of one turn in one command');

unit('an insert alone in its turn goes as insertOne, answered as insertOne answers', async () => {
  const refused = new MongoServerError({ code: 11000, errmsg: 'E11000', keyPattern: { owner: 1, slot: 1 } });
  const { calls, inserts } = recording(async () => {
    throw refused;
  });
  const insert = insertBatches(inserts);
  assert.equal(await outcomes([insert({ n: 1 })]), [refused]);
  assert.equal(calls, [{ kind: 'one', documents: [{ n: 1 }] }]);
});

unit('inserts asked for in one turn of the event loop go in one insertMany, in the order asked', async () => {
  const { calls, inserts } = recording();
  const insert = insertBatches(inserts);
  assert.equal(await outcomes([1, 2, 3].map((n) => insert({ n }))), ['stored', 'stored', 'stored']);
  assert.equal(calls, [{ kind: 'many', documents: [{ n: 1 }, { n: 2 }, { n: 3 }] }]);
});

unit('inserts asked for in different turns go in different commands', async () => {
  const { calls, inserts } = recording();
  const insert = insertBatches(inserts);
  await insert({ n: 1 });
  await insert({ n: 2 });
  assert.equal(
    calls.map((c) => c.documents),
    [[{ n: 1 }], [{ n: 2 }]],
  );
});

unit('more inserts in one turn than a command holds go in several commands of at most that many', async () => {
  const { calls, inserts } = recording();
  const insert = insertBatches(inserts, 2);
  await Promise.all([1, 2, 3, 4, 5].map((n) => insert({ n })));
  assert.equal(
    calls.map((c) => c.documents.length),
    [2, 2, 1],
  );
});

unit('each document the server refused gets its own refusal, by its index; the others are stored', async () => {
  const { inserts } = recording(async () => {
    throw refusing([0, 2]);
  });
  const insert = insertBatches(inserts);
  const [first, second, third] = await outcomes([1, 2, 3].map((n) => insert({ n })));
  assert.instance(first, MongoServerError);
  assert.ok(isDuplicateKey(first));
  assert.is(second, 'stored');
  assert.ok(isDuplicateKey(third));
});

unit('a command the driver could not deliver fails every insert in it with the error it raised', async () => {
  const cut = new MongoNetworkError('connection closed');
  const { inserts } = recording(async () => {
    // What insertMany throws then: the driver's error wrapped, kept in errorResponse.
    throw new MongoBulkWriteError(cut, bulkResult());
  });
  const insert = insertBatches(inserts);
  const results = await outcomes([insert({ n: 1 }), insert({ n: 2 })]);
  assert.equal(results, [cut, cut]);
  assert.ok(isUnavailable(results[0]), 'a 503, as for an insertOne cut off');
});

unit('a command the server refused as a whole fails every insert in it with its code', async () => {
  const { inserts } = recording(async () => {
    throw new MongoBulkWriteError(new MongoServerError({ ok: 0, code: 10107, errmsg: 'not primary' }), bulkResult());
  });
  const insert = insertBatches(inserts);
  const results = await outcomes([insert({ n: 1 }), insert({ n: 2 })]);
  assert.ok(
    results.every((r) => isUnavailable(r)),
    'NotWritablePrimary: a 503 for each',
  );
});

unit(
  'a write concern not met fails the stored inserts as unconfirmed (503), the refused ones with their refusal',
  async () => {
    const { inserts } = recording(async () => {
      throw refusing([1], { code: 64, errmsg: 'waiting for replication timed out' });
    });
    const insert = insertBatches(inserts);
    const [first, second] = await outcomes([insert({ n: 1 }), insert({ n: 2 })]);
    assert.ok(isUnavailable(first), 'unconfirmed: a 503');
    assert.ok(isDuplicateKey(second), 'refused: its refusal');
  },
);

unit('a misconfigured write concern (UnsatisfiableWriteConcern) is a fault for each insert, not a 503', async () => {
  const { inserts } = recording(async () => {
    throw refusing([], { code: 100, errmsg: 'Not enough data-bearing nodes' });
  });
  const insert = insertBatches(inserts);
  const results = await outcomes([insert({ n: 1 }), insert({ n: 2 })]);
  assert.ok(results.every((r) => r instanceof Error && !isUnavailable(r)));
});

unit.run();

// The same, against the server: each document of one command inserted or refused on its own, as insertOne would.
// Both FerretDB handlers, and any MongoDB named by MONGODB_URI.
const real = process.env['MONGODB_URI'];
const servers: ReadonlyArray<{ readonly name: string; readonly setup: Setup<{ readonly uri: string }> }> = [
  ...ferretDbServers(),
  ...(real !== undefined && real !== '' ? [{ name: 'MONGODB_URI', setup: async () => ({ uri: real }) }] : []),
];
for (const { name, setup } of servers) {
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
      const insert = insertBatches<Document>({
        insertOne: (d) => plants.insertOne(d),
        insertMany: (ds) => plants.insertMany(ds, { ordered: false, writeConcern: { w: 'majority', journal: true } }),
      });
      const docs = [
        { owner: 'a', slot: 1, id: 1n }, // stored
        { owner: 'a', slot: 5, id: 2n }, // its slot taken by a stored plant
        { owner: 'a', slot: 6, id: 100n }, // its id taken by a stored plant
        { owner: 'a', slot: 7, id: 1n }, // its id taken by the first of this command
        { owner: 'a', slot: 1, id: 9n }, // its slot taken by the first of this command
        { owner: 'b', slot: 1, id: 1n }, // another owner: stored
      ].map((d) => ({ _id: new ObjectId(), ...d }));
      const results = await outcomes(docs.map((d) => insert(d)));
      assert.equal(
        results.map((r) => (r === 'stored' ? r : isDuplicateKey(r) ? 'duplicate' : r)),
        ['stored', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'stored'],
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
