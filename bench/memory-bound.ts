/**
 * The in-memory store's bound, measured. Fills a memory repository bounded at N plants with worst-case plants (every
 * field of PLANT_FIELDS at its longest in astral code points, distinct per plant, each parsed and decoded by the HTTP edge's own code
 * from a request body), checks that one more is refused with StorageFull, and prints one JSON line: the heap bytes
 * per stored plant (after a full GC) and the heap in use at the bound, against the heap limit.
 *
 *   node --expose-gc dist/bench/memory-bound.js [N]    N defaults to the bound derived from this process's heap limit
 */
import { getHeapStatistics } from 'node:v8';
import { parseJson } from '../adapters/http/api/json.js';
import { decodeNewPlant } from '../adapters/http/api/codecs.js';
import { memoryCapacity } from '../adapters/storage/memory/capacity.js';
import { memoryPlantRepository } from '../adapters/storage/memory/memory-plant-repository.js';
import { PLANT_FIELDS, PLANT_FIELD_NAMES, type Owner } from '../domain/plant.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');
const heapLimit = getHeapStatistics().heap_size_limit;
const count = process.argv[2] === undefined ? memoryCapacity(heapLimit) : Number(process.argv[2]);
const owner = 'bench' as Owner;

/** `n` astral code points (U+1F300..U+1F5FF), different for every `seed`. */
const astral = (seed: number, n: number): string => {
  const points: number[] = [];
  let s = seed;
  for (let k = 0; k < n; k++) {
    points.push(0x1f300 + (s % 0x300));
    s = Math.floor(s / 0x300) + k * 7919 + 1;
  }
  return String.fromCodePoint(...points);
};

gc();
const before = process.memoryUsage().heapUsed;
const plants = memoryPlantRepository({ maxPlants: count });
const bodyOf = (i: number) =>
  `{"id":${i},${PLANT_FIELD_NAMES.map((k, j) => `"${k}":"${astral(i + j, PLANT_FIELDS[k].max)}"`).join(',')}}`;
const decode = (body: string) => {
  const parsed = parseJson(Buffer.from(body, 'utf8'));
  if (parsed._tag === 'Left') throw new Error(JSON.stringify(parsed.left));
  const plant = decodeNewPlant(parsed.right);
  if (plant._tag === 'Left') throw new Error(JSON.stringify(plant.left));
  return plant.right;
};
for (let i = 0; i < count; i++) {
  const stored = await plants.insert(owner, decode(bodyOf(i)))();
  if (stored._tag === 'Left') throw new Error(`plant ${i} of ${count} was refused: ${stored.left._tag}`);
}
gc();
const after = process.memoryUsage().heapUsed;
const beyond = await plants.insert(owner, decode(bodyOf(count)))();
const MiB = 2 ** 20;
process.stdout.write(
  JSON.stringify({
    plants: count,
    bytesPerPlant: Math.round((after - before) / count),
    heapUsedMiB: Math.round(after / MiB),
    heapLimitMiB: Math.round(heapLimit / MiB),
    refusedBeyond: beyond._tag === 'Left' && beyond.left._tag === 'StorageFull',
  }) + '\n',
);
