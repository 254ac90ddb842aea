import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { INDEX_SPECS } from '../../adapters/storage/mongodb/indexes.js';
import { COLLECTION } from '../../adapters/storage/mongodb/mongodb-plant-repository.js';
import { ferretDbBinary, sharedFerretDb } from '../../harness/servers.js';
import { right } from '../support/fixtures.js';
import { distRoot } from '../support/process.js';
import { mongoRepository } from '../support/storage-backends.js';
import { suiteWith } from '../support/suites.js';

/**
 * MongoDB accepts a unique index on a sharded collection only when the shard key is a prefix of it. The shard key is
 * the one docs/storage.md documents (read from the file, so that the documentation and the code cannot drift apart),
 * and every unique index the adapter declares, and every one it actually builds on a server, must start with it.
 */
const docs = readFileSync(join(distRoot, '..', 'docs', 'storage.md'), 'utf8');

/** The fields of the documented shard key, in order, from `sh.shardCollection("plantstore.plants", {owner: 1})`. */
const documentedShardKey = (): string[] => {
  const found = /sh\.shardCollection\("plantstore\.plants",\s*\{([^}]*)\}\)/.exec(docs);
  assert.ok(found?.[1] !== undefined, 'docs/storage.md names the shard key in an sh.shardCollection command');
  return (found?.[1] ?? '').split(',').map((part) => (part.split(':')[0] ?? '').trim());
};

const prefixedBy = (key: Record<string, unknown>, shardKey: readonly string[]): boolean => {
  const fields = Object.keys(key);
  return shardKey.length <= fields.length && shardKey.every((f, i) => fields[i] === f);
};

const declared = suite('the documented shard key and the adapter’s declared indexes');

declared('the documented shard key is {owner: 1}, which keeps every owner’s plants on one shard', () => {
  assert.equal(documentedShardKey(), ['owner']);
});

declared('every unique index the adapter declares is prefixed by the documented shard key', () => {
  const shardKey = documentedShardKey();
  const unique = INDEX_SPECS.filter((spec) => spec.unique);
  assert.ok(unique.length >= 2);
  for (const spec of unique) assert.ok(prefixedBy(spec.key, shardKey), `${spec.name}: ${JSON.stringify(spec.key)}`);
});

declared.run();

const binary = ferretDbBinary();
const built = suiteWith(
  'the documented shard key and the indexes the adapter builds [FerretDB]',
  'skip' in binary ? binary : async () => ({ uri: (await sharedFerretDb(binary.bin)).uri }),
);

built.test('every unique index the adapter builds on a server is prefixed by the documented shard key', async (ctx) => {
  const { uri } = built.subject(ctx);
  const { repo, db, teardown } = await mongoRepository(uri);
  const admin = new MongoClient(uri, { serverSelectionTimeoutMS: 2000 });
  try {
    await right(repo.ping);
    const indexes = (await admin.db(db).collection(COLLECTION).listIndexes().toArray()) as Array<{
      readonly name?: unknown;
      readonly unique?: unknown;
      readonly key?: unknown;
    }>;
    const unique = indexes.filter((i) => i.unique === true);
    assert.is(unique.length, INDEX_SPECS.length, JSON.stringify(indexes));
    for (const index of unique) {
      assert.ok(
        prefixedBy(index.key as Record<string, unknown>, documentedShardKey()),
        `${String(index.name)}: ${JSON.stringify(index.key)}`,
      );
    }
  } finally {
    await admin.close();
    await teardown();
  }
});

built.run();
