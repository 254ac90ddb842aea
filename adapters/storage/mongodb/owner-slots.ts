import { randomInt } from 'node:crypto';
import type { InsertOutcome } from '../../../application/ports/plant-repository.js';
import type { Plant } from '../../../domain/plant.js';

/**
 * The per-owner bound on MongoDB, resting only on what FerretDB also guarantees: a unique index is enforced atomically
 * (single-document updates and transactions are not, there), so whatever must be exact rests on the unique index on
 * `{owner, slot}`, and everything this process remembers is a hint that the index corrects.
 *
 * Every plant document holds a `slot`, unique per owner. Under a bound `max` the slots [0, max) are *inside*; every
 * other slot is *outside*: plants created without a bound take a random slot in [2^48, 2^49), plants kept over a
 * lowered bound hold slots at or above it, and documents written before slots existed (mended at start-up, see
 * indexes.ts) get outside slots. A create under a bound may only take an inside slot, so the unique index alone makes
 * more than `max` inside plants impossible, whatever the races between requests and processes.
 *
 * Outside plants count too. A process admits a create into an inside slot only once the owner has no outside plant
 * left: it first moves the outside plants it loaded into free inside slots (`updateOne({_id}, {$set: {slot}})`; the
 * unique index arbitrates an update as it does an insert). Why that is exact across processes: outside plants only
 * come into being when no bound applies or the bound changes (both at a process's start, with an empty map), or when
 * the service mends legacy or duplicate slots (after which every process drops its maps, see indexes.ts). So once a
 * process has loaded the owner's plants, every outside plant that exists is in what it loaded; once each of those has
 * been moved inside (by this process or another: a move only ever goes from outside to inside) or deleted, the owner
 * holds inside plants only, at most `max` by the index, and an insert into a free inside slot keeps it at most `max`.
 * A move that finds its slot taken leaves the plant outside (still counted) and marks the slot taken; an owner whose
 * outside plants cannot all move in keeps at least `max` plants and is refused: an owner above a lowered bound keeps
 * its plants and can create again only once below it.
 *
 * The map of an owner (which inside slots are taken, which outside plants exist) is loaded in one `find` and kept in
 * an LRU bounded by bytes. In the steady state a create is one `insertOne` into a free slot picked at random from the
 * map, or two (the load, then the insert) for an owner not in the map. A slot another process took answers a
 * duplicate key: the slot is marked taken and another one tried. An owner that looks full is loaded again at most
 * once per `fullRecheckMs` (a delete through this process, or a failed insert, clears that limit), never on every request.
 */

/** The first outside slot of a plant created without a bound: far above any bound (`MAX_PLANTS_PER_OWNER`). */
export const OUTSIDE_FROM = 2 ** 48;
/** A fresh outside slot: random in [2^48, 2^49), so that two of them practically never meet. */
export const outsideSlot = (): number => OUTSIDE_FROM + randomInt(2 ** 48 - 1);

/** Rounds of "choose a free slot, insert into it" before a create gives up as contended (the caller answers 503). */
const MAX_ROUNDS = 16;
/** Slots lost to other processes in a row before the map is loaded again. */
const RELOAD_AFTER_COLLISIONS = 4;
/** Rough heap bytes of one remembered slot or outside plant, for the LRU's budget. */
const BYTES_PER_ENTRY = 64;

/** How an attempt to insert into a slot ended; `taken` when the store did not say which unique index refused it. */
export type SlotAttempt = 'inserted' | 'slot-taken' | 'taken';

/**
 * Which unique index refused an insert, from the key pattern of the duplicate-key error: MongoDB names it
 * (`keyPattern`); FerretDB does not, so there the caller must look whether the id is stored.
 */
export const attemptOfKeyPattern = (pattern: unknown): SlotAttempt =>
  typeof pattern === 'object' && pattern !== null && 'slot' in pattern && !('id' in pattern) ? 'slot-taken' : 'taken';

/** One stored plant as the map's load reads it: its `_id` (to move it) and its slot, if it has a usable one. */
export interface SlotHolder {
  readonly _id: unknown;
  readonly slot?: unknown;
}

/** What the slots need from the store; each function is one command. */
export interface SlotStore {
  /** The owner's plants' `_id` and `slot`, in one round trip for an owner of at most `max` plants. */
  readonly load: (owner: string, max: number) => Promise<readonly SlotHolder[]>;
  /** Inserts the plant into that slot. */
  readonly insert: (owner: string, plant: Plant, slot: number) => Promise<SlotAttempt>;
  /** The plant stored under that owner and id, if any. */
  readonly find: (owner: string, plant: Plant) => Promise<Plant | undefined>;
  /** Moves each plant (by `_id`) to its slot, in one round trip; answers, per move, whether the slot was free. */
  readonly move: (
    moves: ReadonlyArray<{ readonly _id: unknown; readonly slot: number }>,
  ) => Promise<readonly boolean[]>;
}

const slotNumber = (slot: unknown): number | undefined => {
  const n = typeof slot === 'bigint' ? Number(slot) : slot;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
};

