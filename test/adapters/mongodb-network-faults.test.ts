import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { pino } from 'pino';
import { mongodbPlantRepository } from '../../adapters/storage/mongodb/mongodb-plant-repository.js';
import * as assert from 'uvu/assert';
import { startService, type Service } from '../support/http.js';
import { ferretDbBinary, sharedFerretDb, type RunningServer } from '../../harness/servers.js';
import { mongoRepository } from '../support/storage-backends.js';
import { suiteWith } from '../support/suites.js';
import { carries, startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { within } from '../support/wait.js';

/**
 * The MongoDB adapter behind a TCP proxy that can hold or cut the bytes between it and FerretDB: operations answered
 * 503 at the deadline may still reach the server later, and must never touch a plant that did not exist when they
 * were decided.
 */
const TIMEOUT_MS = 600;
const binary = ferretDbBinary();

interface Subject {
  readonly server: RunningServer;
  readonly proxy: TcpProxy;
  readonly svc: Service;
  readonly admin: MongoClient;
  readonly db: string;
  readonly teardown: () => Promise<void>;
}

const { test, subject, run } = suiteWith<Subject>(
  'MongoDB adapter behind a slow or cut network [FerretDB]',
  'skip' in binary
    ? binary
    : async () => {
        const server = await sharedFerretDb(binary.bin);
        const proxy = await startTcpProxy(server.port);
        const { repo, db, teardown } = await mongoRepository(`mongodb://127.0.0.1:${proxy.port}/`, TIMEOUT_MS);
        const svc = await startService({ plants: repo });
        const admin = new MongoClient(server.uri, { serverSelectionTimeoutMS: 2000 });
        return {
          server,
          proxy,
          svc,
          admin,
          db,
          teardown: async () => {
            proxy.releaseAll();
            await svc.close();
            await teardown().catch(() => undefined);
            await admin.close();
            await proxy.close();
          },
        };
      },
);

/** The MongoDB adapter through the proxy, on a database of its own. */
const mongoStore = (proxy: TcpProxy, timeoutMs: number) => {
  const db = `plantstore_net_${randomUUID().slice(0, 8)}`;
  const store = mongodbPlantRepository({
    uri: `mongodb://127.0.0.1:${proxy.port}/`,
    db,
    timeoutMs,
    writeConcern: 'majority',
    journal: true,
    logger: pino({ level: 'silent' }),
  });
  return { db, repo: store.repository, close: store.close };
};

const create = (svc: Service, id: number, name: string) =>
  svc.call('POST', '/plants', { token: svc.token.alice, body: JSON.stringify({ id, name }) });
const remove = (svc: Service, id: number) => svc.call('DELETE', `/plants/${id}`, { token: svc.token.alice });
const list = async (svc: Service) => {
  const res = await svc.call('GET', '/plants', { token: svc.token.alice });
  assert.is(res.status, 200);
  return res.json() as Array<{ name: string }>;
};
/**
 * Delivers every held byte and waits until the server has run it: the driver gave up on those connections at its
 * socket timeout, so once the proxy has delivered their bytes and their end, the server reads every held command,
 * runs it, meets the end and closes. Bounded, so a connection that never closes fails the test instead of hanging it.
 */
const releaseAndSettle = async (proxy: TcpProxy) => {
  const held = proxy.links().filter((l) => l.held());
  assert.ok(held.length > 0, 'something was held');
  proxy.releaseAll();
  await within(5000, 'every released connection closed', Promise.all(held.map((l) => l.whenClosed())));
};

test('a delete answered 503 that reaches the server later never removes a plant created after it', async (ctx) => {
  const { svc, proxy } = subject(ctx);
  assert.is((await create(svc, 7, 'x')).status, 200);

  proxy.holdUpstream(carries('delete'));
  const late = await remove(svc, 7);
  assert.is(late.status, 503, 'the held delete is answered 503 at the deadline');
  proxy.holdUpstream(() => false); // new traffic passes; the held delete stays held

  assert.is((await remove(svc, 7)).status, 204, 'the retried delete removes x');
  assert.is((await create(svc, 7, 'y')).status, 200, 'y is acknowledged');

  await releaseAndSettle(proxy); // the first delete reaches the server now
  assert.equal(await list(svc), [{ name: 'y' }], 'the acknowledged plant y is still stored');
});

test('closing the store while it hangs: close is bounded, and the requests cut by it are 503s, not logged faults', async (ctx) => {
  const { proxy } = subject(ctx);
  // A store of its own (this test closes it), with the longest storage timeout the adapter takes (quota.ts,
  // `timings`): a close that waited for it would take 18 s, a bounded one at most 1 s.
  const { admin } = subject(ctx);
  const { db, repo, close } = mongoStore(proxy, 18_000);
  const svc = await startService({ plants: repo });
  try {
    assert.is((await create(svc, 1, 'before')).status, 200);
    proxy.holdUpstream(carries('insert'));
    const inFlight = create(svc, 2, 'cut by shutdown');
    await within(5000, 'the insert reaches the proxy and is held', proxy.firstHeld());
    const closing = performance.now();
    await close();
    const closedIn = performance.now() - closing;
    assert.ok(closedIn < 6000, `closed in ${Math.round(closedIn)} ms, not at the 18 s storage timeout`);
    const res = await inFlight;
    assert.is(res.status, 503);
    const faults = svc.logs().filter((l) => Number(l['level']) >= 50);
    assert.is(faults.length, 0, `no fault logged: ${JSON.stringify(faults)}`);
    assert.is((await create(svc, 3, 'after close')).status, 503, 'a closed store answers 503');
  } finally {
    proxy.releaseAll();
    await svc.close();
    await admin.db(db).dropDatabase();
  }
});

run();
