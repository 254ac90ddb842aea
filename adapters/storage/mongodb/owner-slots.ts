import { randomInt } from 'node:crypto';
import type { InsertOutcome } from '../../../application/ports/plant-repository.js';
import type { Plant } from '../../../domain/plant.js';
import type { outsidePlants } from './outside-plants.js';

/**
 * The per-owner bound on MongoDB, resting only on what FerretDB also guarantees: a unique index is enforced atomically
 * (single-document updates and transactions are not, there), so whatever must be exact rests on the unique index on
 * `{owner, slot}`, and everything this process remembers is a hint that the index corrects.
 *
 * Every plant document holds a `slot`, unique per owner. Under a bound `max` the slots [0, max) are *inside*; every
 * slot at or above `max` is *outside*: plants created without a bound take a random slot in [2^48, 2^49), plants kept
 * over a lowered bound hold slots at or above it, and documents the index upkeep mends (written before slots existed,
 * or sharing a slot while the index was missing, see indexes.ts) get outside slots. A create under a bound only ever
 * takes an inside slot, so the unique index alone makes more than `max` inside plants impossible, whatever the races.
 *
 * Outside plants count too. A process admits a create into an inside slot only once it knows the owner has no outside
 * plant: on first sight of an owner it looks (one `findOne` of a slot at or above `max`, an index seek on MongoDB).
 * An owner with outside plants is loaded and they are moved into free inside slots (`updateOne` by `_id`, arbitrated
 * by the unique index as an insert is), by one process at a time per owner (a lock document, see `SlotStore.lock`),
 * so that no plant is moved twice by two processes that both believe the slot they chose is now taken. An owner whose
 * outside plants cannot all move in keeps at least `max` plants and is refused.
 *
 * Why that is exact across processes that share one bound: outside plants only come into being when no bound applies
 * or the bound changes (a process started with another bound), or when the upkeep mends slots (after which every
 * process drops what it knows: the slots' generation). So once a process has looked at an owner and found no outside
 * plant (or moved them all in), none appears, and an insert into a free inside slot keeps the owner at most `max`.
 *
 * What a process remembers of an owner (`OwnerState`) is a bitset of the inside slots it knows taken (1 bit a slot),
 * a cursor, and, once it has loaded the owner, its count. A create takes the next slot it believes free from the
 * cursor, which starts at random: creates of one owner through several processes take runs of their own and meet only
 * where the runs do. A slot found taken (a duplicate key) is marked, and the cursor jumps to a slot believed free, at
 * random; after two refusals a create tries several slots at once, and a load of the owner (every slot, one `find`)
 * goes on in the background (see `insert`). The states are kept in an LRU weighed in bytes as they stand, never above
 * the budget; an owner not held costs one look, or nothing once the sweep vouches for it (outside-plants.ts).
 *
 * Room freed at the bound: a delete through a process that believes the owner full (or one short) moves the plant in the last inside
 * slot (`max - 1`) into the slot just freed (one `updateOne`), so that the free slot of a full owner is always the
 * last one, and a create through any process that believes the owner full tries that slot first: no process reads the
 * owner to find the room another one freed. When that slot is taken too, the owner is refused on what this process
 * loaded at most `fullRecheckMs` ago, and loaded again otherwise.
 */

/** The first outside slot of a plant created without a bound: far above any bound (`MAX_PLANTS_PER_OWNER`). */
export const OUTSIDE_FROM = 2 ** 48;
/** A fresh outside slot: random in [2^48, 2^49), so that two of them practically never meet. */
export const outsideSlot = (): number => OUTSIDE_FROM + randomInt(2 ** 48 - 1);

/** Rounds of "choose a free slot, insert into it" before a create gives up as contended (the caller answers 503). */
const MAX_ROUNDS = 32;
/** Slots a create tries at once after two refusals (see `insert`). */
const PROBES = 3;
/** Collisions since the last load after which a load is due, however recent it was. */
const RELOAD_AFTER_COLLISIONS = 8;
/** Slots a bitset covers at most (128 KiB); above that, slots beyond are chosen at random and not remembered. */
const BITSET_SLOTS = 2 ** 20;
/**
 * Heap bytes of one owner's state beside its bitset: the object, its LRU entry and the owner's name (measured with
 * `node --expose-gc dist/bench/slots-memory.js`, see docs/storage.md).
 */