/**
 * What this process knows of one owner's slots under one bound. `taken`: inside slots held (or being taken by a
 * create in flight here); `outside`: the outside plants loaded and not moved yet (by `_id`), at most `max` of them
 * remembered, `outsideCount` all of them.
 */
export class OwnerMap {
  readonly taken = new Set<number>();
  readonly outside = new Map<unknown, SlotHolder>();
  outsideCount = 0;
  /** When this map was last loaded because the owner looked full. */
  fullCheckedAt = 0;
  /** The moves of outside plants running now: one at a time per owner, shared by concurrent creates. */
  admitting: Promise<void> | undefined;

  /** `epoch`: which generation of the slots (see `forgetAll`) this map was loaded in. */
  constructor(
    readonly max: number,
    readonly epoch = 0,
  ) {}

  static of(max: number, holders: readonly SlotHolder[], epoch = 0): OwnerMap {
    const map = new OwnerMap(max, epoch);
    map.fill(holders);
    return map;
  }

  /** Replaces what the map knows with what a load read. */
  fill(holders: readonly SlotHolder[]): void {
    this.taken.clear();
    this.outside.clear();
    this.outsideCount = 0;
    for (const holder of holders) {
      const slot = slotNumber(holder.slot);
      // A duplicate inside slot (left by a dropped index) is one plant too many there: it must move like an outside one.
      if (slot !== undefined && slot < this.max && !this.taken.has(slot)) this.taken.add(slot);
      else {
        this.outsideCount++;
        if (this.outside.size < this.max) this.outside.set(String(holder._id), holder);
      }
    }
    this.bytes = 200 + (this.taken.size + this.outside.size) * BYTES_PER_ENTRY;
  }

  /** The owner's plants as this process knows them. */
  get count(): number {
    return this.taken.size + this.outsideCount;
  }

  /** Heap bytes this map holds, roughly, as of its load (creates since then add at most up to the bound). */
  bytes = 0;

  /** Takes a free inside slot, picked at random (concurrent creates in other processes rarely pick the same). */
  reserve(): number | undefined {
    if (this.taken.size >= this.max) return undefined;
    let slot: number | undefined;
    if (this.taken.size * 2 < this.max) {
      for (let i = 0; i < 64 && slot === undefined; i++) {
        const s = randomInt(this.max);
        if (!this.taken.has(s)) slot = s;
      }
    }
    if (slot === undefined) {
      const start = randomInt(this.max);
      for (let i = 0; i < this.max; i++) {
        const s = (start + i) % this.max;
        if (!this.taken.has(s)) {
          slot = s;
          break;
        }
      }
    }
    if (slot !== undefined) this.taken.add(slot);
    return slot;
  }

  release(slot: number): void {
    this.taken.delete(slot);
  }
}

export interface OwnerSlotsOptions {
  /** Heap bytes the maps of all owners may hold together; the least recently used go first. */
  readonly budgetBytes: number;
  /** Least time between two loads of an owner that looks full. */
  readonly fullRecheckMs: number;
}

