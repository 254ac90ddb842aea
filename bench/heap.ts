/**
 * Heap bytes per stored plant in the memory adapter, beyond its strings: N plants whose names are one shared string
 * (so strings cost nothing) are inserted; the heap grown, after a full GC, divided by N. Run with --expose-gc.
 */
import { memoryPlantRepository } from '../adapters/storage/memory/memory-plant-repository.js';
import type { Owner, PlantId, PlantName } from '../domain/plant.js';

const count = Number(process.argv[2] ?? 1_000_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');
const name = 'shared name' as PlantName;
const owner = 'bench' as Owner;

gc();
const before = process.memoryUsage().heapUsed;
const plants = memoryPlantRepository();
for (let i = 0; i < count; i++) await plants.insert(owner, { id: BigInt(i) as PlantId, name })();
gc();
const after = process.memoryUsage().heapUsed;
process.stdout.write(JSON.stringify({ count, bytesPerPlant: (after - before) / count }) + '\n');
// keep the store reachable until measured
if ((await plants.page(owner, undefined, 1)())._tag !== 'Right') process.exit(1);