export const STATE_BYTES = 700;
/** Heap bytes of one remembered outside plant (its `_id` and slot), while it waits to be moved in. */
const OUTSIDE_BYTES = 160;
/** Tries to take an owner's lock (another process moving its plants in) before the create gives up (503). */
const LOCK_TRIES = 40;

/** How an attempt to insert into a slot ended; `taken` when the store did not say which unique index refused it. */
export type SlotAttempt = 'inserted' | 'slot-taken' | 'taken';

/**
 * Which unique index refused an insert, from the key pattern of the duplicate-key error: MongoDB names it
 * (`keyPattern`); FerretDB does not, so there the caller must look whether the id is stored.
 */
export const attemptOfKeyPattern = (pattern: unknown): SlotAttempt =>
  typeof pattern === 'object' && pattern !== null && 'slot' in pattern && !('id' in pattern) ? 'slot-taken' : 'taken';

/** One stored plant as a load reads it: its `_id` (to move it) and its slot. */
export interface SlotHolder {
  readonly _id: unknown;
  readonly slot?: unknown;
}

/** What the slots need from the store; each function is one command, unless it says otherwise. */
export interface SlotStore {
  /** Every plant of the owner: `_id` and `slot`, in one round trip for an owner of at most `max` plants. */
  readonly load: (owner: string, max: number) => Promise<readonly SlotHolder[]>;
  /** Whether the owner has a plant in a slot at or above `max` (an outside plant). */
  readonly hasOutside: (owner: string, max: number) => Promise<boolean>;
  /** Inserts the plant into that slot. */
  readonly insert: (owner: string, plant: Plant, slot: number) => Promise<SlotAttempt>;
  /**
   * Deletes the plant this process just stored in `slot`, and nothing else (the owner, slot and id all match): a second
   * copy of one create, stored only while the (owner, id) index was missing (see `insert`).
   */
  readonly unstore: (owner: string, plant: Plant, slot: number) => Promise<void>;
  /** The plant stored under that owner and id, if any. */
  readonly find: (owner: string, plant: Plant) => Promise<Plant | undefined>;
  /** Moves each plant (by `_id`) to its slot, in one round trip; answers, per move, whether the slot was free. */
  readonly move: (
    moves: ReadonlyArray<{ readonly _id: unknown; readonly slot: number }>,
  ) => Promise<readonly boolean[]>;
  /** Moves the owner's plant in slot `from`, if any, to slot `to`: `moved`, `empty` (none there), `taken` (`to` is). */
  readonly compact: (owner: string, from: number, to: number) => Promise<'moved' | 'empty' | 'taken'>;
  /** Takes the owner's lock for moving its plants in: false while another process holds it (one or two commands). */
  readonly lock: (owner: string) => Promise<boolean>;
  readonly unlock: (owner: string) => Promise<void>;
}

const slotNumber = (slot: unknown): number | undefined => {
  const n = typeof slot === 'bigint' ? Number(slot) : slot;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
};

/** What this process knows of one owner's slots under one bound `max`, in one generation of the slots. */
export class OwnerState {
  /** The inside slots below `BITSET_SLOTS` known taken (or being taken by a create in flight here). */
  readonly bits: Uint8Array;
  /** Set bits. */
  taken = 0;
  /** Inside plants known at or above `BITSET_SLOTS` (only under a bound that large). */
  beyond = 0;
  /** Whether the owner is known to have no outside plant (looked at, or all moved in). */
  clean = false;
  /** Whether the state holds every plant of the owner as of a load (`loadedAt`), with this process's changes since. */
  complete = false;
  loadedAt = 0;
  /** When the last load began: a refusal before it is in what it read (one after, only as this process marked it). */
  readFrom = 0;
  /** Slots found taken since the last load (others' creates this process did not know of). */
  collisionsSinceLoad = 0;
  /** Where the next create looks for a free slot. */
  cursor: number;
  /** The outside plants loaded and not moved in yet, by `_id` (at most `max` remembered); `outsideCount`: all. */
  readonly outside = new Map<string, SlotHolder>();
  outsideCount = 0;
  /** The load running now, shared by every create of the owner here; the slots marked and freed while it runs. */
  loading: Promise<void> | undefined;
  private duringLoad: { readonly marked: Set<number>; readonly freed: Set<number>; readonly began: number } | undefined;
  /** The admission running now (a look, or moves of outside plants): one at a time per owner here. */
  admitting: Promise<void> | undefined;

