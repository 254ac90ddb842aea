import { PLANT_FIELDS, PLANT_FIELD_NAMES } from '../../../domain/plant.js';

/**
 * How many plants the in-memory store may keep in all, so that it refuses creates (507) before the process runs
 * out of heap, rather than crash with every tenant's plants.
 */

/**
 * Heap bytes one stored plant may cost at worst: every field of PLANT_FIELDS at its longest in astral code points (two
 * UTF-16 code units each, so two-byte strings: 4 bytes a code point), distinct per plant, decoded by the HTTP edge's
 * own parser and kept in the B+ tree; plus the plant object, its id and its share of the tree, and each field's string
 * header and slot. Measured by `node --expose-gc dist/bench/memory-bound.js`, below this estimate with room for
 * other Node versions; test/bench/memory-bound.test.ts fails if a measurement ever exceeds it.
 */
const PLANT_BYTES = 300;
const FIELD_BYTES = 50;
const BYTES_PER_CODE_POINT = 4;
export const WORST_CASE_BYTES_PER_PLANT = PLANT_FIELD_NAMES.reduce(
  (bytes, k) => bytes + FIELD_BYTES + BYTES_PER_CODE_POINT * PLANT_FIELDS[k].max,
  PLANT_BYTES,
);

/**
 * The share of the heap limit that stored plants may fill. The rest is for everything else the process holds at
 * once (request bodies, sockets, logs) and for the garbage collector's headroom: V8 collects well below half full,
 * and thrashes, then aborts, near its limit.
 */
export const HEAP_SHARE_FOR_PLANTS = 0.5;

/** The default total bound of the in-memory store for a heap limit (`v8.getHeapStatistics().heap_size_limit`). */
export const memoryCapacity = (heapSizeLimit: number): number =>
  Math.max(1, Math.floor((heapSizeLimit * HEAP_SHARE_FOR_PLANTS) / WORST_CASE_BYTES_PER_PLANT));
