import { MongoClient } from 'mongodb';
import * as assert from 'uvu/assert';
import { INDEX_NAME } from '../../adapters/storage/mongodb/indexes.js';
import { COLLECTION } from '../../adapters/storage/mongodb/mongodb-plant-repository.js';
import { runNode } from '../support/process.js';
import { ferretDbBinary, sharedFerretDb, startFerretDb } from '../../harness/servers.js';
import { suiteWith } from '../support/suites.js';
import { carries, startTcpProxy } from '../support/tcp-proxy.js';
import { eventually } from '../support/wait.js';

const binary = ferretDbBinary();
const { test, subject, run } = suiteWith(
  'the service process with STORAGE=mongodb [FerretDB]',
  'skip' in binary ? binary : async () => ({ uri: (await sharedFerretDb(binary.bin)).uri }),
);

test('serves plants from MongoDB, with the unique (owner, id) index created at start-up', async (ctx) => {
  const { uri } = subject(ctx);
  const db = `plantstore_main_${Date.now()}`;
  const token = 'mongo-process-token';
  const svc = runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    STORAGE: 'mongodb',
    MONGODB_URI: uri,
    MONGODB_DB: db,
    AUTH_TOKENS: JSON.stringify([{ token, owner: 'acme', subject: 'ci', scopes: ['plants:read', 'plants:write'] }]),
  });
  const admin = new MongoClient(uri, { serverSelectionTimeoutMS: 2000 });
  try {
    await svc.waitFor(/"msg":"listening"/);
    const port = Number(/"port":(\d+)/.exec(svc.stdout())?.[1]);
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const base = `http://127.0.0.1:${port}`;
    const created = await fetch(`${base}/plants`, {
      method: 'POST',
      headers,
      body: '{"id": 9007199254740993, "name": "Fern"}',
    });
    assert.is(created.status, 200);
    assert.is(await (await fetch(`${base}/plants`, { headers })).text(), '[{"name":"Fern"}]');
    assert.is((await fetch(`${base}/readyz`)).status, 200);
    const indexes = (await admin.db(db).collection(COLLECTION).listIndexes().toArray()) as Array<
      Record<string, unknown>
    >;
    const unique = indexes.find((i) => i['name'] === INDEX_NAME);
    assert.equal(unique?.['key'], { owner: 1, id: 1 });
    assert.is(unique?.['unique'], true);
    const doc = await admin.db(db).collection(COLLECTION).findOne({ owner: 'acme' }, { promoteLongs: false });
    assert.is(
      (doc?.['id'] as { _bsontype?: string } | undefined)?._bsontype,
      'Long',
      'the id is stored as a BSON int64',
    );
    assert.is(String(doc?.['id']), '9007199254740993');
  } finally {
    svc.child.kill('SIGTERM');
    assert.is(await svc.exited, 0);
    await admin.db(db).dropDatabase();
    await admin.close();
  }
});

test('started while MongoDB is down: it listens, answers 503 and /readyz 503, then creates the index and serves once the server answers', async () => {
  if ('skip' in binary) throw new Error(binary.skip);
  const server = await startFerretDb(binary.bin);
  await server.stop();
  const token = 'mongo-late-token';
  const svc = runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    STORAGE: 'mongodb',
    MONGODB_URI: server.uri,
    MONGODB_DB: 'plantstore_late',
    AUTH_TOKENS: JSON.stringify([{ token, owner: 'acme', subject: 'ci', scopes: ['plants:read', 'plants:write'] }]),
  });
  const admin = new MongoClient(server.uri, { serverSelectionTimeoutMS: 2000 });
  try {
    await svc.waitFor(/"msg":"listening"/);
    const base = `http://127.0.0.1:${/"port":(\d+)/.exec(svc.stdout())?.[1]}`;
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    assert.is((await fetch(`${base}/readyz`)).status, 503);
    const refused = await fetch(`${base}/plants`, { method: 'POST', headers, body: '{"id": 1, "name": "Fern"}' });
    assert.is(refused.status, 503, 'no write before the unique index exists');

    await server.start();
    await eventually('ready once the server answers', async () => (await fetch(`${base}/readyz`)).status === 200, {
      timeoutMs: 20_000,
      everyMs: 100,
    });
    const indexes = (await admin.db('plantstore_late').collection(COLLECTION).listIndexes().toArray()) as Array<
      Record<string, unknown>
    >;
    assert.ok(
      indexes.some((i) => i['name'] === INDEX_NAME && i['unique'] === true),
      'the unique index was created',
    );
    assert.is(
      (await fetch(`${base}/plants`, { method: 'POST', headers, body: '{"id": 1, "name": "Fern"}' })).status,
      200,
    );
  } finally {
    svc.child.kill('SIGTERM');
    assert.is(await svc.exited, 0);
    await admin.close();
    await server.dispose();
  }
});