  constructor(
    readonly max: number,
    readonly generation = 0,
  ) {
    this.bits = new Uint8Array(Math.ceil(Math.min(max, BITSET_SLOTS) / 8));
    this.cursor = randomInt(max);
  }

  /** The slots the bitset covers. */
  private get span(): number {
    return Math.min(this.max, BITSET_SLOTS);
  }

  has(slot: number): boolean {
    return slot < this.span && ((this.bits[slot >> 3] as number) & (1 << (slot & 7))) !== 0;
  }

  /** Marks an inside slot taken. */
  mark(slot: number): void {
    if (slot >= this.max) return;
    this.duringLoad?.marked.add(slot);
    this.duringLoad?.freed.delete(slot);
    if (slot >= this.span) {
      this.beyond++;
      return;
    }
    if (this.has(slot)) return;
    this.bits[slot >> 3] = (this.bits[slot >> 3] as number) | (1 << (slot & 7));
    this.taken++;
  }

  /** Marks an inside slot free. */
  unmark(slot: number): void {
    if (slot >= this.max) return;
    this.duringLoad?.freed.add(slot);
    this.duringLoad?.marked.delete(slot);
    if (slot >= this.span) {
      this.beyond = Math.max(0, this.beyond - 1);
      return;
    }
    if (!this.has(slot)) return;
    this.bits[slot >> 3] = (this.bits[slot >> 3] as number) & ~(1 << (slot & 7));
    this.taken--;
  }

  /** The owner's plants as this process knows them. */
  get count(): number {
    return this.taken + this.beyond + this.outsideCount;
  }

  /** Whether every inside slot is known taken. */
  get full(): boolean {
    return this.taken + this.beyond >= this.max;
  }

  /** Heap bytes this state holds, as it stands. */
  get bytes(): number {
    return STATE_BYTES + this.bits.byteLength + this.outside.size * OUTSIDE_BYTES;
  }

  /** Takes the next slot believed free from the cursor (marked taken), or undefined when every one looks taken. */
  choose(): number | undefined {
    if (this.full) return undefined;
    let slot: number | undefined;
    if (this.max > BITSET_SLOTS) {
      // Too many slots to remember: one at random is free with the probability of the owner's free room.
      for (let i = 0; i < 64 && slot === undefined; i++) {
        const s = randomInt(this.max);
        if (!this.has(s)) slot = s;
      }
    } else slot = this.nextFree(this.cursor);
    if (slot === undefined) return undefined;
    this.mark(slot);
    this.cursor = (slot + 1) % this.max;
    return slot;
  }

  /** The first slot at or after `from` (wrapping) not marked taken. */
  private nextFree(from: number): number | undefined {
    const span = this.span;
    for (let i = 0, s = from; i < span;) {
      const byte = this.bits[s >> 3] as number;
      if (byte === 0xff && (s & 7) === 0 && s + 8 <= span) {
        i += 8;
        s = (s + 8) % span;
        continue;
      }
      if ((byte & (1 << (s & 7))) === 0) return s;
      i++;
      s = (s + 1) % span;
    }
    return undefined;
  }

  /**
   * After a collision: moves the cursor to a slot believed free, at random. Other processes' creates of the owner fill
   * runs of their own that this process sees only at its next load; aiming where its view of the owner is least
   * filled (the middle of the largest free run) sends every process with a like view to the same place, and near the
   * end of a fill they kept meeting there.
   */
  jump(): void {
    if (this.full) return;
    // Uniform over the slots believed free (the next free after a random slot would favour those just past a taken
    // run: where another process's run is heading); when few are left, the next free after a random one.
    for (let i = 0; i < 64; i++) {
      const s = randomInt(this.max);
      if (!this.has(s)) {
        this.cursor = s;
        return;
      }
    }
    const from = randomInt(this.max);
    this.cursor = (from < this.span ? this.nextFree(from) : undefined) ?? from;
  }

