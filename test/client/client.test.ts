import * as TE from 'fp-ts/lib/TaskEither.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as assert from 'uvu/assert';
import { memoryRateLimiter } from '../../adapters/rate-limit/memory/memory-rate-limiter.js';
import { memoryPlantRepository } from '../../adapters/storage/memory/memory-plant-repository.js';
import { storageUnavailable, type StorageUnavailable } from '../../application/errors.js';
import type { PlantRepository } from '../../application/ports/plant-repository.js';
import { PlantStore, PlantStoreError, type Plant, type Token } from '../../client/src/index.js';
import { suite } from 'uvu';
import { startService, type Service } from '../support/http.js';
import { suiteWith } from '../support/suites.js';
import { storageBackends } from '../support/storage-backends.js';

/**
 * The TypeScript client (client/) against the real service: exact ids over int64 and paging on every storage backend,
 * then every failure status it can meet, and its retries on 503, on memory. It cannot meet 415: it always sends
 * `Content-Type: application/json` and an uncompressed body.
 */
const TWO_TO_53 = 2n ** 53n;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

const clientOf = (svc: Service, token: Token = svc.token.alice, retries = 0) =>
  new PlantStore({ baseUrl: svc.base, token, retries });

const all = async (client: PlantStore, limit?: number): Promise<Plant[]> => {
  const plants: Plant[] = [];
  for await (const plant of client.list(limit === undefined ? {} : { limit })) plants.push(plant);
  return plants;
};

/** What the service holds for alice, read with plain HTTP: the client's view is not taken on trust. */
const stored = async (svc: Service) =>
  (svc.call('GET', '/plants?limit=1000', { token: svc.token.alice }).then((r) => r.json()) as Promise<Plant[]>).then(
    (ps) => ps.map((p) => p.name),
  );

/** The PlantStoreError a call rejects with. */
const rejection = async (call: Promise<unknown>): Promise<PlantStoreError> => {
  try {
    await call;
  } catch (e) {
    if (e instanceof PlantStoreError) return e;
    throw e;
  }
  throw new Error('the call resolved; a PlantStoreError was expected');
};

for (const backend of storageBackends()) {
  // One repository per backend; each test runs its own service on it, so its own owners.
  const { test: on, subject, run } = suiteWith(`TypeScript client [${backend.name}]`, backend.setup);
  const test = (title: string, body: (ctx: { svc: Service }) => Promise<void>) =>
    on(title, async (ctx) => {
      const svc = await startService({ plants: subject(ctx).repo });
      try {
        await body({ svc });
      } finally {
        await svc.close();
      }
    });

  test('2^53 and 2^53 + 1 are two plants, created, listed and deleted exactly', async ({ svc }) => {
    const client = clientOf(svc);
    assert.equal(await client.create({ id: TWO_TO_53, name: '2^53' }), { name: '2^53' });
    assert.equal(await client.create({ id: TWO_TO_53 + 1n, name: '2^53 + 1', tag: 'odd' }), {
      name: '2^53 + 1',
      tag: 'odd',
    });
    assert.equal(await all(client), [{ name: '2^53' }, { name: '2^53 + 1', tag: 'odd' }]);
    assert.is(await client.delete(TWO_TO_53 + 1n), 'deleted');
    assert.equal(await stored(svc), ['2^53'], 'only 2^53 + 1 is gone');
    assert.is((await rejection(client.delete(TWO_TO_53 + 1n))).status, 404);
  });

  test('the int64 bounds are created, listed in order and deleted', async ({ svc }) => {
    const client = clientOf(svc);
    for (const [id, name] of [
      [INT64_MAX, 'max'],
      [0n, 'zero'],
      [INT64_MIN, 'min'],
    ] as const)
      await client.create({ id, name });
    assert.equal(
      (await all(client, 1)).map((p) => p.name),
      ['min', 'zero', 'max'],
    );
    assert.is(await client.delete(INT64_MIN), 'deleted');
    assert.is(await client.delete(INT64_MAX), 'deleted');
    assert.equal(await stored(svc), ['zero']);
  });

  test('list() with a page limit of 1 yields every plant once while plants are created and deleted', async ({
    svc,
  }) => {
    const client = clientOf(svc);
    for (let id = 10n; id <= 60n; id += 10n) await client.create({ id, name: `p${id}` });
    const seen: string[] = [];
    for await (const plant of client.list({ limit: 1 })) {
      seen.push(plant.name);
      if (plant.name === 'p20') {
        await client.delete(10n); // already read
        await client.delete(40n); // not read yet: never yielded
        await client.create({ id: 15n, name: 'p15' }); // behind the cursor: not yielded
        await client.create({ id: 45n, name: 'p45' }); // ahead: yielded in order
      }
    }
    assert.equal(seen, ['p10', 'p20', 'p30', 'p45', 'p50', 'p60']);
  });

  test('page() gives one page and the next cursor; the last page has none', async ({ svc }) => {
    const client = clientOf(svc);
    for (const id of [3n, 1n, 2n]) await client.create({ id, name: `p${id}` });
    const first = await client.page({ limit: 2 });
    assert.equal(first.plants, [{ name: 'p1' }, { name: 'p2' }]);
    assert.type(first.cursor, 'string');
    const last = await client.page({ limit: 2, cursor: first.cursor as string });
    assert.equal(last, { plants: [{ name: 'p3' }], cursor: undefined });
  });

  run();
}

