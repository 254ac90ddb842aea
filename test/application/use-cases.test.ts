import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { authenticate } from '../../application/use-cases/authenticate.js';
import { checkReadiness } from '../../application/use-cases/check-readiness.js';
import { createPlant } from '../../application/use-cases/create-plant.js';
import { deletePlant } from '../../application/use-cases/delete-plant.js';
import { listPlants, PAGE_DEFAULT, PAGE_MAX } from '../../application/use-cases/list-plants.js';
import { memoryPlantRepository } from '../../adapters/storage/memory/memory-plant-repository.js';
import type { PlantId } from '../../domain/plant.js';
import { aPlant, freshOwner, left, principal, right } from '../support/fixtures.js';
import { downRepository, downTokenStore, tokensFrom } from '../support/fakes.js';

const setup = () => {
  const plants = memoryPlantRepository();
  return {
    plants,
    create: createPlant({ plants }),
    list: listPlants({ plants }),
    remove: deletePlant({ plants }),
  };
};

const create = suite('create-plant');

create('stores the plant for the principal’s owner and answers it', async () => {
  const { plants, create: run } = setup();
  const alice = principal();
  assert.equal(await right(run(alice, aPlant(1n, 'Fern', 'green'))), { plant: aPlant(1n, 'Fern', 'green') });
  assert.equal((await right(plants.page(alice.owner, undefined, 10))).plants, [aPlant(1n, 'Fern', 'green')]);
});

create('needs plants:write, and stores nothing without it', async () => {
  const { plants, create: run } = setup();
  const reader = principal(freshOwner(), ['plants:read']);
  assert.equal(await left(run(reader, aPlant(1n))), { _tag: 'MissingScope', scope: 'plants:write' });
  assert.equal((await right(plants.page(reader.owner, undefined, 10))).plants, []);
});

create('a retried create of the same plant answers the stored plant', async () => {
  const { create: run } = setup();
  const alice = principal();
  await right(run(alice, aPlant(1n, 'Fern')));
  assert.equal(await right(run(alice, aPlant(1n, 'Fern'))), { plant: aPlant(1n, 'Fern') });
});

create('the same id with another name or tag is a conflict and the stored plant is unchanged', async () => {
  const { plants, create: run } = setup();
  const alice = principal();
  await right(run(alice, aPlant(1n, 'Fern', 'green')));
  assert.equal(await left(run(alice, aPlant(1n, 'Palm', 'green'))), { _tag: 'PlantConflict' });
  assert.equal(await left(run(alice, aPlant(1n, 'Fern'))), { _tag: 'PlantConflict' });
  assert.equal(await left(run(alice, aPlant(1n, 'Fern', 'blue'))), { _tag: 'PlantConflict' });
  assert.equal((await right(plants.page(alice.owner, undefined, 10))).plants, [aPlant(1n, 'Fern', 'green')]);
});

create('another owner may use the same id', async () => {
  const { create: run } = setup();
  await right(run(principal(), aPlant(7n, 'of alice')));
  assert.equal(await right(run(principal(), aPlant(7n, 'of bob'))), { plant: aPlant(7n, 'of bob') });
});

create('a store that does not answer is StorageUnavailable', async () => {
  assert.equal(await left(createPlant({ plants: downRepository })(principal(), aPlant(1n))), {
    _tag: 'StorageUnavailable',
  });
});

create.run();

const quota = suite('create-plant under a quota (maxPlantsPerOwner)');

const withQuota = (maxPlantsPerOwner: number, maxPlants?: number) => {
  const plants = memoryPlantRepository(maxPlants === undefined ? {} : { maxPlants });
  return { plants, create: createPlant({ plants, maxPlantsPerOwner }), remove: deletePlant({ plants }) };
};

quota('a create answers the owner’s figures: the quota and the plants it keeps now', async () => {
  const { create: run } = withQuota(3);
  const alice = principal();
  assert.equal(await right(run(alice, aPlant(1n))), { plant: aPlant(1n), quota: { limit: 3, used: 1 } });
  assert.equal((await right(run(alice, aPlant(2n)))).quota, { limit: 3, used: 2 });
});

quota('a create past the quota is QuotaExceeded with the owner’s figures, and stores nothing', async () => {
  const { plants, create: run } = withQuota(2);
  const alice = principal();
  await right(run(alice, aPlant(1n)));
  await right(run(alice, aPlant(2n)));
  assert.equal(await left(run(alice, aPlant(3n))), { _tag: 'QuotaExceeded', limit: 2, used: 2 });
  assert.equal((await right(plants.page(alice.owner, undefined, 10))).plants, [aPlant(1n), aPlant(2n)]);
});

quota(
  'at the quota a retried create still answers the stored plant, and a different one is still a conflict',
  async () => {
    const { create: run } = withQuota(1);
    const alice = principal();
    await right(run(alice, aPlant(1n, 'Fern')));
    assert.equal(await right(run(alice, aPlant(1n, 'Fern'))), {
      plant: aPlant(1n, 'Fern'),
      quota: { limit: 1, used: 1 },
    });
    assert.equal(await left(run(alice, aPlant(1n, 'Palm'))), { _tag: 'PlantConflict' });
  },
);

quota('a delete frees room at once', async () => {
  const { create: run, remove } = withQuota(1);
  const alice = principal();
  await right(run(alice, aPlant(1n)));
  await left(run(alice, aPlant(2n)));
  await right(remove(alice, 1n as PlantId));
  assert.equal(await right(run(alice, aPlant(2n))), { plant: aPlant(2n), quota: { limit: 1, used: 1 } });
});

