import * as assert from 'uvu/assert';
import { memoryPlantRepository } from '../../adapters/storage/memory/memory-plant-repository.js';
import type { PlantRepository } from '../../application/ports/plant-repository.js';
import { serviceSuite, startService, type Response, type Service } from '../support/http.js';
import { storageBackends } from '../support/storage-backends.js';
import { suiteWith } from '../support/suites.js';

const post = (svc: Service, id: number, name = `plant ${id}`, who: 'alice' | 'bob' = 'alice') =>
  svc.call('POST', '/plants', { token: svc.token[who], body: JSON.stringify({ id, name }) });
const remove = (svc: Service, id: number) => svc.call('DELETE', `/plants/${id}`, { token: svc.token.alice });
const count = async (svc: Service, who: 'alice' | 'bob' = 'alice') =>
  ((await svc.call('GET', '/plants?limit=1000', { token: svc.token[who] })).json() as unknown[]).length;
const figures = (res: Response) => [res.headers.get('quota-limit'), res.headers.get('quota-used')];

for (const backend of storageBackends()) {
  // One repository per backend; each test runs its own service (so its own owners) on it.
  const { test, subject, run } = suiteWith(
    `HTTP POST /plants under MAX_PLANTS_PER_OWNER [${backend.name}]`,
    backend.setup,
  );
  const withService =
    (maxPlantsPerOwner: number | undefined, body: (svc: Service) => Promise<void>) =>
    async (ctx: Parameters<typeof subject>[0]) => {
      const plants: PlantRepository = subject(ctx).repo;
      const svc = await startService(maxPlantsPerOwner === undefined ? { plants } : { plants, maxPlantsPerOwner });
      try {
        await body(svc);
      } finally {
        await svc.close();
      }
    };

  test(
    "a create answers Quota-Limit and Quota-Used: the caller's own owner's figures",
    withService(3, async (svc) => {
      assert.equal(figures(await post(svc, 1)), ['3', '1']);
      assert.equal(figures(await post(svc, 2)), ['3', '2']);
      assert.equal(figures(await post(svc, 1, 'plant 1', 'bob')), ['3', '1'], "bob never sees alice's count");
    }),
  );

  test(
    'a create past the quota is 403 with the Error body and the figures, no WWW-Authenticate, and stores nothing',
    withService(3, async (svc) => {
      for (const id of [1, 2, 3]) assert.is((await post(svc, id)).status, 200);
      const refused = await post(svc, 4);
      assert.is(refused.status, 403);
      assert.equal(refused.json(), {
        error: 403,
        message: 'quota: the owner keeps 3 plants and may keep at most 3; delete some to create more',
      });
      assert.equal(figures(refused), ['3', '3']);
      assert.is(refused.headers.get('www-authenticate'), null, 'no other token would help');
      assert.is(await count(svc), 3);
    }),
  );

  test(
    'at the quota an identical retry still answers 200, and a different plant under a stored id 409',
    withService(2, async (svc) => {
      await post(svc, 1, 'Fern');
      await post(svc, 2, 'Moss');
      const retry = await post(svc, 1, 'Fern');
      assert.is(retry.status, 200);
      assert.is(retry.text, '{"name":"Fern"}');
      assert.equal(figures(retry), ['2', '2']);
      assert.is((await post(svc, 1, 'Palm')).status, 409);
      assert.is(await count(svc), 2);
    }),
  );

  test(
    'a delete frees room at once',
    withService(2, async (svc) => {
      await post(svc, 1);
      await post(svc, 2);
      assert.is((await post(svc, 3)).status, 403);
      assert.is((await remove(svc, 1)).status, 204);
      const created = await post(svc, 3);
      assert.is(created.status, 200);
      assert.equal(figures(created), ['2', '2']);
      assert.is((await post(svc, 4)).status, 403);
    }),
  );

  test(
    "one owner at its quota leaves another owner's room alone",
    withService(1, async (svc) => {
      await post(svc, 1);
      assert.is((await post(svc, 2)).status, 403);
      assert.is((await post(svc, 2, 'plant 2', 'bob')).status, 200);
    }),
  );

  test(
    'of 50 concurrent creates at a quota of 10, exactly 10 are stored and the other 40 are 403',
    withService(10, async (svc) => {
      const statuses = (await Promise.all(Array.from({ length: 50 }, (_, i) => post(svc, i + 1)))).map((r) => r.status);
      assert.is(statuses.filter((s) => s === 200).length, 10, statuses.join(' '));
      assert.is(statuses.filter((s) => s === 403).length, 40, statuses.join(' '));
      assert.is(await count(svc), 10);
    }),
  );

  test(
    'with no quota (MAX_PLANTS_PER_OWNER=0) a create carries no quota figures',
    withService(undefined, async (svc) => {
      const res = await post(svc, 1);
      assert.is(res.status, 200);
      assert.equal(figures(res), [null, null]);
    }),
  );

  run();
}

const full = serviceSuite('HTTP POST /plants on a full in-memory store (MEMORY_MAX_PLANTS=2)', {
  plants: memoryPlantRepository({ maxPlants: 2 }),
});

full.test(
  'the create past the store bound is 507 with the Error body for any owner, and a delete frees room',
  async ({ svc }) => {
    assert.is((await post(svc, 1)).status, 200);
    assert.is((await post(svc, 1, 'plant 1', 'bob')).status, 200);
    for (const who of ['alice', 'bob'] as const) {
      const refused = await post(svc, 2, 'plant 2', who);
      assert.is(refused.status, 507);
      assert.equal(refused.json(), {
        error: 507,
        message: 'storage: the store is full; no plant can be created until plants are deleted',
      });
    }
    assert.is(await count(svc), 1);
    assert.is((await post(svc, 1)).status, 200, 'a retry of a stored plant still answers 200');
    assert.is((await remove(svc, 1)).status, 204);
    assert.is((await post(svc, 2, 'plant 2', 'bob')).status, 200);
  },
);

full.run();
