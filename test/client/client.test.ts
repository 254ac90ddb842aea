import * as TE from 'fp-ts/lib/TaskEither.js';
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

/**
 * `real` with faults on demand: the next `count` calls of `op` answer StorageUnavailable (the service's 503), either
 * before doing anything or after doing it (a reply lost on the way back from the store).
 */
const faulty = (real: PlantRepository) => {
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

type Faulty = ReturnType<typeof faulty>;
type Overrides = Parameters<typeof startService>[0];

for (const backend of storageBackends()) {
  /** Each test on a service of its own over this backend's repository, with faults on demand, and `overrides`. */
  const { test: on, subject, run } = suiteWith(`TypeScript client: kinds of failure [${backend.name}]`, backend.setup);
  const test = (
    title: string,
    body: (ctx: { svc: Service; store: Faulty }) => Promise<void>,
    overrides: Overrides = {},
  ) =>
    on(title, async (ctx) => {
      const store = faulty(subject(ctx).repo);
      const svc = await startService({ plants: store.plants, ...overrides });
      try {
        await body({ svc, store });
      } finally {
        await svc.close();
      }
    });

  test('conflict: an identical create answers the stored plant again, a different one 409', async ({ svc }) => {
    const client = clientOf(svc);
    await client.create({ id: 7n, name: 'Fern', tag: 'shade' });
    assert.equal(await client.create({ id: 7n, name: 'Fern', tag: 'shade' }), { name: 'Fern', tag: 'shade' });
    const conflict = await rejection(client.create({ id: 7n, name: 'Moss' }));
    assert.instance(conflict, Error);
    assert.equal([conflict.name, conflict.kind, conflict.status], ['PlantStoreError', 'conflict', 409]);
    assert.is(conflict.message, 'id: a plant with this id and a different name or tag already exists');
    assert.match(conflict.requestId ?? '', /^[A-Za-z0-9._:-]{1,128}$/);
    assert.is(conflict.retryAfter, undefined);
    assert.is(
      String(conflict),
      `PlantStoreError [conflict, HTTP 409, request id ${conflict.requestId}]: id: a plant with this id and a different name or tag already exists`,
    );
  });

  test('not-found: a delete of no plant, without an uncertain attempt before', async ({ svc }) => {
    const missing = await rejection(clientOf(svc).delete(12345n));
    assert.equal([missing.kind, missing.status, missing.message], ['not-found', 404, 'id: no plant with this id']);
  });

  test('invalid: the service’s 400 names the field and the rule; 413 for a body over the limit', async ({ svc }) => {
    const client = clientOf(svc);
    const blank = await rejection(client.create({ id: 1n, name: '   ' }));
    assert.equal(
      [blank.kind, blank.status, blank.message],
      ['invalid', 400, 'name: must contain a non-whitespace character'],
    );
    const limit = await rejection(client.page({ limit: 0 }));
    assert.equal([limit.kind, limit.message], ['invalid', 'limit: must be an integer from 1 to 2147483647']);
    const cursor = await rejection(client.page({ cursor: 'not-a-cursor' }));
    assert.equal([cursor.kind, cursor.message], ['invalid', 'cursor: must be a cursor taken from a next link']);
    assert.is(cursor.cursor, 'not-a-cursor', 'the cursor of the page that failed');
    const outOfRange = await rejection(client.delete(INT64_MAX + 1n));
    assert.equal([outOfRange.kind, outOfRange.status], ['invalid', 400]);
    const big = await rejection(client.create({ id: 1n, name: 'x'.repeat(20_000) }));
    assert.equal([big.kind, big.status, big.message], ['invalid', 413, 'body: must be at most 16384 bytes']);
  });

  test('invalid: `field` is what the message names, on no other kind', async ({ svc }) => {
    const client = clientOf(svc);
    const fields = await Promise.all([
      rejection(client.create({ id: 1n, name: '' })),
      rejection(client.create({ id: 1n, name: 'a', tag: '\u0000' })),
      rejection(client.delete(INT64_MAX + 1n)),
      rejection(client.page({ limit: 0 })),
      rejection(client.page({ cursor: 'not-a-cursor' })),
      rejection(client.create({ id: 1n, name: 'x'.repeat(20_000) })),
    ]);
    assert.equal(
      fields.map((e) => [e.kind, e.field]),
      [
        ['invalid', 'name'],
        ['invalid', 'tag'],
        ['invalid', 'id'],
        ['invalid', 'limit'],
        ['invalid', 'cursor'],
        ['invalid', 'body'],
      ],
    );
    await client.create({ id: 2n, name: 'Fern' });
    const conflict = await rejection(client.create({ id: 2n, name: 'Moss' }));
    assert.equal([conflict.kind, conflict.field], ['conflict', undefined], 'its message starts "id: " too');
  });

  test('unauthorized: 401 for an unknown token; a token function is called for every request', async ({ svc }) => {
    const unknown = await rejection(clientOf(svc, 'not-a-token-of-this-service').page());
    assert.equal(
      [unknown.kind, unknown.status, unknown.message],
      ['unauthorized', 401, 'authorization: the bearer token is unknown, expired or revoked'],
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

  test('missing-scope: 403 for a token without plants:write', async ({ svc }) => {
    const reader = await rejection(clientOf(svc, svc.token.aliceReader).create({ id: 1n, name: 'a' }));
    assert.equal(
      [reader.kind, reader.status, reader.message],
      ['missing-scope', 403, 'authorization: the token lacks the scope plants:write'],
    );
  });

  test(
    'quota: the state read after a create, and a full quota is its own kind of 403',
    async ({ svc }) => {
      const client = clientOf(svc);
      assert.is(client.quota, undefined, 'nothing answered yet');
      await client.create({ id: 1n, name: 'a' });
      // Quota-Used is left out while the serving process has not counted the owner (MongoDB: see docs/storage.md).
      const counted = (used: number) => (backend.name === 'memory' ? [used] : [used, undefined]);
      assert.is(client.quota?.limit, 2);
      assert.ok(counted(1).includes(client.quota?.used), `used: ${client.quota?.used}`);
      await client.create({ id: 2n, name: 'b' });
      assert.is(client.quota?.limit, 2);
      assert.ok(counted(2).includes(client.quota?.used), `used: ${client.quota?.used}`);
      const full = await rejection(client.create({ id: 3n, name: 'c' }));
      assert.equal([full.kind, full.status], ['quota', 403]);
      assert.match(full.message, /^quota: /);
      assert.equal(client.quota, { limit: 2, used: 2 }, 'the refusal carries the figures too');
    },
    { maxPlantsPerOwner: 2 },
  );

  test(
    'rate-limited: 429 with Retry-After, not retried; the allowance read after each answer',
    async ({ svc }) => {
      const client = clientOf(svc, svc.token.alice, 3);
      await client.page();
      assert.equal(client.rateLimit?.limit, 1);
      assert.equal(client.rateLimit?.remaining, 0);
      const limited = await rejection(client.page());
      assert.equal([limited.kind, limited.status], ['rate-limited', 429]);
      assert.match(limited.message, /^too many requests: /);
      assert.ok(limited.retryAfter !== undefined && limited.retryAfter >= 1 && limited.retryAfter <= 60);
      assert.is(svc.logs().filter((l) => l['status'] === 429).length, 1, 'sent once');
    },
    { limiter: memoryRateLimiter({ max: 1, windowMs: 60_000 }) },
  );

  test('unavailable: 503 with Retry-After (1 s) and the request id, without retries', async ({ svc, store }) => {
    store.failNext('page', 1);
    const down = await rejection(clientOf(svc).page());
    assert.equal(
      [down.kind, down.status, down.message, down.retryAfter],
      ['unavailable', 503, 'storage is unavailable, retry later', 1],
    );
    assert.match(down.requestId ?? '', /^[A-Za-z0-9._:-]{1,128}$/);
  });

  test('retries: a create answered 503 is sent again after Retry-After and resolves; the bound is kept', async ({
    svc,
    store,
  }) => {
    store.failNext('insert', 1, true); // stored, but the reply lost: the retry finds the identical plant
    assert.equal(await clientOf(svc, svc.token.alice, 1).create({ id: 1n, name: 'a' }), { name: 'a' });
    store.failNext('insert', 2);
    const twice = await rejection(clientOf(svc, svc.token.alice, 1).create({ id: 2n, name: 'b' }));
    assert.is(twice.status, 503, 'one retry, two 503s: the second is the answer');
    assert.equal(await stored(svc), ['a']);
    const requests = svc.logs().filter((l) => l['route'] === 'POST /plants' && l['status'] === 503).length;
    assert.is(requests, 3, 'one retry per call, no more');
  });

  test('retries: a delete answered 503 whose retry answers 404 resolves deleted-or-absent', async ({ svc, store }) => {
    const client = clientOf(svc, svc.token.alice, 2);
    await client.create({ id: 1n, name: 'a' });
    store.failNext('remove', 1, true); // the first attempt deletes it; its reply is lost
    assert.is(await client.delete(1n), 'deleted-or-absent');
    assert.equal(await stored(svc), []);
    await client.create({ id: 2n, name: 'b' });
    store.failNext('remove', 1); // nothing done: the retry deletes it
    assert.is(await client.delete(2n), 'deleted');
  });

  test('a listing that fails mid-way resumes from the error’s cursor: every plant once', async ({ svc, store }) => {
    const client = clientOf(svc);
    for (let id = 1n; id <= 5n; id++) await client.create({ id, name: `p${id}` });
    const seen: string[] = [];
    let failed: PlantStoreError | undefined;
    try {
      for await (const plant of client.list({ limit: 2 })) {
        seen.push(plant.name);
        if (plant.name === 'p2') store.failNext('page', 1); // the second page fails
      }
    } catch (e) {
      if (!(e instanceof PlantStoreError)) throw e;
      failed = e;
    }
    assert.equal([failed?.kind, seen], ['unavailable', ['p1', 'p2']]);
    assert.type(failed?.cursor, 'string');
    for await (const plant of client.list({ limit: 2, cursor: failed?.cursor })) seen.push(plant.name);
    assert.equal(seen, ['p1', 'p2', 'p3', 'p4', 'p5']);
  });

  run();
}

const failures = suite('TypeScript client: failures and retries, on memory');
/** A test on a service of its own (memory storage, `overrides`). */
const test = (title: string, body: (ctx: { svc: Service }) => Promise<void>, overrides: Overrides = {}) =>
  failures(title, async () => {
    const svc = await startService(overrides);
    try {
      await body({ svc });
    } finally {
      await svc.close();
    }
  });

test('the request id of a failure is the one the server logged for it; a caller may choose it', async ({ svc }) => {
  const failed = await rejection(clientOf(svc).delete(404n, { requestId: 'client-test-1' }));
  assert.is(failed.requestId, 'client-test-1');
  assert.ok(svc.logs().some((l) => l['reqId'] === 'client-test-1' && l['status'] === 404));
});

test('a request id the service would replace is refused before sending', async ({ svc }) => {
  for (const requestId of ['', 'has space', 'x'.repeat(129)]) {
    const refused = await rejection(clientOf(svc).page({}, { requestId }));
    assert.equal([refused.kind, refused.status], ['invalid', 0]);
    assert.equal([refused.field, refused.message.startsWith('requestId: ')], ['requestId', true]);
  }
  assert.is(svc.logs().filter((l) => l['route'] === 'GET /plants').length, 0, 'nothing sent');
});

test('a token that is empty or malformed fails at construction; a token function’s, before sending', async ({
  svc,
}) => {
  for (const token of ['', 'two words', 'line\nbreak']) {
    try {
      clientOf(svc, token);
      assert.unreachable(`constructed with ${JSON.stringify(token)}`);
    } catch (e) {
      assert.instance(e, PlantStoreError);
      assert.equal([(e as PlantStoreError).kind, (e as PlantStoreError).status], ['unauthorized', 0]);
    }
  }
  const empty = await rejection(clientOf(svc, () => '').page());
  assert.equal([empty.kind, empty.status], ['unauthorized', 0]);
  const cause = new Error('the vault is sealed');
  const thrown = await rejection(
    clientOf(svc, () => {
      throw cause;
    }).page(),
  );
  assert.equal([thrown.kind, thrown.status, thrown.cause], ['unauthorized', 0, cause]);
  assert.is(svc.logs().filter((l) => l['route'] === 'GET /plants').length, 0, 'nothing sent');
});

test(
  'storage-full: 507, the in-memory store full for every owner',
  async ({ svc }) => {
    const client = clientOf(svc);
    await client.create({ id: 1n, name: 'a' });
    const full = await rejection(client.create({ id: 2n, name: 'b' }));
    assert.equal([full.kind, full.status], ['storage-full', 507]);
  },
  { plants: memoryPlantRepository({ maxPlants: 1 }) },
);

test('a tag given as undefined is left out', async ({ svc }) => {
  const client = clientOf(svc);
  const tag: string | undefined = undefined;
  assert.equal(await client.create({ id: 1n, name: 'a', tag }), { name: 'a' });
});

test('a base URL with a trailing slash works', async ({ svc }) => {
  const client = new PlantStore({ baseUrl: `${svc.base}/`, token: svc.token.alice });
  await client.create({ id: 1n, name: 'a' });
  assert.equal(await all(client), [{ name: 'a' }]);
});

failures.run();
