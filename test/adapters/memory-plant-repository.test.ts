import * as assert from 'uvu/assert';
import { memoryCapacity, WORST_CASE_BYTES_PER_PLANT } from '../../adapters/storage/memory/capacity.js';
import { memoryPlantRepository } from '../../adapters/storage/memory/memory-plant-repository.js';
import type { PlantId } from '../../domain/plant.js';
import { plantRepositoryContract } from '../contracts/plant-repository.contract.js';
import { aPlant, freshOwner, left, right } from '../support/fixtures.js';
import { memoryUnderTest } from '../support/storage-backends.js';
import { suite } from 'uvu';

plantRepositoryContract('memory', async () => memoryUnderTest());

const test = suite('memory store: the total bound (MEMORY_MAX_PLANTS)');

test('a full store refuses a new plant of any owner with StorageFull, and changes nothing', async () => {
  const repo = memoryPlantRepository({ maxPlants: 2 });
  const [a, b] = [freshOwner('a'), freshOwner('b')];
  await right(repo.insert(a, aPlant(1n)));
  await right(repo.insert(b, aPlant(1n), 10));
  assert.equal(await left(repo.insert(a, aPlant(2n))), { _tag: 'StorageFull' });
  assert.equal(await left(repo.insert(freshOwner('c'), aPlant(2n), 10)), { _tag: 'StorageFull' });
  assert.equal((await right(repo.page(a, undefined, 10))).plants, [aPlant(1n)]);
});

test('a full store still answers Exists for an id the owner has, and OwnerFull before StorageFull', async () => {
  const repo = memoryPlantRepository({ maxPlants: 1 });
  const owner = freshOwner();
  await right(repo.insert(owner, aPlant(1n, 'Fern'), 1));
  assert.equal(await right(repo.insert(owner, aPlant(1n, 'Fern'), 1)), {
    _tag: 'Exists',
    stored: aPlant(1n, 'Fern'),
    count: 1,
  });
  assert.equal(await right(repo.insert(owner, aPlant(2n), 1)), { _tag: 'OwnerFull', count: 1 });
});

test('a removed plant frees room in the store at once, for any owner', async () => {
  const repo = memoryPlantRepository({ maxPlants: 1 });
  const [a, b] = [freshOwner('a'), freshOwner('b')];
  await right(repo.insert(a, aPlant(1n)));
  await left(repo.insert(b, aPlant(1n)));
  assert.ok(await right(repo.remove(a, 1n as PlantId)));
  assert.not.ok(await right(repo.remove(a, 1n as PlantId)), 'a second remove frees nothing more');
  assert.equal(await right(repo.insert(b, aPlant(1n))), { _tag: 'Inserted' });
  assert.equal(await left(repo.insert(a, aPlant(2n))), { _tag: 'StorageFull' });
});

test('of 50 concurrent inserts into a store bounded at 10, exactly 10 store', async () => {
  const repo = memoryPlantRepository({ maxPlants: 10 });
  const results = await Promise.all(
    Array.from({ length: 50 }, (_, i) => repo.insert(freshOwner(), aPlant(BigInt(i)))()),
  );
  assert.is(results.filter((r) => r._tag === 'Right').length, 10);
});

test('the default bound fills half the heap limit with worst-case plants', () => {
  const fourGiB = 4 * 2 ** 30;
  assert.is(memoryCapacity(fourGiB), Math.floor(fourGiB / 2 / WORST_CASE_BYTES_PER_PLANT));
  assert.is(memoryCapacity(0), 1, 'never 0: the store always takes a plant');
});

test.run();
