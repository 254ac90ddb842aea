import { randomInt } from 'node:crypto';
import type { Collection, Document } from 'mongodb';
import type { InsertOutcome } from '../../../application/ports/plant-repository.js';
import type { Plant, PlantId } from '../../../domain/plant.js';

/**
 * The per-owner bound on MongoDB, without transactions and without trusting an update to be atomic.
 *
 * Every plant document holds a `slot`, a number unique per owner (unique index on `{owner, slot}`). A plant may be
 * inserted under a bound of `max` only into a slot below `max`, so the unique index itself (which FerretDB, too,
 * enforces atomically) makes more than `max` plants of one owner impossible, whatever races between requests and
 * processes. Nothing else holds the count: a deleted plant frees its slot with the document, at once; an insert
 * whose outcome is unknown (a 503) either holds its slot or does not exist, so no counter can drift and nothing needs
 * healing. A counter document was the other design; FerretDB 1.24 applies `$inc` and conditional updates as
 * read-modify-write without isolation (measured: 100 concurrent `$inc` of one document added 1 or 2), so a counter
 * there over-admits.
 *
 * A create under a bound: count the owner's plants (the figure users see; at or past the bound, refuse at once, which
 * also covers a bound lowered below what an owner keeps), then insert into a random slot below the bound: free with
 * the odds of the owner's free room, and concurrent creates rarely choose the same one. Two round trips when nothing
 * else happens. Past half full, or after losing a slot, it walks the owner's slots from a random point to the free
 * ones. A duplicate key means the id or the slot is taken (MongoDB says which; FerretDB does not, so the id is looked
 * up): a stored plant answers `Exists` before any refusal. Without a bound a plant takes a random slot out of 2^48.
 *
 * Concurrent creates of one owner in one process share their reads (count, lookup, free-slot walk; see `coalescing`),
 * because on FerretDB every read decodes the whole collection: measured on this VM under load, 100 concurrent
 * creates at a bound of 10 took 135 ms with shared reads and all timed out (503) without.
 */

export const SLOT_INDEX_NAME = 'owner_1_slot_1_unique';

/** Rounds of "choose a free slot, insert into it" before a create gives up as contended (the caller answers 503). */
const MAX_ROUNDS = 16;
/** Slots of an owner without a bound: 2^48 - 1 (randomInt's range), so random ones practically never collide. */
const UNBOUNDED_SLOTS = 2 ** 48 - 1;

/** Creates the unique index that bounds an owner's plants; idempotent. */
export const createSlotIndex = (collection: Collection<Document>): Promise<string> =>
  collection.createIndex({ owner: 1, slot: 1 }, { unique: true, name: SLOT_INDEX_NAME });

/** How an attempt to insert into a slot ended; `taken` when the store did not say which unique index refused it. */
export type SlotAttempt = 'inserted' | 'slot-taken' | 'taken';

/** What one create needs from the repository: the insert of its plant into a slot. */
export type TryInsert = (slot: number) => Promise<SlotAttempt>;

/**
 * Reads that concurrent callers for one owner share, within this process: while a read of an owner runs, new callers
 * gather into the next one, which starts when it settles. A caller never joins a read already running (it could have
 * started before the caller's request, and miss a delete that request must see), so a herd of N concurrent creates
 * costs two reads, not N. FerretDB needs this: every read there decodes the whole collection.
 */
export const coalescing = <A, R>(read: (asks: readonly A[]) => Promise<R>) => {
  const inFlight = new Map<string, Promise<void>>();
  const next = new Map<string, { readonly asks: A[]; readonly result: Promise<R> }>();
  const run = (key: string, asks: readonly A[]): Promise<R> => {
    const result = read(asks);
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    inFlight.set(key, settled);
    void settled.then(() => {
      if (inFlight.get(key) === settled) inFlight.delete(key);
    });
    return result;
  };
  return (key: string, ask: A): Promise<R> => {
    const busy = inFlight.get(key);
    if (busy === undefined) return run(key, [ask]);
    let batch = next.get(key);
    if (batch === undefined) {
      const asks: A[] = [];
      const result = busy.then(() => {
        next.delete(key);
        return run(key, asks);
      });
      batch = { asks, result };
      next.set(key, batch);
    }
    batch.asks.push(ask);
    return batch.result;
  };
};

/**
 * Which unique index refused an insert, from the key pattern of the write error in the insert command's answer:
 * MongoDB names it (`keyPattern`); FerretDB does not, so there the caller must look whether the id is stored.
 */
export const attemptOfKeyPattern = (pattern: unknown): SlotAttempt =>
  typeof pattern === 'object' && pattern !== null && 'slot' in pattern && !('id' in pattern) ? 'slot-taken' : 'taken';

/**
 * A slot for the unique index's probe (unique-index.ts) far above any plant's, so that only the index on (owner, id)
 * can refuse the probe, never the one on (owner, slot).
 */
export const probeSlot = (): number => 2 ** 52 + Math.floor(Math.random() * 2 ** 51);

const slotOf = (doc: Document | undefined): number | undefined => {
  const slot: unknown = doc?.['slot'];
  const n = typeof slot === 'bigint' ? Number(slot) : slot;
  if (n === undefined) return undefined;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw new Error('a stored slot is not a count');
  return n;
};

