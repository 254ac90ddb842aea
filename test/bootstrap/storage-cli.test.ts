import { randomUUID } from 'node:crypto';
import { MongoClient, ObjectId } from 'mongodb';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { INDEX_NAME, SLOT_INDEX_NAME } from '../../adapters/storage/mongodb/indexes.js';
import { COLLECTION } from '../../adapters/storage/mongodb/mongodb-plant-repository.js';
import { ferretDbBinary, sharedFerretDb } from '../../harness/servers.js';
import { runNode } from '../support/process.js';
import { suiteWith } from '../support/suites.js';

/** `npm run storage -- repair` (bootstrap/storage-cli.ts) as an operator runs it. */
const cli = async (args: string[], env: Record<string, string>) => {
  const run = runNode('bootstrap/storage-cli.js', env, args);
  const code = await run.exited;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
};

const usage = suite('npm run storage: its arguments');

usage('--help prints the usage on stdout, exit 0', async () => {
  const { code, stdout } = await cli(['--help'], {});
  assert.is(code, 0);
  assert.match(stdout, /^usage: STORAGE=mongodb .* npm run storage -- repair \[--keep-first\]/);
});

usage('no command, an unknown one or an unknown option: the usage on stderr, exit 2', async () => {
  for (const args of [[], ['mend'], ['repair', '--force']]) {
    const { code, stdout, stderr } = await cli(args, {});
    assert.is(code, 2, args.join(' '));
    assert.is(stdout, '');
    assert.match(stderr, /usage: /);
  }
});

usage('STORAGE=memory: says the repair is for MongoDB, exit 2, nothing sent', async () => {
  const { code, stderr } = await cli(['repair'], { STORAGE: 'memory' });
  assert.is(code, 2);
  assert.match(stderr, /the repair is for STORAGE=mongodb/);
});

usage.run();

const binary = ferretDbBinary();
const onStore = suiteWith(
  'npm run storage -- repair on FerretDB',
  'skip' in binary ? binary : async () => ({ uri: (await sharedFerretDb(binary.bin)).uri }),
);

onStore.test('over indexes in place: nothing to repair, exit 0', async (ctx) => {
  const { uri } = onStore.subject(ctx);
  const db = `plantstore_cli_${randomUUID().slice(0, 8)}`;
  const admin = new MongoClient(uri, { serverSelectionTimeoutMS: 2000 });
  try {
    for (const [name, key] of [
      [INDEX_NAME, { owner: 1, id: 1 }],
      [SLOT_INDEX_NAME, { owner: 1, slot: 1 }],
    ] as const) {
      await admin.db(db).collection(COLLECTION).createIndex(key, { unique: true, name });
    }
    const { code, stdout } = await cli(['repair'], { STORAGE: 'mongodb', MONGODB_URI: uri, MONGODB_DB: db });
    assert.is(code, 0);
    assert.is(stdout, 'both unique indexes are in place: nothing to repair\n');
  } finally {
    await admin.db(db).dropDatabase();
    await admin.close();
  }
});

onStore.test(
  'different plants under one id: listed, left, exit 1; with --keep-first the later one goes, exit 0',
  async (ctx) => {
    const { uri } = onStore.subject(ctx);
    const db = `plantstore_cli_${randomUUID().slice(0, 8)}`;
    const admin = new MongoClient(uri, { serverSelectionTimeoutMS: 2000, useBigInt64: true });
    const env = { STORAGE: 'mongodb', MONGODB_URI: uri, MONGODB_DB: db };
    try {
      await admin
        .db(db)
        .collection(COLLECTION)
        .insertMany([
          { _id: new ObjectId(), owner: 'acme', id: 7n, name: 'Fern', slot: 0 },
          { _id: new ObjectId(), owner: 'acme', id: 7n, name: 'Palm', slot: 1 },
        ]);
      const left = await cli(['repair'], env);
      assert.is(left.code, 1, left.stderr);
      assert.match(
        left.stdout,
        /different plants of owner acme: \{"id":"7","name":"Fern"\} \(kept\) and \{"id":"7","name":"Palm"\}/,
      );
      assert.match(left.stdout, /run again with --keep-first/);
      assert.is(await admin.db(db).collection(COLLECTION).countDocuments(), 2);
      const kept = await cli(['repair', '--keep-first'], env);
      assert.is(kept.code, 0, kept.stderr);
      assert.match(kept.stdout, /repair done/);
      const names = (await admin.db(db).collection(COLLECTION).find().toArray()).map((d) => String(d['name']));
      assert.equal(names, ['Fern']);
    } finally {
      await admin.db(db).dropDatabase();
      await admin.close();
    }
  },
);

onStore.run();
