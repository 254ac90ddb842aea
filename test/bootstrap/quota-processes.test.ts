import { randomUUID } from 'node:crypto';
import { getHeapStatistics } from 'node:v8';
import { MongoClient } from 'mongodb';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { memoryCapacity } from '../../adapters/storage/memory/capacity.js';
import { SLOT_INDEX_NAME } from '../../adapters/storage/mongodb/indexes.js';
import { COLLECTION } from '../../adapters/storage/mongodb/mongodb-plant-repository.js';
import { ferretDbBinary, sharedFerretDb } from '../../harness/servers.js';
import { runNode, type Started } from '../support/process.js';
import { suiteWith } from '../support/suites.js';
import { eventually } from '../support/wait.js';

const token = 'quota-process-token';
const tokens = JSON.stringify([{ token, owner: 'acme', subject: 'ci', scopes: ['plants:read', 'plants:write'] }]);
const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

/** Starts bootstrap/main.js and resolves its base URL and its "listening" log line once it listens. */
interface Listening {
  readonly port: number;
  readonly maxPlantsPerOwner?: number;
  readonly memoryMaxPlants?: number;
}

const start = async (env: Record<string, string>): Promise<{ svc: Started; base: string; listening: Listening }> => {
  const svc = runNode('bootstrap/main.js', { PORT: '0', HOST: '127.0.0.1', AUTH_TOKENS: tokens, ...env });
  const [line] = await svc.waitFor(/^\{.*"msg":"listening".*\}$/m);
  const listening = JSON.parse(line) as Listening;
  return { svc, base: `http://127.0.0.1:${listening.port}`, listening };
};
const stop = async (svc: Started) => {
  svc.child.kill('SIGTERM');
  assert.is(await svc.exited, 0);
};
const create = (base: string, id: number) =>
  fetch(`${base}/plants`, { method: 'POST', headers, body: JSON.stringify({ id, name: `plant ${id}` }) });

const binary = ferretDbBinary();
const shared = suiteWith(
  'several service processes on one MongoDB store [FerretDB]',
  'skip' in binary ? binary : async () => ({ uri: (await sharedFerretDb(binary.bin)).uri }),
);

shared.test(
  'three processes with MAX_PLANTS_PER_OWNER=10: of 50 concurrent creates exactly 10 are stored, and a delete on one frees room on another within a second',
  async (ctx) => {
    const { uri } = shared.subject(ctx);
    const db = `plantstore_quota_${randomUUID().slice(0, 8)}`;
    const env = { STORAGE: 'mongodb', MONGODB_URI: uri, MONGODB_DB: db, MAX_PLANTS_PER_OWNER: '10' };
    const services = await Promise.all([start(env), start(env), start(env)]);
    const bases = services.map((s) => s.base);
    const admin = new MongoClient(uri, { serverSelectionTimeoutMS: 2000 });
    try {
      const responses = await Promise.all(
        Array.from({ length: 50 }, (_, i) => create(bases[i % bases.length] as string, i + 1)),
      );
      await Promise.all(responses.map((r) => r.arrayBuffer()));
      const statuses = responses.map((r) => r.status);
      assert.is(statuses.filter((s) => s === 200).length, 10, statuses.join(' '));
      assert.is(statuses.filter((s) => s === 403).length, 40, statuses.join(' '));
      const stored = await admin.db(db).collection(COLLECTION).find({ owner: 'acme' }).toArray();
      assert.is(stored.length, 10);
      const createdIds = responses.flatMap((r, i) => (r.status === 200 ? [i + 1] : []));
      assert.equal(
        stored.map((d) => Number(d['id'])).sort((a, b) => a - b),
        createdIds,
      );
      const indexes = await admin.db(db).collection(COLLECTION).listIndexes().toArray();
      assert.ok(indexes.some((i) => String(i['name']).startsWith(SLOT_INDEX_NAME) && i['unique'] === true));

      const [first, second, third] = bases as [string, string, string];
      assert.is((await fetch(`${first}/plants/${createdIds[0]}`, { method: 'DELETE', headers })).status, 204);
      // Another process sees the freed room when it next loads the owner's slots: within a second for an owner it
      // believes full (docs/storage.md). Until then it refuses, and stores nothing. The wait is bounded generously (a
      // loaded machine is slow); a process that never reloads the slots still fails it.
      const after = await eventually(
        'the second process sees the freed room',
        async () => {
          const res = await create(second, 1000);
          if (res.status !== 403) return res;
          await res.arrayBuffer();
          return undefined;
        },
        { timeoutMs: 10_000, everyMs: 100 },
      );
      assert.is(after.status, 200);
      assert.is(after.headers.get('quota-used'), '10');
      assert.is((await create(third, 1001)).status, 403);
    } finally {
      await Promise.all(services.map((s) => stop(s.svc)));
      await admin.db(db).dropDatabase();
      await admin.close();
    }
  },
);

shared.run();

const memory = suite('the service process on in-memory storage: its bounds');

memory('by default each owner may keep 10000 plants and the store a bound derived from the heap limit', async () => {
  const { svc, listening } = await start({});
  try {
    assert.is(listening.maxPlantsPerOwner, 10000);
    assert.is(listening.memoryMaxPlants, memoryCapacity(getHeapStatistics().heap_size_limit));
  } finally {
    await stop(svc);
  }
});

memory('MEMORY_MAX_PLANTS=2: the third create is 507, MAX_PLANTS_PER_OWNER=1: the second is 403', async () => {
  const { svc, base } = await start({ MEMORY_MAX_PLANTS: '2', MAX_PLANTS_PER_OWNER: '1' });
  try {
    assert.is((await create(base, 1)).status, 200);
    const overQuota = await create(base, 2);
    assert.is(overQuota.status, 403);
    assert.is(overQuota.headers.get('quota-limit'), '1');
  } finally {
    await stop(svc);
  }
  const bounded = await start({ MEMORY_MAX_PLANTS: '2', MAX_PLANTS_PER_OWNER: '0' });
  try {
    assert.is((await create(bounded.base, 1)).status, 200);
    assert.is((await create(bounded.base, 2)).status, 200);
    const full = await create(bounded.base, 3);
    assert.is(full.status, 507);
    assert.equal(await full.json(), {
      error: 507,
      message: 'storage: the store is full; no plant can be created until plants are deleted',
    });
  } finally {
    await stop(bounded.svc);
  }
});

memory.run();