export const ownerSlots = (collection: Collection<Document>, maxTimeMS: number, decode: (doc: Document) => Plant) => {
  const counts = coalescing<string, number>(([owner]) => collection.countDocuments({ owner }, { maxTimeMS }));
  const count = (owner: string) => counts(owner, owner);

  const lookups = coalescing<{ owner: string; id: PlantId }, Plant[]>(async (asks) => {
    const ids = [...new Set(asks.map((a) => a.id))];
    const docs = await collection
      .find({ owner: asks[0]?.owner, id: { $in: ids } }, { projection: { _id: 0, id: 1, name: 1, tag: 1 }, maxTimeMS })
      .toArray();
    return docs.map(decode);
  });
  const findStored = async (owner: string, id: PlantId): Promise<Plant | undefined> =>
    (await lookups(owner, { owner, id })).find((p) => p.id === id);

  /** Up to `want` free slots in [from, to), lowest first, by walking the owner's taken slots from `from`. */
  const freeIn = async (owner: string, from: number, to: number, want: number): Promise<number[]> => {
    const free: number[] = [];
    let expected = from;
    const cursor = collection
      .find({ owner, slot: { $gte: from, $lt: to } }, { projection: { _id: 0, slot: 1 }, maxTimeMS, batchSize: 100 })
      .sort({ slot: 1 });
    try {
      for await (const doc of cursor) {
        const slot = slotOf(doc) ?? expected;
        while (expected < slot && free.length < want) free.push(expected++);
        if (free.length >= want) return free;
        expected = slot + 1;
      }
    } finally {
      await cursor.close();
    }
    while (expected < to && free.length < want) free.push(expected++);
    return free;
  };

  interface SlotAsk {
    readonly owner: string;
    readonly max: number;
  }
  /**
   * Free slots below the bound for every create of a batch, found by one walk from a random point (wrapping around),
   * and handed out one per create, so that the creates of one batch do not collide with each other.
   */
  const freeSlots = coalescing<SlotAsk, Map<SlotAsk, number | undefined>>(async (asks) => {
    const { owner, max } = asks[0] as SlotAsk;
    const want = asks.length * 2;
    const start = randomInt(max);
    const free = await freeIn(owner, start, max, want);
    if (free.length < want && start > 0) free.push(...(await freeIn(owner, 0, start, want - free.length)));
    for (let i = free.length - 1; i > 0; i--) {
      const j = randomInt(i + 1);
      [free[i], free[j]] = [free[j] as number, free[i] as number];
    }
    return new Map(
      asks.map((ask, i) => [ask, free.length === 0 ? undefined : (free[i] ?? free[randomInt(free.length)])]),
    );
  });
  /** A slot below `max` that was free just now; undefined when none was. */
  const freeSlot = async (owner: string, max: number): Promise<number | undefined> => {
    const ask: SlotAsk = { owner, max };
    return (await freeSlots(`${max}:${owner}`, ask)).get(ask);
  };

  /**
   * Inserts one plant under the owner's bound `max` (Infinity: none), in the order the port promises: a plant stored
   * under the id is `Exists` whatever the count, then room. `undefined` when concurrent creates kept taking the slots
   * it chose until `giveUpAt` (the caller answers 503; nothing was stored by this call).
   */
  const insert = async (
    owner: string,
    max: number,
    plant: Plant,
    tryInsert: TryInsert,
    giveUpAt: number,
  ): Promise<InsertOutcome | undefined> => {
    if (!Number.isFinite(max)) return insertUnbounded(owner, plant, tryInsert, giveUpAt);
    let counted = await count(owner);
    /** The owner has no room (or the id): the plant stored under the id answers first. */
    const refuse = async (known?: Plant): Promise<InsertOutcome> => {
      const stored = known ?? (await findStored(owner, plant.id));
      return stored !== undefined
        ? { _tag: 'Exists', stored, count: counted }
        : { _tag: 'OwnerFull', count: Math.max(counted, max) };
    };
    if (counted >= max) return refuse();
    // A slot at random: free with the odds of the owner's free room, and concurrent creates rarely pick the same one.
    // Past half full, the walk to a free slot is the better bet.
    let slot = counted * 2 < max ? randomInt(max) : await freeSlot(owner, max);
    for (let round = 0; round < MAX_ROUNDS && Date.now() < giveUpAt; round++) {
      // No free slot below the bound: the owner keeps at least `max` plants.
      if (slot === undefined) return refuse();
      const attempt = await tryInsert(slot);
      if (attempt === 'inserted') return { _tag: 'Inserted', count: counted + 1 };
      // Refused by a unique index: the id (a plant is stored, or was until a moment ago) or the slot (a concurrent
      // create took it). Look for the plant and count again, in one round trip shared with concurrent creates.
      const [stored, now] = await Promise.all([
        attempt === 'taken' ? findStored(owner, plant.id) : undefined,
        count(owner),
      ]);
      counted = now;
      if (stored !== undefined || counted >= max) return refuse(stored);
      slot = await freeSlot(owner, max);
    }
    return undefined;
  };

  /** No bound: any slot will do, so a random one from a space where two creates practically never meet. */
  const insertUnbounded = async (
    owner: string,
    plant: Plant,
    tryInsert: TryInsert,
    giveUpAt: number,
  ): Promise<InsertOutcome | undefined> => {
    for (let round = 0; round < MAX_ROUNDS && Date.now() < giveUpAt; round++) {
      const attempt = await tryInsert(randomInt(UNBOUNDED_SLOTS));
      if (attempt === 'inserted') return { _tag: 'Inserted' };
      if (attempt === 'taken') {
        const stored = await findStored(owner, plant.id);
        if (stored !== undefined) return { _tag: 'Exists', stored };
      }
    }
    return undefined;
  };

  return { insert };
};