quota('each owner has its own quota', async () => {
  const { create: run } = withQuota(1);
  const [alice, bob] = [principal(), principal()];
  await right(run(alice, aPlant(1n)));
  assert.equal(await left(run(alice, aPlant(2n))), { _tag: 'QuotaExceeded', limit: 1, used: 1 });
  assert.equal(await right(run(bob, aPlant(2n))), { plant: aPlant(2n), quota: { limit: 1, used: 1 } });
});

quota('0 means no quota: no figures, no bound', async () => {
  const { create: run } = withQuota(0);
  const alice = principal();
  for (let id = 1n; id <= 20n; id++) assert.equal(await right(run(alice, aPlant(id))), { plant: aPlant(id) });
});

quota('a full store is StorageFull, for every owner, even below their quotas', async () => {
  const { create: run } = withQuota(10, 2);
  await right(run(principal(), aPlant(1n)));
  await right(run(principal(), aPlant(1n)));
  assert.equal(await left(run(principal(), aPlant(1n))), { _tag: 'StorageFull' });
});

quota.run();

const list = suite('list-plants');

list('needs plants:read', async () => {
  const { list: run } = setup();
  assert.equal(await left(run(principal(freshOwner(), ['plants:write']), {})), {
    _tag: 'MissingScope',
    scope: 'plants:read',
  });
});

list('serves only the principal’s owner’s plants, ascending by id', async () => {
  const { create: add, list: run } = setup();
  const alice = principal();
  const bob = principal();
  for (const id of [3n, -1n, 2n]) await right(add(alice, aPlant(id)));
  await right(add(bob, aPlant(0n)));
  assert.equal(await right(run(alice, {})), { plants: [aPlant(-1n), aPlant(2n), aPlant(3n)] });
});

list(`serves ${PAGE_DEFAULT} when no limit is given, and names the next page`, async () => {
  const { create: add, list: run } = setup();
  const alice = principal();
  for (let i = 1; i <= PAGE_DEFAULT + 1; i++) await right(add(alice, aPlant(BigInt(i))));
  const page = await right(run(alice, {}));
  assert.is(page.plants.length, PAGE_DEFAULT);
  assert.equal(page.next, { after: BigInt(PAGE_DEFAULT), limit: PAGE_DEFAULT });
});

list(`serves a limit above ${PAGE_MAX} as ${PAGE_MAX}`, async () => {
  const { create: add, list: run } = setup();
  const alice = principal();
  for (let i = 1; i <= PAGE_MAX + 5; i++) await right(add(alice, aPlant(BigInt(i))));
  const page = await right(run(alice, { limit: 2147483647 }));
  assert.is(page.plants.length, PAGE_MAX);
  assert.equal(page.next, { after: BigInt(PAGE_MAX), limit: PAGE_MAX });
  const rest = await right(run(alice, { limit: 2147483647, after: BigInt(PAGE_MAX) as PlantId }));
  assert.is(rest.plants.length, 5);
  assert.is(rest.next, undefined, 'the last page names no next page');
});

list('a store that does not answer is StorageUnavailable', async () => {
  assert.equal(await left(listPlants({ plants: downRepository })(principal(), {})), { _tag: 'StorageUnavailable' });
});

list.run();

const remove = suite('delete-plant');

remove('deletes the owner’s plant once; a second delete finds nothing', async () => {
  const { create: add, remove: run, list: read } = setup();
  const alice = principal();
  await right(add(alice, aPlant(5n)));
  assert.is(await right(run(alice, 5n as PlantId)), undefined);
  assert.equal(await left(run(alice, 5n as PlantId)), { _tag: 'PlantNotFound' });
  assert.equal(await right(read(alice, {})), { plants: [] });
});

remove('another owner’s plant is not found, and stays', async () => {
  const { create: add, remove: run, list: read } = setup();
  const alice = principal();
  const mallory = principal();
  await right(add(alice, aPlant(5n)));
  assert.equal(await left(run(mallory, 5n as PlantId)), { _tag: 'PlantNotFound' });
  assert.equal(await right(read(alice, {})), { plants: [aPlant(5n)] });
});

remove('needs plants:write', async () => {
  const { create: add, remove: run, list: read } = setup();
  const alice = principal();
  await right(add(alice, aPlant(5n)));
  const reader = principal(alice.owner, ['plants:read']);
  assert.equal(await left(run(reader, 5n as PlantId)), { _tag: 'MissingScope', scope: 'plants:write' });
  assert.equal(await right(read(alice, {})), { plants: [aPlant(5n)] });
});

remove.run();

const auth = suite('authenticate and readiness');

auth('a known token is its principal; an unknown one is InvalidToken', async () => {
  const alice = principal();
  const run = authenticate({ tokens: tokensFrom({ secret: alice }) });
  assert.is(await right(run('secret')), alice);
  assert.equal(await left(run('other')), { _tag: 'InvalidToken' });
});

auth('a token store that does not answer is AuthUnavailable, never InvalidToken', async () => {
  assert.equal(await left(authenticate({ tokens: downTokenStore })('secret')), { _tag: 'AuthUnavailable' });
});

auth('readiness names each backend that does not answer', async () => {
  const up = tokensFrom({});
  assert.equal(await checkReadiness({ plants: memoryPlantRepository(), tokens: up })(), []);
  assert.equal(await checkReadiness({ plants: downRepository, tokens: up })(), ['storage']);
  assert.equal(await checkReadiness({ plants: downRepository, tokens: downTokenStore })(), ['storage', 'token store']);
});

auth.run();
