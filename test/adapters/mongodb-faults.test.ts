import * as assert from 'uvu/assert';
import { startService, type Service } from '../support/http.js';
import {
  ferretDbBinary,
  postgresBinaries,
  startFerretDb,
  startFerretDbOnPostgres,
  type RunningServer,
} from '../../harness/servers.js';
import { mongoRepository } from '../support/storage-backends.js';
import { suiteWith } from '../support/suites.js';
import { eventually, within } from '../support/wait.js';

const TIMEOUT_MS = 2000;
const binary = ferretDbBinary();

/** The MongoDB adapter on a server of the suite's own (the suite stops and starts it), and the service over that. */
const served = async (
  server: RunningServer,
): Promise<{ server: RunningServer; svc: Service; teardown: () => Promise<void> }> => {
  const { repo, teardown } = await mongoRepository(server.uri, TIMEOUT_MS);
  const svc = await startService({ plants: repo });
  return {
    server,
    svc,
    teardown: async () => {
      await svc.close();
      await teardown().catch(() => undefined);
      await server.dispose();
    },
  };
};

const { test, subject, run } = suiteWith(
  'MongoDB adapter when the server goes away [FerretDB]',
  'skip' in binary ? binary : async () => served(await startFerretDb(binary.bin)),
);
const create = (svc: Service, id: number) =>
  svc.call('POST', '/plants', { token: svc.token.alice, body: `{"id": ${id}, "name": "plant ${id}"}` });
const names = async (svc: Service) => {
  const res = await svc.call('GET', '/plants?limit=1000', { token: svc.token.alice });
  assert.is(res.status, 200);
  return new Set((res.json() as Array<{ name: string }>).map((p) => p.name));
};

test('a crash mid-traffic: bounded 503s, /readyz 503, then recovery without restart and no acknowledged plant lost', async (ctx) => {
  const { svc, server } = subject(ctx);
  const acknowledged: number[] = [];
  for (let id = 1; id <= 20; id++) {
    assert.is((await create(svc, id)).status, 200);
    acknowledged.push(id);
  }
  assert.is((await svc.call('GET', '/readyz')).status, 200);

  // Creates in flight while the server is killed: each ends 200 or 503, none hangs. The kill comes once the first of
  // them is answered: the traffic has reached the store, and the others are still on their way.
  const inFlight = Array.from({ length: 30 }, (_, i) => create(svc, 100 + i).then((r) => [100 + i, r.status] as const));
  await within(10_000, 'a first in-flight create answered', Promise.race(inFlight));
  await server.stop(true);
  for (const [id, status] of await Promise.all(inFlight)) {
    assert.ok(status === 200 || status === 503, `in-flight create ${id}: ${status}`);
    if (status === 200) acknowledged.push(id);
  }

  // While down: every storage call is 503 with Retry-After, within the bound.
  for (const [method, path, body] of [
    ['POST', '/plants', '{"id": 999, "name": "while down"}'],
    ['GET', '/plants', undefined],
    ['DELETE', '/plants/1', undefined],
  ] as const) {
    const res = await svc.call(method, path, { token: svc.token.alice, ...(body === undefined ? {} : { body }) });
    assert.is(res.status, 503, `${method} ${path}`);
    assert.is(res.headers.get('retry-after'), '1');
    assert.is((res.json() as { message: string }).message, 'storage is unavailable, retry later');
  }
  const ready = await svc.call('GET', '/readyz');
  assert.is(ready.status, 503);
  assert.is((ready.json() as { message: string }).message, 'not ready: storage does not answer');
  assert.not.match(ready.text, /127\.0\.0\.1|mongodb:/);
  assert.is((await svc.call('GET', '/healthz')).status, 200, 'the process itself stays alive');

  await server.start();
  await eventually(
    'ready again (/readyz 200) after the server came back, without a restart',
    async () => (await svc.call('GET', '/readyz')).status === 200,
    { timeoutMs: 20_000, everyMs: 100 },
  );
  const stored = await names(svc);
  for (const id of acknowledged) assert.ok(stored.has(`plant ${id}`), `acknowledged plant ${id} survived`);
  assert.is((await create(svc, 999)).status, 200, 'creates work again');
  // A create that got 503 may or may not have been stored; retrying it is safe either way.
  assert.is((await create(svc, 100)).status, 200);
});

const pg = postgresBinaries();

/** FerretDB's PostgreSQL handler losing its PostgreSQL: the same outage, told by FerretDB in other words. */
const onPostgres = suiteWith(
  'MongoDB adapter when FerretDB loses its PostgreSQL [FerretDB on PostgreSQL]',
  'skip' in binary ? binary : 'skip' in pg ? pg : async () => served(await startFerretDbOnPostgres(binary.bin, pg)),
);

onPostgres.test(
  'PostgreSQL killed under FerretDB: 503s with Retry-After, never a 500, then recovery without restart',
  async (ctx) => {
    const { svc, server } = onPostgres.subject(ctx);
    const postgres = server.backend;
    assert.ok(postgres !== undefined, 'the harness hands over the PostgreSQL it started');
    for (let id = 1; id <= 5; id++) assert.is((await create(svc, id)).status, 200);
    await postgres.stop(true);
    for (let round = 0; round < 3; round++) {
      for (const [method, path, body] of [
        ['POST', '/plants', `{"id": ${100 + round}, "name": "while down"}`],
        ['GET', '/plants', undefined],
        ['DELETE', '/plants/1', undefined],
      ] as const) {
        const res = await svc.call(method, path, { token: svc.token.alice, ...(body === undefined ? {} : { body }) });
        assert.is(res.status, 503, `${method} ${path}: ${res.text}`);
        assert.is(res.headers.get('retry-after'), '1');
      }
    }
    await postgres.start();
    await eventually(
      'creates served again after PostgreSQL came back',
      async () => (await create(svc, 7)).status === 200,
      {
        timeoutMs: 20_000,
        everyMs: 100,
      },
    );
    const stored = await names(svc);
    for (let id = 1; id <= 5; id++) assert.ok(stored.has(`plant ${id}`), `acknowledged plant ${id} survived`);
  },
);

run();
onPostgres.run();