const failures = suite('TypeScript client: failures and retries, on memory');
/** A test on a service of its own (memory storage, `overrides`). */
const test = (
  title: string,
  body: (ctx: { svc: Service }) => Promise<void>,
  overrides: Parameters<typeof startService>[0] = {},
) =>
  failures(title, async () => {
    const svc = await startService(overrides);
    try {
      await body({ svc });
    } finally {
      await svc.close();
    }
  });

test('an identical create answers the stored plant again; a different one is a 409 PlantStoreError', async ({
  svc,
}) => {
  const client = clientOf(svc);
  await client.create({ id: 7n, name: 'Fern', tag: 'shade' });
  assert.equal(await client.create({ id: 7n, name: 'Fern', tag: 'shade' }), { name: 'Fern', tag: 'shade' });
  const conflict = await rejection(client.create({ id: 7n, name: 'Moss' }));
  assert.instance(conflict, Error);
  assert.is(conflict.name, 'PlantStoreError');
  assert.is(conflict.status, 409);
  assert.is(conflict.message, 'id: a plant with this id and a different name or tag already exists');
  assert.match(conflict.requestId ?? '', /^[A-Za-z0-9._:-]{1,128}$/);
  assert.is(conflict.retryAfter, undefined);
});

test('the request id of a failure is the one the server logged for it; a caller may choose it', async ({ svc }) => {
  const failed = await rejection(clientOf(svc).delete(404n, { requestId: 'client-test-1' }));
  assert.is(failed.requestId, 'client-test-1');
  assert.ok(svc.logs().some((l) => l['reqId'] === 'client-test-1' && l['status'] === 404));
});

test('400: the contract message names the field and the rule', async ({ svc }) => {
  const client = clientOf(svc);
  const blank = await rejection(client.create({ id: 1n, name: '   ' }));
  assert.equal([blank.status, blank.message], [400, 'name: must contain a non-whitespace character']);
  const limit = await rejection(client.page({ limit: 0 }));
  assert.equal([limit.status, limit.message], [400, 'limit: must be an integer from 1 to 2147483647']);
  const cursor = await rejection(client.page({ cursor: 'not-a-cursor' }));
  assert.equal([cursor.status, cursor.message], [400, 'cursor: must be a cursor taken from a next link']);
  const outOfRange = await rejection(client.delete(INT64_MAX + 1n));
  assert.is(outOfRange.status, 400);
  assert.match(outOfRange.message, /^id: /);
});

test('401 for an unknown token; the token may be a function, called for every request', async ({ svc }) => {
  const unknown = await rejection(clientOf(svc, 'not-a-token-of-this-service').page());
  assert.equal(
    [unknown.status, unknown.message],
    [401, 'authorization: the bearer token is unknown, expired or revoked'],
  );
  let calls = 0;
  const client = clientOf(svc, async () => {
    calls++;
    return svc.token.alice;
  });
  await client.create({ id: 1n, name: 'a' });
  await client.page();
  assert.is(calls, 2);
});