  /** Takes what a load read: every plant of the owner, and this process's own marks made while it ran. */
  fill(holders: readonly SlotHolder[]): void {
    this.bits.fill(0);
    this.taken = 0;
    this.beyond = 0;
    this.outside.clear();
    this.outsideCount = 0;
    const during = this.duringLoad;
    this.duringLoad = undefined;
    for (const holder of holders) {
      const slot = slotNumber(holder.slot);
      // A duplicate inside slot (left by a dropped index) is one plant too many there: it must move like an outside one.
      if (slot !== undefined && slot < this.max && !(slot < this.span && this.has(slot))) this.mark(slot);
      else {
        this.outsideCount++;
        if (this.outside.size < this.max) this.outside.set(String(holder._id), holder);
      }
    }
    for (const slot of during?.marked ?? []) this.mark(slot);
    for (const slot of during?.freed ?? []) this.unmark(slot);
    this.complete = true;
    this.loadedAt = Date.now();
    this.readFrom = during?.began ?? 0;
    this.collisionsSinceLoad = 0;
    if (this.outsideCount === 0) this.clean = true;
  }

  /** Starts recording marks for a load about to be sent (see `fill`). */
  beginLoad(): void {
    this.duringLoad = { marked: new Set(), freed: new Set(), began: Date.now() };
  }
}

/** Waits for `work` (if any), at most `share` (half) of the time left until `giveUpAt`; its failure is its owner's to report. */
const within = async (work: Promise<void> | undefined, giveUpAt: number, share = 1 / 2): Promise<void> => {
  if (work === undefined) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    work.catch(() => undefined),
    new Promise((resolve) => (timer = setTimeout(resolve, Math.max(0, (giveUpAt - Date.now()) * share)))),
  ]);
  clearTimeout(timer);
};

export interface OwnerSlotsOptions {
  /** Heap bytes the states of all owners may hold together; the least recently used go first. */
  readonly budgetBytes: number;
  /** Least time between two loads of an owner that looks full. */
  readonly fullRecheckMs: number;
}