export const ownerSlots = (store: SlotStore, options: OwnerSlotsOptions) => {
  /** Owner -> map and its weight when remembered, least recently used first. */
  const maps = new Map<string, { readonly map: OwnerMap; readonly weight: number }>();
  let bytes = 0;
  const loading = new Map<string, Promise<OwnerMap>>();
  /** Counts `forgetAll`s: a map loaded across one may predate mended slots, and is loaded again. */
  let epoch = 0;

  const remember = (owner: string, map: OwnerMap) => {
    forget(owner);
    maps.set(owner, { map, weight: map.bytes });
    bytes += map.bytes;
    for (const [oldest, old] of maps) {
      if (bytes <= options.budgetBytes || oldest === owner) break;
      maps.delete(oldest);
      bytes -= old.weight;
    }
  };
  const forget = (owner: string): void => {
    const old = maps.get(owner);
    if (old === undefined) return;
    maps.delete(owner);
    bytes -= old.weight;
  };

  /**
   * Loads the owner's map; concurrent creates of one owner share one load, which outlives the requests that wait for
   * it (bounded by its own time limit, see the repository's `slotLoadTimeoutMs`).
   */
  const load = (owner: string, max: number): Promise<OwnerMap> => {
    const key = `${max}:${owner}`;
    const running = loading.get(key);
    if (running !== undefined) return running;
    const pending: Promise<OwnerMap> = (async () => {
      for (;;) {
        const started = epoch;
        const holders = await store.load(owner, max);
        if (started === epoch) return holders;
      }
    })()
      .then((holders) => {
        const map = OwnerMap.of(max, holders, epoch);
        map.fullCheckedAt = Date.now(); // as fresh as a look at an owner that looks full
        remember(owner, map);
        return map;
      })
      .finally(() => {
        loading.delete(key);
      });
    loading.set(key, pending);
    return pending;
  };

  const mapOf = (owner: string, max: number): Promise<OwnerMap> => {
    const entry = maps.get(owner);
    if (entry === undefined || entry.map.max !== max) return load(owner, max);
    maps.delete(owner); // most recently used now
    maps.set(owner, entry);
    return Promise.resolve(entry.map);
  };

  /**
   * Moves the owner's loaded outside plants into free inside slots, in one round trip per round. Exactness does not
   * depend on the moves succeeding: a plant left outside keeps the owner from being admitted.
   */
  const moveInside = (owner: string, map: OwnerMap): Promise<void> => {
    map.admitting ??= (async () => {
      for (let round = 0; round < 4 && map.outside.size > 0; round++) {
        const moves: Array<{ holder: SlotHolder; slot: number }> = [];
        for (const holder of map.outside.values()) {
          const slot = map.reserve();
          if (slot === undefined) break;
          moves.push({ holder, slot });
        }
        if (moves.length === 0) return;
        const moved = await store.move(moves.map(({ holder, slot }) => ({ _id: holder._id, slot })));
        moves.forEach(({ holder }, i) => {
          if (moved[i] === true && map.outside.delete(String(holder._id))) map.outsideCount--;
        });
        // A slot was taken: by another plant, or by this very plant moved by another process. Only a load tells.
        if (moved.some((m) => !m)) map.fill(await store.load(owner, map.max));
      }
    })().finally(() => {
      map.admitting = undefined;
    });
    return map.admitting;
  };

  /** Whether the owner, as far as `map` knows, may create now; moves outside plants in first. */
  const admit = async (owner: string, map: OwnerMap): Promise<number | undefined> => {
    if (map.outsideCount > 0) await moveInside(owner, map);
    return map.outsideCount === 0 ? map.reserve() : undefined;
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
    check: () => void,
    giveUpAt: number,
  ): Promise<InsertOutcome | undefined> => {
    if (!Number.isFinite(max)) return insertUnbounded(owner, plant, check, giveUpAt);
    let map = await mapOf(owner, max);
    let collisions = 0;
    let lookedUp = false;
    for (let round = 0; round < MAX_ROUNDS && Date.now() < giveUpAt; round++) {
      check();
      if (map.epoch !== epoch) map = await load(owner, max); // the slots were mended since this map was loaded
      const slot = await admit(owner, map);
      if (slot === undefined) {
        // Looks full: the plant stored under the id answers first (looked up once per call: the answer is as of that
        // look); then, at most once per fullRecheckMs, look again at the owner's slots.
        if (!lookedUp) {
          lookedUp = true;
          const stored = await store.find(owner, plant);
          if (stored !== undefined) return { _tag: 'Exists', stored, count: map.count };
        }
        if (Date.now() - map.fullCheckedAt < options.fullRecheckMs) {
          return { _tag: 'OwnerFull', count: Math.max(map.count, max) };
        }
        check();
        map = await load(owner, max);
        continue;
      }
      check();
      let attempt: SlotAttempt;
      try {
        attempt = await store.insert(owner, plant, slot);
      } catch (e) {
        // Whether the plant landed is unknown: its slot stays marked taken (never fewer plants counted than stored),
        // and the next create that finds the owner full looks again at once, not answer 403 from this guess.
        map.fullCheckedAt = 0;
        throw e;
      }
      if (attempt === 'inserted') return { _tag: 'Inserted', count: map.count };
      if (attempt === 'taken') {
        // Refused by the id or the slot (FerretDB does not say which): a stored plant answers.
        const stored = await store.find(owner, plant);
        if (stored !== undefined) {
          map.release(slot);
          return { _tag: 'Exists', stored, count: map.count };
        }
      }
      // Another process holds that slot: it stays marked taken. After a few, this map is too old to guess from.
      if (++collisions % RELOAD_AFTER_COLLISIONS === 0) {
        check();
        map = await load(owner, max);
      }
    }
    return undefined;
  };

  /** No bound: a random outside slot, from a space where two creates practically never meet. */
  const insertUnbounded = async (
    owner: string,
    plant: Plant,
    check: () => void,
    giveUpAt: number,
  ): Promise<InsertOutcome | undefined> => {
    // A map of this owner would not know of this plant; it is loaded again when a bound next applies.
    forget(owner);
    for (let round = 0; round < MAX_ROUNDS && Date.now() < giveUpAt; round++) {
      check();
      const attempt = await store.insert(owner, plant, outsideSlot());
      if (attempt === 'inserted') return { _tag: 'Inserted' };
      if (attempt === 'taken') {
        const stored = await store.find(owner, plant);
        if (stored !== undefined) return { _tag: 'Exists', stored };
      }
    }
    return undefined;
  };

  /** A plant of the owner in that slot was deleted through this process: its room is free at once. */
  const freed = (owner: string, slot: unknown): void => {
    const map = maps.get(owner)?.map;
    if (map === undefined) return;
    const n = slotNumber(slot);
    // An outside plant may or may not be in what was loaded: load again rather than guess the count.
    if (n === undefined || n >= map.max) return forget(owner);
    map.release(n);
    map.fullCheckedAt = 0;
  };

  /** Drops every map (after the service mended slots or rebuilt the slot index). */
  const forgetAll = (): void => {
    epoch++;
    maps.clear();
    bytes = 0;
  };

  return { insert, freed, forgetAll };
};