test(
  '403 for a missing scope and for a full quota',
  async ({ svc }) => {
    const reader = await rejection(clientOf(svc, svc.token.aliceReader).create({ id: 1n, name: 'a' }));
    assert.equal([reader.status, reader.message], [403, 'authorization: the token lacks the scope plants:write']);
    const client = clientOf(svc);
    await client.create({ id: 1n, name: 'a' });
    const full = await rejection(client.create({ id: 2n, name: 'b' }));
    assert.is(full.status, 403);
    assert.match(full.message, /^quota: /);
  },
  { maxPlantsPerOwner: 1 },
);

test('404: a delete of no plant, without a 503 before, rejects', async ({ svc }) => {
  const missing = await rejection(clientOf(svc).delete(12345n));
  assert.equal([missing.status, missing.message], [404, 'id: no plant with this id']);
});

test('413: a body over the limit', async ({ svc }) => {
  const big = await rejection(clientOf(svc).create({ id: 1n, name: 'x'.repeat(20_000) }));
  assert.equal([big.status, big.message], [413, 'body: must be at most 16384 bytes']);
});

test(
  '429 carries Retry-After in seconds, and is not retried',
  async ({ svc }) => {
    const client = clientOf(svc, svc.token.alice, 3);
    await client.page();
    const limited = await rejection(client.page());
    assert.is(limited.status, 429);
    assert.match(limited.message, /^too many requests: /);
    assert.ok(limited.retryAfter !== undefined && limited.retryAfter >= 1 && limited.retryAfter <= 60);
    assert.is(svc.logs().filter((l) => l['status'] === 429).length, 1, 'sent once');
  },
  { limiter: memoryRateLimiter({ max: 1, windowMs: 60_000 }) },
);

test(
  '507: the in-memory store full for every owner',
  async ({ svc }) => {
    const client = clientOf(svc);
    await client.create({ id: 1n, name: 'a' });
    const full = await rejection(client.create({ id: 2n, name: 'b' }));
    assert.is(full.status, 507);
  },
  { plants: memoryPlantRepository({ maxPlants: 1 }) },
);

/**
 * The memory repository with faults on demand: the next `count` calls of `op` answer StorageUnavailable (the service's
 * 503), either before doing anything or after doing it (a reply lost on the way back from the store).
 */
const faulty = () => {
  const real = memoryPlantRepository();
  type Op = 'insert' | 'page' | 'remove';
  const faults: Record<Op, { count: number; afterApplying: boolean }> = {
    insert: { count: 0, afterApplying: false },
    page: { count: 0, afterApplying: false },
    remove: { count: 0, afterApplying: false },
  };
  const withFaults =
    <Args extends unknown[], E, A>(op: Op, call: (...args: Args) => TE.TaskEither<E, A>) =>
    (...args: Args): TE.TaskEither<E | StorageUnavailable, A> => {
      const fault = faults[op];
      if (fault.count === 0) return call(...args);
      fault.count--;
      const unavailable = TE.left<E | StorageUnavailable, A>(storageUnavailable);
      return fault.afterApplying ? TE.flatMap(() => unavailable)(call(...args)) : unavailable;
    };
  const plants: PlantRepository = {
    insert: withFaults('insert', real.insert),
    page: withFaults('page', real.page),
    remove: withFaults('remove', real.remove),
    ping: real.ping,
  };
  return {
    plants,
    failNext: (op: Op, count: number, afterApplying = false) => (faults[op] = { count, afterApplying }),
  };
};

/** A test on a service over a `faulty()` store of its own. */
const faultTest = (title: string, body: (ctx: { svc: Service; store: ReturnType<typeof faulty> }) => Promise<void>) => {
  const store = faulty();
  test(title, ({ svc }) => body({ svc, store }), { plants: store.plants });
};