export const ownerSlots = (store: SlotStore, outside: ReturnType<typeof outsidePlants>, options: OwnerSlotsOptions) => {
  /** Owner -> state and the weight it was counted with, least recently used first. */
  const states = new Map<string, { readonly state: OwnerState; weight: number }>();
  let bytes = 0;
  /**
   * What the states were made under: the slots' generation (indexes.ts counts every rebuild or mend of the slot index)
   * and the epoch of what outside-plants.ts knows. When either moves, every state is dropped.
   */
  let generation = 0;
  let outsideEpoch = 0;

  const evictFor = (owner: string): void => {
    for (const [oldest, old] of states) {
      if (bytes <= options.budgetBytes || oldest === owner) break;
      states.delete(oldest);
      bytes -= old.weight;
    }
  };
  /** Weighs the owner's state again as it stands now (it grows when it learns outside plants). */
  const reweigh = (owner: string, state: OwnerState): void => {
    const entry = states.get(owner);
    if (entry === undefined || entry.state !== state) return;
    bytes += state.bytes - entry.weight;
    entry.weight = state.bytes;
    evictFor(owner);
  };
  const forget = (owner: string): void => {
    const old = states.get(owner);
    if (old === undefined) return;
    states.delete(owner);
    bytes -= old.weight;
  };

  /**
   * The owner's state under `max`, most recently used now; a new one (nothing known yet) when none is held. `room`: it is
   * new and the budget held it without pushing another owner out; `displaced`: it is new and pushed another owner out.
   */
  const stateOf = (owner: string, max: number): { state: OwnerState; room: boolean; displaced: boolean } => {
    const entry = states.get(owner);
    if (entry !== undefined && entry.state.max === max && entry.state.generation === generation) {
      states.delete(owner);
      states.set(owner, entry);
      return { state: entry.state, room: false, displaced: false };
    }
    forget(owner);
    const state = new OwnerState(max, generation);
    // Loaded on first sight only while the budget has room without pushing another owner out (`room`, see `admit`):
    // with more active owners than it holds, loads would only replace each other.
    const room = bytes + state.bytes <= options.budgetBytes;
    states.set(owner, { state, weight: state.bytes });
    bytes += state.bytes;
    evictFor(owner);
    return { state, room, displaced: !room };
  };

  /** Loads the owner into its state; concurrent callers share one load, which outlives the requests waiting on it. */
  const load = (owner: string, state: OwnerState): Promise<void> => {
    state.loading ??= (async () => {
      state.beginLoad();
      state.fill(await store.load(owner, state.max));
      reweigh(owner, state);
    })().finally(() => {
      state.loading = undefined;
    });
    return state.loading;
  };

  /** Loads in the background: a failure leaves the state as it was (a hint), and the next need tries again. */
  const loadSoon = (owner: string, state: OwnerState): void => {
    if (state.loading === undefined) void load(owner, state).catch(() => undefined);
  };

  /**
   * Moves the owner's outside plants into free inside slots, holding the owner's lock so that no two processes move
   * one plant (each would then believe taken the slot it chose, where the other put it). Exactness does not depend on
   * the moves: a plant left outside keeps the owner from being admitted.
   */
  const moveInside = async (owner: string, state: OwnerState, check: () => void): Promise<void> => {
    for (let tries = 0; tries < LOCK_TRIES && !state.clean; tries++) {
      check();
      if (!(await store.lock(owner))) {
        // Another process is moving them: look again shortly (its moves, once done, show in a load).
        await new Promise((resolve) => setTimeout(resolve, randomInt(20, 60)));
        check();
        await load(owner, state);
        continue;
      }
      try {
        await load(owner, state); // under the lock: what it shows outside nobody else is moving
        const moves: Array<{ holder: SlotHolder; slot: number }> = [];
        for (const holder of state.outside.values()) {
          const slot = state.choose();
          if (slot === undefined) break;
          moves.push({ holder, slot });
        }
        if (moves.length === 0) return; // no room inside: the owner keeps at least `max` plants
        check();
        const moved = await store.move(moves.map(({ holder, slot }) => ({ _id: holder._id, slot })));
        moves.forEach(({ holder }, i) => {
          if (moved[i] === true && state.outside.delete(String(holder._id))) state.outsideCount--;
        });
        if (state.outsideCount === 0) state.clean = true;
        reweigh(owner, state);
      } finally {
        await store.unlock(owner).catch(() => undefined);
      }
    }
  };

  /**
   * Makes sure the owner has no outside plant before a create takes an inside slot (see the module's comment). An
   * owner first seen is loaded when the budget has room for it (`loadFirst`: the load shows outside plants too, and
   * gives the count), otherwise only looked at.
   */
  const admit = (owner: string, state: OwnerState, loadFirst: boolean, check: () => void): Promise<void> =>
    (state.admitting ??= (async () => {
      if (!state.complete && !loadFirst && !(await store.hasOutside(owner, state.max))) {
        state.clean = true;
        return;
      }
      if (!state.complete) await load(owner, state);
      if (state.outsideCount > 0) await moveInside(owner, state, check);
    })().finally(() => {
      state.admitting = undefined;
    }));

  /** Whether the state may answer "full" without looking again. */
  const fresh = (state: OwnerState): boolean => state.complete && Date.now() - state.loadedAt < options.fullRecheckMs;

  /**
   * Inserts one plant under the owner's bound `max` (Infinity: none), in the order the port promises: a plant stored
   * under the id is `Exists` whatever the count, then room. `undefined` when concurrent creates kept taking the slots
   * it chose until `giveUpAt` (the caller answers 503; nothing was stored by this call). `slotsGeneration`: the index
   * upkeep's count of slot index rebuilds and mends; when it moved, everything remembered is dropped.
   */
  const insert = async (
    owner: string,
    max: number,
    plant: Plant,
    check: () => void,
    giveUpAt: number,
    slotsGeneration = 0,
  ): Promise<InsertOutcome | undefined> => {
    let known = await outside.before(max, slotsGeneration);
    if (known.sweeping !== undefined && !states.has(owner)) {
      // The sweep, one scan, answers for every owner at once; on FerretDB each look is a scan of its own. Wait for it,
      // within half the time this create has left (then look at this owner alone).
      await within(known.sweeping, giveUpAt);
      check();
      known = await outside.before(max, slotsGeneration);
    }
    if (slotsGeneration !== generation || known.epoch !== outsideEpoch) {
      generation = slotsGeneration;
      outsideEpoch = known.epoch;
      states.clear();
      bytes = 0;
    }
    if (!Number.isFinite(max)) return insertUnbounded(owner, plant, check, giveUpAt);
    const { state, room, displaced } = stateOf(owner, max);
    if (!state.clean && known.risky !== undefined && !known.risky.has(owner)) {
      // The sweep found no outside plant of this owner, and none has come into being since (one bound in force): no
      // look. With room in the budget the owner is loaded all the same: its count, and where its room is, are worth one
      // read per owner and process. That read is waited for within an eighth of the time this create has left (enough
      // for an index read on MongoDB), and goes on in the background beyond: on FerretDB a load is a scan of the
      // collection, and the first creates of 20 owners after a restart, waiting half their time for it, answered 503
      // (9 of 20); slots at random serve them meanwhile. Without room, loads would only push each other out.
      state.clean = true;
      if (room) {
        loadSoon(owner, state);
        await within(state.loading, giveUpAt, 1 / 8);
        check();
      }
    }
    /** The count, when this process has loaded the owner (otherwise it knows only what it stored itself). */
    const counted = (): { count?: number } => (state.complete ? { count: state.count } : {});
    let collisions = 0;
    let triedLast = false;
    /**
     * Slots this create reserved and found refused without being told by which index (FerretDB), since the last lookup
     * of the id read; `covering`: those refused before the lookup under way read, which its answer tells apart.
     */
    const unsure: number[] = [];
    let covering: number[] = [];
    let lastUnsureAt = 0;
    /** The id's lookup, shared by whatever waits for it, and its answer once back. */
    let lookup: Promise<void> | undefined;
    let answer: { readonly stored: Plant | undefined } | undefined;
    /**
     * A lookup in this create found no plant under the id. Later refusals are then taken for other plants' while
     * choosing slots, but never for a 403: an identical create may land meanwhile, and refuse every slot this one tries.
     */
    let idFreeOnce = false;
    const lookUp = (): Promise<void> =>
      (lookup ??= (async () => {
        covering = unsure.splice(0);
        try {
          answer = { stored: await store.find(owner, plant) };
        } catch (e) {
          unsure.unshift(...covering); // not told: the next lookup covers them
          covering = [];
          lookup = undefined;
          throw e;
        }
      })());
    /** What the lookup answered: `Exists` when a plant has the id; otherwise the refusals it covers were slots'. */
    const looked = (): InsertOutcome | undefined => {
      if (answer === undefined) return undefined;
      const { stored } = answer;
      lookup = undefined;
      answer = undefined;
      if (stored !== undefined) {
        // The id refused them, not another plant (those since its read too): free as far as this create knows.
        for (const slot of [...covering, ...unsure]) state.unmark(slot);
        return { _tag: 'Exists', stored, ...counted() };
      }
      covering = [];
      idFreeOnce = true;
      return undefined;
    };
    /** Before a 403: the id is looked up unless a lookup said it free and no refusal since could be the id's. */
    const idTold = async (): Promise<InsertOutcome | undefined> => {
      if (idFreeOnce && unsure.length === 0 && lookup === undefined) return undefined;
      await lookUp();
      return looked();
    };
    for (let round = 0; round < MAX_ROUNDS && Date.now() < giveUpAt; round++) {
      check();
      const found = looked();
      if (found !== undefined) return found;
      // Not known free of outside plants, unless it is known full anyway (kept over a lowered bound).
      if (!state.clean && !(fresh(state) && state.full)) {
        // An owner the sweep named is loaded at once: a look would only say what the sweep said.
        await admit(owner, state, room || known.risky?.has(owner) === true, check);
        if (state.clean) known.risky?.delete(owner);
      }
      // After two refusals this process's view of the owner is behind others' creates: several slots at once, each
      // at random among those believed free. The plant lands in one at most (the unique id), and a round trip to the
      // server (hundreds of ms on a busy FerretDB) is what a create runs out of. Not while refusals may be the id's.
      const slots: number[] = [];
      for (
        let n = collisions >= 2 && (unsure.length === 0 || idFreeOnce) ? PROBES : 1;
        state.clean && slots.length < n;
      ) {
        if (slots.length > 0) state.jump();
        const slot = state.choose();
        if (slot === undefined) break;
        slots.push(slot);
      }
      const reserved = slots.length > 0;
      if (!reserved) {
        // Looks full (or keeps outside plants it cannot move in). A full owner's room freed by a delete is in its last
        // slot (see `freed`): try that once.
        if (state.clean && !triedLast && state.max <= BITSET_SLOTS) {
          triedLast = true;
          slots.push(max - 1);
        } else {
          const found = await idTold();
          if (found !== undefined) return found;
          const refused = { _tag: 'OwnerFull', count: state.count } as const;
          if (fresh(state) && (state.full || !state.clean)) return refused;
          check();
          if (state.complete && (state.full || !state.clean)) {
            // Loaded, but over fullRecheckMs ago: look again, within half the time this create has left; a load slower
            // than that (a busy server) leaves the refusal on what was loaded before, and runs on for the next ones.
            loadSoon(owner, state);
            await within(state.loading, giveUpAt);
            if (!fresh(state)) return refused;
            continue;
          }
          await load(owner, state);
          continue;
        }
      }
      check();
      const attempts = await Promise.allSettled(slots.map((slot) => store.insert(owner, plant, slot)));
      const landed = attempts.findIndex((a) => a.status === 'fulfilled' && a.value === 'inserted');
      if (landed >= 0) {
        state.mark(slots[landed] as number); // (a full owner's last slot was not reserved)
        for (const [i, a] of attempts.entries()) {
          const slot = slots[i] as number;
          // A refusal beside it that names no index may have been this very plant's id: believed free again.
          if (a.status === 'fulfilled' && a.value === 'taken') state.unmark(slot);
          // A probe that failed beside it: its slot stays marked, a guess, so the next create that finds the owner
          // full looks again rather than answer 403 from it.
          if (a.status === 'rejected') state.loadedAt = 0;
          // Stored twice: only while the (owner, id) index is missing (dropped, not yet noticed: Index drift). Should
          // this delete fail, the create answers 503 and the copy stays, as any plant stored in that window does.
          if (i !== landed && a.status === 'fulfilled' && a.value === 'inserted') {
            await store.unstore(owner, plant, slot);
            state.unmark(slot);
          }
        }
        return { _tag: 'Inserted', ...counted() };
      }
      const failed = attempts.find((a) => a.status === 'rejected');
      if (failed !== undefined) {
        // Whether the plant landed is unknown: its slots stay marked taken (never fewer plants counted than stored),
        // and the next create that finds the owner full looks again rather than answer 403 from this guess.
        state.loadedAt = 0;
        throw failed.reason;
      }
      for (const [i, a] of attempts.entries()) {
        // Refused: by another plant in that slot, or (FerretDB does not say which index refused) perhaps by the id.
        if (a.status === 'fulfilled' && a.value === 'taken' && reserved) {
          unsure.push(slots[i] as number);
          lastUnsureAt = Date.now();
        }
        collisions++;
        state.collisionsSinceLoad++;
      }
      if (!reserved) {
        // The last slot, tried as a full owner's room: the id is looked up before anything else.
        state.mark(max - 1);
        if (attempts[0]?.status === 'fulfilled' && attempts[0].value === 'taken') {
          const found = await idTold();
          if (found !== undefined) return found;
        }
        continue;
      }
      if (collisions < 2) {
        // Once, another slot: an owner well below its bound rarely refuses two.
        state.jump();
        continue;
      }
      // Two refusals or more in this create. When this process knew nothing of the owner, loaded it a while ago, or
      // has seen others take many slots since, it loads the owner again, in the background: on FerretDB a load is a
      // scan of the collection, seconds under load, and creates that waited for it ran out of time while slots at
      // random would have served (filling an owner across 3 processes: 2 answered 503 without the wait, 23 waiting
      // after 8 refusals, 60 after 4). Slots found taken meanwhile are marked, and an owner believed full is answered
      // as below. It waits for the load (within half the time it has left) only after 4 refusals of an owner it never
      // loaded: it knows nothing of the owner's fill then.
      // A state this create made by pushing another owner out (more active owners than the budget holds) is not loaded
      // before 4 refusals: it is likely pushed out again before the owner's next create here, and on FerretDB each load
      // is a scan of the collection (round-robin over 8 times the owners held: 4 to 8 loads a round, each 0.1 to 0.3 s
      // of FerretDB's time, for states gone before they served again).
      const transient = displaced && !state.complete && collisions < 4;
      if (!transient && (!state.complete || !fresh(state) || state.collisionsSinceLoad >= RELOAD_AFTER_COLLISIONS)) {
        loadSoon(owner, state);
      }
      if (!state.complete && collisions >= 4) {
        check();
        await within(state.loading, giveUpAt);
      }
      if (unsure.length > 0) {
        // Refusals without the index named (FerretDB): a load that began after them tells which were another plant's
        // slots (one under way at a refusal shows this create's own mark of that slot). One that shows a refused slot
        // free points at the id, as do 2 refusals not told apart: then the id is looked up (waited for within half the
        // time left; an identical retry or a 409 costs 2 inserts and a find). Once a lookup said no plant has the id,
        // the slots are chosen as if later refusals were other plants', without another lookup per refusal; a 403
        // still needs one (`idTold`).
        const told = state.complete && state.readFrom > lastUnsureAt;
        if (told && !unsure.some((s) => !state.has(s))) unsure.length = 0;
        else if (!idFreeOnce) {
          const asked = lookUp();
          asked.catch(() => undefined);
          await within(asked, giveUpAt);
          const found = looked();
          if (found !== undefined) return found;
        }
      }
      state.jump();
    }
    // Out of time. Believed full on a load that no failed insert put in doubt, the id looked up and no refusal since
    // possibly its: refused on that load, as above when a reload is too slow. Otherwise 503.
    const found = looked();
    if (found !== undefined) return found;
    return state.complete && state.full && state.loadedAt > 0 && idFreeOnce && unsure.length === 0
      ? { _tag: 'OwnerFull', count: state.count }
      : undefined;
  };

  /** No bound: a random outside slot, from a space where two creates practically never meet. */
  const insertUnbounded = async (
    owner: string,
    plant: Plant,
    check: () => void,
    giveUpAt: number,
  ): Promise<InsertOutcome | undefined> => {
    // A state of this owner would not know of this outside plant: it looks again when a bound next applies.
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

  /**
   * A plant of the owner in `slot` was deleted through this process: its room is free at once here. When this
   * process believed the owner full (or one short of it), the plant in the last inside slot moves into the one freed, so that any process
   * finds the room where it looks first (see `insert`). `check` stops the move once the request's deadline passed.
   */
  const freed = async (owner: string, slot: unknown, check: () => void): Promise<void> => {
    const state = states.get(owner)?.state;
    if (state === undefined || state.generation !== generation) return;
    const n = slotNumber(slot);
    // An outside plant may or may not be in what was loaded: look again rather than guess the count.
    if (n === undefined || n >= state.max) return forget(owner);
    const last = state.max - 1;
    // Full, or one short of it as far as this process knows (another may have filled it since): worth the move.
    const nearlyFull = state.taken + state.beyond + 1 >= state.max;
    state.unmark(n);
    if (!nearlyFull || n === last || state.max > BITSET_SLOTS) return;
    check();
    const moved = await store.compact(owner, last, n);
    if (moved !== 'empty') state.mark(n);
    if (moved !== 'taken') state.unmark(last);
  };

  return { insert, freed, heldBytes: () => bytes };
};
