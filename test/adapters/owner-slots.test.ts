import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  attemptOfKeyPattern,
  OUTSIDE_FROM,
  outsideSlot,
  OwnerState,
  ownerSlots,
  STATE_BYTES,
  type Hint,
  type SlotStore,
} from '../../adapters/storage/mongodb/owner-slots.js';

/** The pieces of the MongoDB quota (owner-slots.ts) that need no server; the rest runs in the storage contract. */
const test = suite('owner-slots: an owner state, the LRU, hints and duplicate keys');

const holders = (...slots: unknown[]) => slots.map((slot, i) => ({ _id: `doc${i}`, slot }));

/**
 * A server as the slots see it, in memory: plants unique on (owner, slot) and (owner, id), markers, hints; counts
 * each command by name. `moveTo` lets a test make a move land elsewhere (another process moving the same plant).
 */
const fakeServer = () => {
  const plants = new Map<string, { owner: string; slot: number; id: bigint }>();
  const markers = new Map<string, unknown>();
  const hints = new Map<string, Map<number, Hint>>();
  const calls: Record<string, number> = {};
  let nextId = 0;
  let failNext = false;
  let moveTo: ((to: number) => number) | undefined;
  const count = (name: string) => (calls[name] = (calls[name] ?? 0) + 1);
  const taken = (owner: string, key: 'slot' | 'id', value: unknown, except?: string) =>
    [...plants].some(([_id, p]) => _id !== except && p.owner === owner && p[key] === value);
  const store: SlotStore = {
    load: async (owner) => {
      count('load');
      return [...plants].filter(([, p]) => p.owner === owner).map(([_id, p]) => ({ _id, slot: p.slot }));
    },
    insert: async (owner, fields, slot) => {
      count('insert');
      if (failNext) {
        failNext = false;
        throw new Error('timed out, not applied');
      }
      const id = fields['id'] as bigint;
      if (taken(owner, 'slot', slot) || taken(owner, 'id', id)) return 'taken';
      plants.set(`doc${nextId++}`, { owner, slot, id });
      return 'inserted';
    },
    find: async (owner, id) => {
      count('find');
      return [...plants.values()].some((p) => p.owner === owner && p.id === id) ? { id } : undefined;
    },
    move: async (_id, to) => {
      count('move');
      const plant = plants.get(String(_id));
      if (plant === undefined) return true;
      const target = moveTo?.(to) ?? to;
      if (taken(plant.owner, 'slot', target, String(_id))) return false;
      plant.slot = target;
      return true;
    },
    markers: async () => {
      count('markers');
      return [...markers].map(([_id, at]) => ({ _id, at }));
    },
    mark: async (id) => {
      count('mark');
      if (!markers.has(id)) markers.set(id, undefined);
    },
    anyPlant: async () => plants.size > 0,
    hint: async (owner, slot) => {
      count('hint');
      const at = Date.now();
      const of = hints.get(owner) ?? new Map<number, Hint>();
      of.set(slot % 32, { slot, at });
      hints.set(owner, of);
      return at;
    },
    hints: async (owner) => {
      count('hints');
      return [...(hints.get(owner)?.values() ?? [])];
    },
  };
  /** Deletes the owner's plant of that id, as the repository does, then tells `slots` (the deleting process). */
  const remove = async (slots: ReturnType<typeof ownerSlots>, owner: string, id: bigint) => {
    const found = [...plants].find(([, p]) => p.owner === owner && p.id === id);
    if (found === undefined) return false;
    plants.delete(found[0]);
    await slots.freed(owner, found[1].slot);
    return true;
  };
  return {
    store,
    plants,
    calls,
    remove,
    failNext: () => (failNext = true),
    moveTo: (f: typeof moveTo) => (moveTo = f),
  };
};

const create = (slots: ReturnType<typeof ownerSlots>, owner: string, id: number, max: number) =>
  slots.insert(owner, max, BigInt(id), { id: BigInt(id), name: `p${id}` }, () => undefined, Date.now() + 5_000);

test('slots below the bound are inside; slots at or above it, missing or not counts are outside', () => {
  const state = OwnerState.of(5, holders(0, 4, 5, 2 ** 48, undefined, -1, 'x', 3n));
  assert.equal(
    [0, 1, 2, 3, 4].filter((s) => state.has(s)),
    [0, 3, 4],
  );
  assert.is(state.outsideCount, 5);
  assert.is(state.outside.size, 5);
  assert.is(state.count, 8);
});

test('of plants that share an inside slot (left by a dropped index), all but one count as outside', () => {
  const state = OwnerState.of(5, holders(1, 1, 1));
  assert.is(state.known, 1);
  assert.is(state.outsideCount, 2);
});

test('at most the bound of outside plants is remembered, all of them are counted', () => {
  const state = OwnerState.of(3, holders(...Array.from({ length: 10 }, (_, i) => OUTSIDE_FROM + i)));
  assert.is(state.outside.size, 3);
  assert.is(state.outsideCount, 10);
});

test('reserve hands out every free inside slot once, then none, and a cleared one again', () => {
  const state = OwnerState.of(20, holders(3, 7));
  const got = Array.from({ length: 18 }, () => state.reserve());
  assert.is(new Set(got).size, 18);
  for (const slot of got) assert.ok(slot !== undefined && slot >= 0 && slot < 20 && slot !== 3 && slot !== 7);
  assert.is(state.reserve(), undefined);
  state.clear(got[0] as number);
  assert.is(state.reserve(), got[0]);
});