faultTest('503 without retries: the error carries Retry-After (1 s) and the request id', async ({ svc, store }) => {
  store.failNext('page', 1);
  const down = await rejection(clientOf(svc).page());
  assert.equal([down.status, down.message, down.retryAfter], [503, 'storage is unavailable, retry later', 1]);
  assert.match(down.requestId ?? '', /^[A-Za-z0-9._:-]{1,128}$/);
});

faultTest(
  'retries: a create answered 503 is sent again after Retry-After and resolves; the bound is kept',
  async ({ svc, store }) => {
    store.failNext('insert', 1, true); // stored, but the reply lost: the retry finds the identical plant
    assert.equal(await clientOf(svc, svc.token.alice, 1).create({ id: 1n, name: 'a' }), { name: 'a' });
    store.failNext('insert', 2);
    const twice = await rejection(clientOf(svc, svc.token.alice, 1).create({ id: 2n, name: 'b' }));
    assert.is(twice.status, 503, 'one retry, two 503s: the second is the answer');
    assert.equal(await stored(svc), ['a']);
    const requests = svc.logs().filter((l) => l['route'] === 'POST /plants' && l['status'] === 503).length;
    assert.is(requests, 3, 'one retry per call, no more');
  },
);

faultTest(
  'retries: a delete answered 503 whose retry answers 404 resolves deleted-or-absent',
  async ({ svc, store }) => {
    const client = clientOf(svc, svc.token.alice, 2);
    await client.create({ id: 1n, name: 'a' });
    store.failNext('remove', 1, true); // the first attempt deletes it; its reply is lost
    assert.is(await client.delete(1n), 'deleted-or-absent');
    assert.equal(await stored(svc), []);
    await client.create({ id: 2n, name: 'b' });
    store.failNext('remove', 1); // nothing done: the retry deletes it
    assert.is(await client.delete(2n), 'deleted');
  },
);

faultTest('retries: a Retry-After longer than maxRetryDelayMs is not waited for', async ({ svc, store }) => {
  const client = new PlantStore({ baseUrl: svc.base, token: svc.token.alice, retries: 5, maxRetryDelayMs: 500 });
  store.failNext('page', 1);
  assert.is((await rejection(client.page())).status, 503);
  assert.is(svc.logs().filter((l) => l['route'] === 'GET /plants').length, 1, 'sent once');
});

faultTest(
  'retries: an abort during the wait before a retry rejects with its reason and sends nothing more',
  async ({ svc, store }) => {
    store.failNext('page', 1);
    const controller = new AbortController();
    const client = clientOf(svc, svc.token.alice, 3);
    const reason = new Error('the caller gave up');
    setTimeout(() => controller.abort(reason), 200); // within the 1 s the 503 asks to wait
    try {
      await client.page({}, { signal: controller.signal });
      assert.unreachable('the call resolved');
    } catch (e) {
      assert.is(e, reason);
    }
    assert.ok(svc.logs().filter((l) => l['route'] === 'GET /plants').length <= 1, 'no retry sent');
  },
);

failures(
  'a proxy’s answer without the Error body: its status, a message saying so, Retry-After as an HTTP date',
  async () => {
    const proxy = createServer((_req, res) => {
      res.writeHead(503, { 'content-type': 'text/html', 'retry-after': new Date(Date.now() + 5000).toUTCString() });
      res.end('<html><body>Service Unavailable</body></html>');
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const failed = await rejection(new PlantStore({ baseUrl: base, token: 't' }).page());
      assert.is(failed.status, 503);
      assert.is(failed.message, "HTTP 503 without the service's Error body (a proxy's answer, or not this service)");
      assert.is(failed.requestId, undefined);
      assert.ok(
        failed.retryAfter !== undefined && failed.retryAfter >= 3 && failed.retryAfter <= 6,
        `${failed.retryAfter}`,
      );
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  },
);

test('a base URL with a trailing slash works', async ({ svc }) => {
  const client = new PlantStore({ baseUrl: `${svc.base}/`, token: svc.token.alice });
  await client.create({ id: 1n, name: 'a' });
  assert.equal(await all(client), [{ name: 'a' }]);
});

failures.run();