test('on a standalone server (FerretDB) it warns once that MongoDB is not a replica set, also across a restart of the server', async () => {
  if ('skip' in binary) throw new Error(binary.skip);
  const server = await startFerretDb(binary.bin);
  const svc = runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    STORAGE: 'mongodb',
    MONGODB_URI: server.uri,
    MONGODB_DB: 'plantstore_standalone',
    AUTH_TOKENS: JSON.stringify([{ token: 't', owner: 'acme', subject: 'ci', scopes: ['plants:write'] }]),
  });
  const warning = /"msg":"MongoDB is a standalone server, not a replica set/;
  try {
    await svc.waitFor(/"msg":"listening"/);
    await svc.waitFor(warning);
    const base = `http://127.0.0.1:${/"port":(\d+)/.exec(svc.stdout())?.[1]}`;
    await server.stop();
    await eventually('not ready while the server is down', async () => (await fetch(`${base}/readyz`)).status === 503);
    // Time is what is under test: the outage outlasts the driver's heartbeat (2 s), so that the server's description
    // goes Unknown and comes back Standalone, a second report of the same fact.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    await server.start();
    await eventually('ready again', async () => (await fetch(`${base}/readyz`)).status === 200, {
      timeoutMs: 20_000,
      everyMs: 100,
    });
  } finally {
    svc.child.kill('SIGTERM');
    assert.is(await svc.exited, 0);
    await server.dispose();
  }
  const lines = svc
    .stdout()
    .split('\n')
    .filter((l) => warning.test(l));
  assert.is(lines.length, 1);
  assert.is((JSON.parse(lines[0] ?? '{}') as { level?: number }).level, 40, 'a warning');
});

test('a MONGODB_URI the driver cannot parse stops start-up with one line, credentials not echoed', async () => {
  const svc = runNode('bootstrap/main.js', {
    STORAGE: 'mongodb',
    MONGODB_URI: 'mongodb://user:hunter2@host/?nosuchoption=1',
  });
  assert.is(await svc.exited, 1);
  assert.is(
    svc.stderr(),
    'config: MONGODB_URI (or the file MONGODB_URI_FILE names): is not a valid MongoDB connection string; for example MONGODB_URI=mongodb://127.0.0.1:27017\n',
  );
});

test('a request cut by the shutdown bound while the store does not answer is logged 499 with the answer it would have had, not as that answer', async (ctx) => {
  const { uri } = subject(ctx);
  const proxy = await startTcpProxy(Number(new URL(uri).port));
  const token = 'mongo-cut-token';
  const svc = runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    STORAGE: 'mongodb',
    MONGODB_URI: `mongodb://127.0.0.1:${proxy.port}/`,
    MONGODB_DB: `plantstore_cut_${Date.now()}`,
    STORAGE_TIMEOUT_MS: '18000',
    SHUTDOWN_TIMEOUT_MS: '1000',
    AUTH_TOKENS: JSON.stringify([{ token, owner: 'acme', subject: 'ci', scopes: ['plants:read', 'plants:write'] }]),
  });
  try {
    await svc.waitFor(/"msg":"listening"/);
    const base = `http://127.0.0.1:${/"port":(\d+)/.exec(svc.stdout())?.[1]}`;
    const headers = { authorization: `Bearer ${token}`, 'x-request-id': 'cut-by-shutdown' };
    assert.is((await fetch(`${base}/plants`, { headers })).status, 200, 'the store answers before it is held');
    proxy.holdUpstream(carries('find'));
    const cut = fetch(`${base}/plants`, { headers }).catch((e: unknown) => e);
    await proxy.firstHeld(); // the request's find has reached the store, which does not answer
    svc.child.kill('SIGTERM');
    assert.is(await svc.exited, 0);
    assert.ok((await cut) instanceof Error, 'the client got no answer');
    const lines = svc
      .stdout()
      .split('\n')
      .filter((l) => l.includes('"reqId":"cut-by-shutdown"') && l.includes('"route":"GET /plants"'))
      .map((l) => JSON.parse(l) as { status: number; answer?: number });
    assert.is(lines.length, 2, JSON.stringify(lines));
    assert.equal([lines[1]?.status, lines[1]?.answer], [499, 503], JSON.stringify(lines));
  } finally {
    svc.child.kill('SIGKILL');
    proxy.releaseAll();
    await proxy.close();
  }
});

run();