test('a state weighs its bitset (1,250 bytes at a bound of 10,000) and the outside plants it remembers', () => {
  const empty = new OwnerState(10_000);
  assert.is(empty.bytes, STATE_BYTES + 1250);
  const loaded = OwnerState.of(10_000, holders(...Array.from({ length: 50 }, (_, i) => OUTSIDE_FROM + i)));
  assert.ok(loaded.bytes > empty.bytes, 'remembered outside plants weigh');
});

test('the states of many owners stay within the budget: the least recently used go', async () => {
  const { store } = fakeServer();
  const budget = 20 * (STATE_BYTES + 1250);
  const slots = ownerSlots(store, { budgetBytes: budget, fullRecheckMs: 1000 });
  let peak = 0;
  for (let owner = 0; owner < 200; owner++) {
    assert.is((await create(slots, `o${owner}`, 1, 10_000))?._tag, 'Inserted');
    peak = Math.max(peak, slots.usage().bytes);
  }
  assert.ok(peak <= budget, `at most the budget (${peak} of ${budget})`);
  assert.is(slots.usage().owners, 20);
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

test('without a marker of outside plants a create reads nothing of the owner: one insert', async () => {
  const server = fakeServer();
  const slots = ownerSlots(server.store, { budgetBytes: 1 << 20, fullRecheckMs: 1000 });
  for (let id = 0; id < 50; id++) assert.is((await create(slots, 'alice', id, 100))?._tag, 'Inserted');
  assert.is(server.calls['load'], undefined);
  assert.is(server.calls['insert'], 50);
});

test('a marker of plants created without a bound makes a process that holds nothing of the owner count them', async () => {
  const server = fakeServer();
  const slots = ownerSlots(server.store, { budgetBytes: 1 << 20, fullRecheckMs: 1000 });
  const other = ownerSlots(server.store, { budgetBytes: 1 << 20, fullRecheckMs: 1000 });
  await create(slots, 'bob', 100, 10); // markers read, nothing risky yet
  for (let id = 0; id < 3; id++) assert.is((await create(other, 'alice', id, Infinity))?._tag, 'Inserted');
  const outcomes = await Promise.all(Array.from({ length: 10 }, (_, i) => create(slots, 'alice', 10 + i, 5)));
  assert.is(outcomes.filter((o) => o?._tag === 'Inserted').length, 2);
  assert.is([...server.plants.values()].filter((p) => p.owner === 'alice').length, 5);
});

test('room freed through another process is found through its hint, without loading the owner', async () => {
  const server = fakeServer();
  const [a, b] = [0, 1].map(() => ownerSlots(server.store, { budgetBytes: 1 << 20, fullRecheckMs: 60_000 })) as [
    ReturnType<typeof ownerSlots>,
    ReturnType<typeof ownerSlots>,
  ];
  for (let id = 0; id < 10; id++) await create(a, 'alice', id, 10);
  assert.is((await create(b, 'alice', 100, 10))?._tag, 'OwnerFull', 'b learns the owner full (one load)');
  const loads = server.calls['load'];
  for (let round = 0; round < 5; round++) {
    assert.ok(await server.remove(a, 'alice', BigInt(round)));
    assert.equal(await create(b, 'alice', 200 + round, 10), { _tag: 'Inserted', count: 10 });
  }
  assert.is(server.calls['load'], loads, 'no load of the owner per replacement');
});

test('a plant moved twice (by two processes) does not leave a create refused while there is room', async () => {
  const server = fakeServer();
  const slots = ownerSlots(server.store, { budgetBytes: 1 << 20, fullRecheckMs: 60_000 });
  const other = ownerSlots(server.store, { budgetBytes: 1 << 20, fullRecheckMs: 60_000 });
  await create(slots, 'bob', 100, 10);
  for (let id = 0; id < 3; id++) assert.is((await create(other, 'alice', id, Infinity))?._tag, 'Inserted');
  // Each move lands one slot further than asked: the slot this process believes taken by the move stays free.
  server.moveTo((to) => (to + 1) % 6);
  const outcomes = await Promise.all(Array.from({ length: 6 }, (_, i) => create(slots, 'alice', 10 + i, 6)));
  assert.is(outcomes.filter((o) => o?._tag === 'Inserted').length, 3);
  assert.is([...server.plants.values()].filter((p) => p.owner === 'alice').length, 6);
});

test('a create whose insert failed (unknown whether it landed) does not make the next create a 403 from that guess', async () => {
  const server = fakeServer();
  const slots = ownerSlots(server.store, { budgetBytes: 1 << 20, fullRecheckMs: 60_000 });
  assert.is((await create(slots, 'alice', 1, 2))?._tag, 'Inserted');
  server.failNext();
  await create(slots, 'alice', 2, 2).then(
    () => assert.unreachable('the failed insert answers its error'),
    (e: unknown) => assert.match(String(e), /timed out/),
  );
  const loadsBefore = server.calls['load'] ?? 0;
  assert.is((await create(slots, 'alice', 3, 2))?._tag, 'Inserted', 'the owner holds 1 of 2: room');
  assert.ok((server.calls['load'] ?? 0) <= loadsBefore + 1, 'found out by loading the owner again, at most once');
});

test.run();
