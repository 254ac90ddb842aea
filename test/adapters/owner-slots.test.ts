import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  attemptOfKeyPattern,
  OUTSIDE_FROM,
  outsideSlot,
  OwnerMap,
  ownerSlots,
  type SlotStore,
} from '../../adapters/storage/mongodb/owner-slots.js';
import type { Plant, PlantId, PlantName } from '../../domain/plant.js';

/** The pieces of the MongoDB quota (owner-slots.ts) that need no server; the rest runs in the storage contract. */
const test = suite('owner-slots: the map of an owner and duplicate keys');

const holders = (...slots: unknown[]) => slots.map((slot, i) => ({ _id: `doc${i}`, slot }));

test('slots below the bound are inside; slots at or above it, missing or not counts are outside', () => {
  const map = OwnerMap.of(5, holders(0, 4, 5, 2 ** 48, undefined, -1, 'x', 3n));
  assert.equal([...map.taken].sort(), [0, 3, 4]);
  assert.is(map.outsideCount, 5);
  assert.is(map.outside.size, 5);
  assert.is(map.count, 8);
});

test('of plants that share an inside slot (left by a dropped index), all but one count as outside', () => {
  const map = OwnerMap.of(5, holders(1, 1, 1));
  assert.equal([...map.taken], [1]);
  assert.is(map.outsideCount, 2);
});

test('at most the bound of outside plants is remembered, all of them are counted', () => {
  const map = OwnerMap.of(3, holders(...Array.from({ length: 10 }, (_, i) => OUTSIDE_FROM + i)));
  assert.is(map.outside.size, 3);
  assert.is(map.outsideCount, 10);
});

test('reserve hands out every free inside slot once, then none', () => {
  const map = OwnerMap.of(20, holders(3, 7));
  const got = Array.from({ length: 18 }, () => map.reserve());
  assert.is(new Set(got).size, 18);
  for (const slot of got) assert.ok(slot !== undefined && slot >= 0 && slot < 20 && slot !== 3 && slot !== 7);
  assert.is(map.reserve(), undefined);
  map.release(got[0] as number);
  assert.is(map.reserve(), got[0]);
});

test('an outside slot lies above every bound the configuration allows', () => {
  for (let i = 0; i < 100; i++) {
    const slot = outsideSlot();
    assert.ok(Number.isSafeInteger(slot) && slot >= OUTSIDE_FROM && slot < 2 * OUTSIDE_FROM);
  }
});

test('a duplicate key names the slot index only when MongoDB says so; FerretDB says nothing', () => {
  assert.is(attemptOfKeyPattern({ owner: 1, slot: 1 }), 'slot-taken');
  assert.is(attemptOfKeyPattern({ owner: 1, id: 1 }), 'taken');
  assert.is(attemptOfKeyPattern(undefined), 'taken');
});

test('a create whose insert failed (unknown whether it landed) does not make the next create a 403 from that guess', async () => {
  const stored = new Map<number, Plant>();
  let failNext = false;
  let loads = 0;
  const store: SlotStore = {
    load: async () => {
      loads++;
      return [...stored.keys()].map((slot) => ({ _id: `doc${slot}`, slot }));
    },
    insert: async (_owner, plant, slot) => {
      if (failNext) {
        failNext = false;
        throw new Error('timed out, not applied');
      }
      stored.set(slot, plant);
      return 'inserted';
    },
    find: async () => undefined,
    move: async (moves) => moves.map(() => true),
  };
  const slots = ownerSlots(store, { budgetBytes: 1 << 20, fullRecheckMs: 60_000 });
  const plantOf = (n: number) => ({ id: BigInt(n) as PlantId, name: `p${n}` as PlantName });
  const create = (n: number) => slots.insert('alice', 2, plantOf(n), () => undefined, Date.now() + 5_000);
  assert.is((await create(1))?._tag, 'Inserted');
  failNext = true;
  await create(2).then(
    () => assert.unreachable('the failed insert answers its error'),
    (e: unknown) => assert.match(String(e), /timed out/),
  );
  const loadsBefore = loads;
  assert.is((await create(3))?._tag, 'Inserted', 'the owner holds 1 of 2: room, though the failed slot looked taken');
  assert.is(loads, loadsBefore + 1, 'found out by loading the owner again, once');
});

test.run();
