import { randomInt } from 'node:crypto';
import { ObjectId, type Collection, type Document, type WriteConcernSettings } from 'mongodb';
import { isDuplicateKey, isWriteConflict } from './mongodb-errors.js';

/**
 * The per-owner bound on MongoDB, resting only on what FerretDB also guarantees: a unique index is enforced atomically
 * (single-document updates and transactions are not, there), so whatever must be exact rests on the unique index on
 * `{owner, slot}`, and everything this process remembers is a hint that the index corrects.
 *
 * Every plant document holds a `slot`, unique per owner. Under a bound `max` the slots [0, max) are *inside*; every
 * other slot is *outside*: plants created without a bound take a random slot in [2^48, 2^49), plants kept over a
 * lowered bound hold slots at or above it, and plants mended by the index upkeep (indexes.ts) get outside slots. A
 * create under a bound only ever takes an inside slot, so the unique index alone makes more than `max` inside plants
 * impossible, whatever the races between requests and processes. Outside plants count too.
 *
 * **Whether an owner may have outside plants** is known without reading the owner: outside plants only come into being
 * through a few transitions, and each one first leaves a *marker* in the small `plants_markers` collection (inserted by
 * `_id`, atomic on every server): `bound:<n>` before a process's first create under the bound n, `unbounded` before its
 * first create without one, `mended` before the index upkeep gives any plant an outside slot (`markMended`), and
 * `legacy` when a process finds plants stored before markers existed. Under a bound `max`, an owner may have outside
 * plants only if a marker says so (`unbounded`, `mended`, `legacy`, or a `bound:<n>` with n > max): the *risk*. The
 * markers are read before the first create of an owner this process holds no state for, unless read less than
 * `MARKER_WINDOW_MS` before (one `find` of a few documents, shared by the creates that start meanwhile); a process
 * waits `MARKER_WINDOW_MS` after a marker before the first write it covers (see `declare`).
 *
 * Without risk, a create picks a free inside slot and inserts (the fast path, no read). Under risk, an owner is first
 * loaded (its `_id`s and slots, one `find`) and its outside plants moved into free inside slots (`updateOne`, one each;
 * the unique index arbitrates a move as it does an insert); a create is admitted only once the owner has no outside
 * plant left, as it was loaded. Why that is exact across processes: every outside plant that exists came after its
 * marker, so it was there to be loaded by a process that read the marker first. An owner whose outside plants cannot
 * all move in keeps at least `max` plants and is refused.
 *
 * **Where a free slot is**: per owner, a bitset of the inside slots this process knows taken (`max` bits: 1,250 bytes
 * at 10,000) and a cursor. Slots are taken in order from a random start, so that processes filling one owner at once
 * take runs of their own and meet only at the runs' ends; a slot found taken (a duplicate key) is marked and the
 * cursor jumps to a random place. After 4 such collisions in one create the owner is loaded in the background. A slot
 * freed by a delete in this process is cleared at once; a delete in another process leaves a *hint* (the slot, in the
 * owner's document of `plants_freed`, read by `_id`), which a process reads when the owner looks full to it. An owner
 * that still looks full is refused (403) only after a load of the owner at most `fullRecheckMs` old (so a lost hint,
 * or a plant moved twice by two processes, costs a load, never a wrong 403 for longer than that).
 *
 * The states of all owners live in an LRU weighed in bytes as they stand (the bitset, the outside plants remembered,
 * a fixed overhead), never above `budgetBytes`.
 */

/** The first outside slot of a plant created without a bound: far above any bound (`MAX_PLANTS_PER_OWNER`). */
export const OUTSIDE_FROM = 2 ** 48;
/** A fresh outside slot: random in [2^48, 2^49), so that two of them practically never meet. */
export const outsideSlot = (): number => OUTSIDE_FROM + randomInt(2 ** 48 - 1);

/** The collections beside `plants`: the markers of transitions, and the hints of freed slots (one document per owner). */
export const MARKERS = 'plants_markers';
export const FREED = 'plants_freed';

/**
 * What the index upkeep (indexes.ts) must do before it gives any plant an outside slot (mending plants without a slot
 * or sharing one): mark it, so that every process treats every owner as one that may hold outside plants. Each mend
 * inserts a marker of its own (`mended:<ObjectId>`; an insert is atomic on every server, an upsert is not), so that
 * processes holding states of owners see a new one and drop them.
 */
export const markMended = async (markers: Collection<Document>, writeConcern: WriteConcernSettings): Promise<void> => {
  await markers.insertOne({ _id: `mended:${new ObjectId().toHexString()}` as unknown as ObjectId }, { writeConcern });
  // Every process's creates from now on use markers read after this one (see `markersAsOf`).
  await new Promise((resolve) => setTimeout(resolve, MARKER_WINDOW_MS));
};

/** How long a read of the markers serves creates, and how long a write waits after its marker (see `declare`). */
export const MARKER_WINDOW_MS = 200;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Rounds of "choose a free slot, insert into it" before a create gives up as contended (the caller answers 503). */
const MAX_ROUNDS = 64;
/** Slots lost to other processes within one create before the owner is loaded (in the background). */
const LOAD_AFTER_COLLISIONS = 4;
/**
 * Heap bytes of an owner's state besides its bitset's 1 bit a slot (the state, its sets, the bitset's buffer, the LRU
 * entry, the owner's name), and of one outside plant remembered: measured with `bench/slots-memory.ts` (about 2,300
 * to 2,430 bytes an owner at a quota of 10,000, of which 1,250 the bits), rounded up.
 */
export const STATE_BYTES = 1200;
export const OUTSIDE_BYTES = 120;
/** Hints of freed slots kept per owner: the slot's number modulo this picks its place (a newer one replaces it). */
const HINT_PLACES = 32;

/** How an attempt to insert into a slot ended; `taken` when the store did not say which unique index refused it. */
export type SlotAttempt = 'inserted' | 'slot-taken' | 'taken';

/**
 * Which unique index refused an insert, from the key pattern of the duplicate-key error: MongoDB names it
 * (`keyPattern`); FerretDB does not, so there the caller must look whether the id is stored.
 */
export const attemptOfKeyPattern = (pattern: unknown): SlotAttempt =>
  typeof pattern === 'object' && pattern !== null && 'slot' in pattern && !('id' in pattern) ? 'slot-taken' : 'taken';

/** One stored plant as a load reads it: its `_id` (to move it) and its slot, if it has a usable one. */
export interface SlotHolder {
  readonly _id: unknown;
  readonly slot?: unknown;
}

/** A freed slot as its hint records it: the slot and when (ms since the epoch, the deleting process's clock). */
export interface Hint {
  readonly slot: number;
  readonly at: number;
}

/** What the slots need from the server; each function is one command. `mongoSlotStore` is the real one. */
export interface SlotStore {
  /** The owner's plants' `_id` and `slot`, in one round trip for an owner of at most `max` plants. */
  readonly load: (owner: string, max: number) => Promise<readonly SlotHolder[]>;
  /** Inserts the document (the plant's fields) with that owner and slot. */
  readonly insert: (owner: string, fields: Document, slot: number) => Promise<SlotAttempt>;
  /** The document stored under that owner and id (the plant's fields), if any. */
  readonly find: (owner: string, id: bigint) => Promise<Document | undefined>;
  /** Moves the plant (by `_id`) to the slot; false when the slot is taken. */
  readonly move: (_id: unknown, to: number) => Promise<boolean>;
  /** Every marker's `_id`. */
  readonly markers: () => Promise<ReadonlyArray<{ readonly _id: unknown }>>;
  /** Inserts a marker (nothing when it exists). */
  readonly mark: (id: string) => Promise<void>;
  /** Whether the collection holds any plant. */
  readonly anyPlant: () => Promise<boolean>;
  /** Records that a slot of the owner was freed. */
  readonly hint: (owner: string, slot: number) => Promise<unknown>;
  /** The owner's recorded freed slots. */
  readonly hints: (owner: string) => Promise<readonly Hint[]>;
}

const slotNumber = (slot: unknown): number | undefined => {
  const n = typeof slot === 'bigint' ? Number(slot) : slot;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
};

/**
 * What this process knows of one owner's slots under one bound: which inside slots are taken (a bitset; a bit set is
 * a slot taken or being taken here, or seen taken), the outside plants last loaded, and where to look next.
 */
export class OwnerState {
  readonly bits: Uint8Array;
  /** Bits set. */
  known = 0;
  cursor: number;
  readonly outside = new Map<string, SlotHolder>();
  outsideCount = 0;
  /** When the owner was last loaded (0: never); a 403 rests on a load at most `fullRecheckMs` old. */
  loadedAt = 0;
  /** Hints recorded after this were not applied yet. */
  hintsSeen = 0;
  /** The markers' version under which this owner was found without outside plants (see `risky`). */
  checkedVersion = -1;
  /** The markers' version of the last load. */
  loadedVersion = -1;
  /** Hints applied already (`slot@at`). */
  readonly appliedHints = new Set<string>();
  /** Slots being inserted into now: kept set when a load replaces the bits. */
  readonly pending = new Set<number>();
  loading: Promise<void> | undefined;
  admitting: Promise<void> | undefined;

  constructor(readonly max: number) {
    this.bits = new Uint8Array(Math.ceil(max / 8));
    this.cursor = max > 0 ? randomInt(max) : 0;
    // Hints older than this state speak of slots freed before it knew any taken.
    this.hintsSeen = Date.now();
  }

  static of(max: number, holders: readonly SlotHolder[]): OwnerState {
    const state = new OwnerState(max);
    state.fill(holders);
    return state;
  }

  has(slot: number): boolean {
    return ((this.bits[slot >> 3] as number) & (1 << (slot & 7))) !== 0;
  }
  set(slot: number): void {
    if (this.has(slot)) return;
    this.bits[slot >> 3] = (this.bits[slot >> 3] as number) | (1 << (slot & 7));
    this.known++;
  }
  clear(slot: number): void {
    if (!this.has(slot)) return;
    this.bits[slot >> 3] = (this.bits[slot >> 3] as number) & ~(1 << (slot & 7));
    this.known--;
  }

  /** Heap bytes this state holds as it stands. */
  get bytes(): number {
    return STATE_BYTES + this.bits.byteLength + (this.outside.size + this.appliedHints.size) * OUTSIDE_BYTES;
  }

  /** The owner's plants as this process knows them. */
  get count(): number {
    return this.known + this.outsideCount;
  }

  /** Replaces what the state knows with what a load read (slots being inserted into now stay taken). */
  fill(holders: readonly SlotHolder[]): void {
    this.bits.fill(0);
    this.known = 0;
    this.outside.clear();
    this.outsideCount = 0;
    for (const holder of holders) {
      const slot = slotNumber(holder.slot);
      // A duplicate inside slot (left by a dropped index) is one plant too many there: it must move like an outside one.
      if (slot !== undefined && slot < this.max && !this.has(slot)) this.set(slot);
      else {
        this.outsideCount++;
        if (this.outside.size < this.max) this.outside.set(String(holder._id), holder);
      }
    }
    for (const slot of this.pending) this.set(slot);
  }

  /** Takes the next free inside slot from the cursor on (wrapping), or none when every one is known taken. */
  reserve(): number | undefined {
    if (this.known >= this.max) return undefined;
    let s = this.cursor;
    for (let i = 0; i < this.max; i++) {
      if ((this.bits[s >> 3] as number) === 0xff) {
        const next = (s | 7) + 1; // a whole byte taken: skip it
        i += next - s - 1;
        s = next >= this.max ? 0 : next;
        continue;
      }
      if (!this.has(s)) {
        this.set(s);
        this.cursor = s + 1 >= this.max ? 0 : s + 1;
        return s;
      }
      s = s + 1 >= this.max ? 0 : s + 1;
    }
    return undefined;
  }

  /** Another process holds the run the cursor is in: look elsewhere. */
  jump(): void {
    this.cursor = randomInt(this.max);
  }
}

export interface OwnerSlotsOptions {
  /** Heap bytes the states of all owners may hold together; the least recently used go first. */
  readonly budgetBytes: number;
  /** Longest a 403 may rest on an old load of the owner (see the module's comment). */
  readonly fullRecheckMs: number;
}

/** The outcome of an insert; `stored` is the stored document's plant fields, for the caller to decode. */
export type SlotOutcome =
  | { readonly _tag: 'Inserted'; readonly count?: number }
  | { readonly _tag: 'Exists'; readonly stored: Document; readonly count?: number }
  | { readonly _tag: 'OwnerFull'; readonly count: number };

/** Which markers put outside plants possibly in the way of the bound `max`. */
const risky = (ids: ReadonlySet<string>, max: number): boolean => {
  for (const id of ids) {
    if (id === 'unbounded' || id === 'legacy' || id.startsWith('mended:')) return true;
    if (id.startsWith('bound:') && Number(id.slice(6)) > max) return true;
  }
  return false;
};

export const ownerSlots = (store: SlotStore, options: OwnerSlotsOptions) => {
  /** Owner -> state and its weight when last weighed, least recently used first. */
  const states = new Map<string, { state: OwnerState; weight: number }>();
  let bytes = 0;

  /** The markers as last read, and a version that changes whenever they do. */
  let markerIds = new Set<string>();
  let markerKey = '';
  let version = 0;
  /** The `mended:` markers as last read. */
  let mendedAt = '';
  /** Markers this process has inserted (so as to insert each once). */
  const marked = new Set<string>();

  const weigh = (owner: string): void => {
    const entry = states.get(owner);
    if (entry === undefined) return;
    const weight = entry.state.bytes;
    bytes += weight - entry.weight;
    entry.weight = weight;
    for (const [oldest, old] of states) {
      if (bytes <= options.budgetBytes || oldest === owner) break;
      states.delete(oldest);
      bytes -= old.weight;
    }
  };
  const remember = (owner: string, state: OwnerState): void => {
    forget(owner);
    states.set(owner, { state, weight: 0 });
    weigh(owner);
  };
  const forget = (owner: string): void => {
    const old = states.get(owner);
    if (old === undefined) return;
    states.delete(owner);
    bytes -= old.weight;
  };

  const readMarkers = async (): Promise<void> => {
    let docs = await store.markers();
    if (!docs.some((d) => d._id === 'init')) {
      // The first start over this collection: plants already there came from a version without markers, and may be
      // outside ones. (An empty collection starts clean.)
      if (await store.anyPlant()) await store.mark('legacy');
      await store.mark('init');
      docs = await store.markers();
    }
    const key = docs
      .map((d) => String(d._id))
      .sort()
      .join(',');
    if (key === markerKey) return;
    markerKey = key;
    markerIds = new Set([...marked, ...docs.map((d) => String(d._id))]);
    version++;
    // A mend moved plants out of inside slots that states here believe taken: start every owner afresh.
    const mended = docs
      .map((d) => String(d._id))
      .filter((id) => id.startsWith('mended:'))
      .sort()
      .join(',');
    if (mended !== mendedAt) forgetAll();
    mendedAt = mended;
  };
  /** The last read of the markers that completed, and the one under way, with when each started. */
  let lastRead: number | undefined;
  let reading: { readonly at: number; readonly done: Promise<void> } | undefined;
  const startRead = (): Promise<void> => {
    const at = performance.now();
    const done = readMarkers()
      .then(() => {
        lastRead = Math.max(lastRead ?? at, at);
      })
      .finally(() => {
        if (reading?.at === at) reading = undefined;
      });
    reading = { at, done };
    return done;
  };
  /**
   * Markers read by a read that started less than `MARKER_WINDOW_MS` before `now` (the start of a create): a marker
   * acknowledged before that read started is in it, and the writes it covers come at least `MARKER_WINDOW_MS` after
   * it (see `declare`), so every outside plant stored before the create started has its marker in what it uses.
   * Creates share reads: about one a `MARKER_WINDOW_MS` per process.
   */
  const markersAsOf = (now: number): Promise<void> => {
    if (lastRead !== undefined && lastRead > now - MARKER_WINDOW_MS) return Promise.resolve();
    if (reading !== undefined && reading.at > now - MARKER_WINDOW_MS) return reading.done;
    return startRead();
  };

  /** Which markers `id` puts at risk: their processes must know of it before a write it covers is stored. */
  const endangers = (id: string, other: string): boolean => {
    if (!other.startsWith('bound:')) return false;
    if (id === 'unbounded') return true;
    return id.startsWith('bound:') && Number(other.slice(6)) < Number(id.slice(6));
  };
  const declaring = new Map<string, Promise<void>>();
  /**
   * Inserts the marker before this process's first write it covers. When a process with a bound it endangers exists
   * (its own marker is there), the write waits `MARKER_WINDOW_MS` after the marker: every process's creates from then
   * on use markers read after it (see `markersAsOf`). Once per marker and process.
   */
  const declare = (id: string): Promise<void> => {
    let pending = declaring.get(id);
    if (pending === undefined) {
      pending = (async () => {
        await store.mark(id);
        marked.add(id);
        if (!markerIds.has(id)) {
          markerIds.add(id);
          version++;
        }
        await startRead();
        if ([...markerIds].some((other) => endangers(id, other))) await sleep(MARKER_WINDOW_MS);
      })();
      pending.catch(() => declaring.delete(id));
      declaring.set(id, pending);
    }
    return pending;
  };

  /** Loads the owner's slots into its state; concurrent creates share one load, which outlives the requests. */
  const load = (owner: string, state: OwnerState): Promise<void> => {
    state.loading ??= (async () => {
      const started = Date.now();
      const seen = version;
      state.fill(await store.load(owner, state.max));
      state.loadedAt = Date.now();
      state.loadedVersion = seen;
      state.hintsSeen = Math.max(state.hintsSeen, started);
      if (state.outsideCount === 0) state.checkedVersion = seen;
      weigh(owner);
    })().finally(() => {
      state.loading = undefined;
    });
    return state.loading;
  };

  /**
   * Moves the owner's loaded outside plants into free inside slots. Exactness does not depend on the moves: a plant
   * left outside keeps the owner from being admitted. A move that went through is not proof that its slot is the
   * plant's (another process may move the same plant again, FerretDB's updates not being atomic), so a 403 after moves
   * always rests on a new load (`loadedAt` cleared).
   */
  const moveInside = (owner: string, state: OwnerState): Promise<void> => {
    state.admitting ??= (async () => {
      const seen = state.loadedVersion;
      for (let round = 0; round < 4 && state.outside.size > 0; round++) {
        const moves: Array<{ holder: SlotHolder; slot: number }> = [];
        for (const holder of state.outside.values()) {
          const slot = state.reserve();
          if (slot === undefined) break;
          moves.push({ holder, slot });
        }
        if (moves.length === 0) break;
        const moved = await Promise.all(moves.map(({ holder, slot }) => store.move(holder._id, slot)));
        moves.forEach(({ holder }, i) => {
          if (moved[i] === true && state.outside.delete(String(holder._id))) state.outsideCount--;
        });
        state.loadedAt = 0;
        // A slot was taken: by another plant, or by this very plant moved by another process. Only a load tells.
        if (moved.some((m) => !m)) await load(owner, state);
      }
      if (state.outsideCount === 0) state.checkedVersion = seen;
      weigh(owner);
    })().finally(() => {
      state.admitting = undefined;
    });
    return state.admitting;
  };

  /**
   * Applies the newest hint of a slot freed since the last look; whether it cleared a slot. Only the newest: an older
   * one was most likely taken already by the create it was left for (trying it would cost an insert in vain); a free
   * slot whose hint is skipped is found by the load a 403 rests on.
   */
  const applyHints = async (owner: string, state: OwnerState): Promise<boolean> => {
    let newest: Hint | undefined;
    for (const hint of await store.hints(owner)) {
      // Those applied already (of the same millisecond as the last look) are remembered.
      const key = `${hint.slot}@${hint.at}`;
      if (hint.at < state.hintsSeen || state.appliedHints.has(key)) continue;
      if (newest === undefined || hint.at > newest.at) newest = hint;
    }
    if (newest === undefined) return false;
    state.hintsSeen = newest.at;
    if (state.appliedHints.size >= 2 * HINT_PLACES) state.appliedHints.clear();
    state.appliedHints.add(`${newest.slot}@${newest.at}`);
    if (newest.slot >= state.max || !state.has(newest.slot) || state.pending.has(newest.slot)) return false;
    state.clear(newest.slot);
    state.cursor = newest.slot;
    return true;
  };

  /**
   * Inserts one plant under the owner's bound `max` (Infinity: none), in the order the port promises: a plant stored
   * under the id is `Exists` whatever the count, then room. `undefined` when concurrent creates kept taking the slots
   * it chose until `giveUpAt` (the caller answers 503; nothing was stored by this call).
   */
  const insert = async (
    owner: string,
    max: number,
    id: bigint,
    fields: Document,
    check: () => void,
    giveUpAt: number,
  ): Promise<SlotOutcome | undefined> => {
    const startedAt = performance.now();
    if (!Number.isFinite(max)) return insertUnbounded(owner, id, fields, check, giveUpAt);
    await declare(`bound:${max}`);
    let entry = states.get(owner);
    if (entry === undefined || entry.state.max !== max) {
      // An owner this process holds nothing of: the markers as of now say whether it may have outside plants.
      check();
      await markersAsOf(startedAt);
      entry = states.get(owner);
      if (entry === undefined || entry.state.max !== max) {
        remember(owner, new OwnerState(max));
        entry = states.get(owner) as { state: OwnerState; weight: number };
      }
    } else {
      states.delete(owner); // most recently used now
      states.set(owner, entry);
    }
    const state = entry.state;
    let collisions = 0;
    let lookedUp = false;
    let hintsRead = false;
    let sinceLookup = 0;
    for (let round = 0; round < MAX_ROUNDS && Date.now() < giveUpAt; round++) {
      check();
      if (risky(markerIds, max) && state.checkedVersion !== version) {
        // Outside plants may exist: load the owner (once per markers' version, and again at most once per
        // fullRecheckMs while some cannot move in) and move them in first.
        if (state.loadedVersion !== version || Date.now() - state.loadedAt >= options.fullRecheckMs) {
          await load(owner, state);
          check();
        }
        if (state.outsideCount > 0) await moveInside(owner, state);
        if (state.outsideCount > 0) {
          // Outside plants that cannot move in: the owner keeps at least `max`.
          if (!lookedUp) {
            lookedUp = true;
            const stored = await store.find(owner, id);
            if (stored !== undefined) return { _tag: 'Exists', stored, count: state.count };
          }
          return { _tag: 'OwnerFull', count: Math.max(state.count, max) };
        }
        if (state.checkedVersion !== version) continue; // the markers changed meanwhile: look again
      }
      const slot = state.reserve();
      if (slot === undefined) {
        // Looks full. A slot freed through another process left a hint; then the plant stored under the id answers
        // first (looked up once per call); then a 403 only on a load at most fullRecheckMs old.
        if (!hintsRead) {
          hintsRead = true;
          check();
          if (await applyHints(owner, state)) continue;
        }
        if (!lookedUp) {
          lookedUp = true;
          check();
          const stored = await store.find(owner, id);
          if (stored !== undefined) return { _tag: 'Exists', stored, count: state.count };
        }
        if (Date.now() - state.loadedAt < options.fullRecheckMs) {
          return { _tag: 'OwnerFull', count: Math.max(state.count, max) };
        }
        check();
        await load(owner, state);
        continue;
      }
      check();
      let attempt: SlotAttempt;
      state.pending.add(slot);
      try {
        attempt = await store.insert(owner, fields, slot);
      } catch (e) {
        // Whether the plant landed is unknown: its slot stays marked taken (never fewer plants counted than stored),
        // and the next create that finds the owner full looks again at once, not answer 403 from this guess.
        state.loadedAt = 0;
        throw e;
      } finally {
        state.pending.delete(slot);
      }
      if (attempt === 'inserted') return { _tag: 'Inserted', count: state.count };
      if (attempt === 'taken' && (sinceLookup++ % LOAD_AFTER_COLLISIONS === 0 || !lookedUp)) {
        // Refused by the id or the slot (FerretDB does not say which): a stored plant answers. Looked up at the first
        // such refusal and every 4th after it (a concurrent create of the same id may land in between).
        lookedUp = true;
        const stored = await store.find(owner, id);
        if (stored !== undefined) {
          state.clear(slot);
          return { _tag: 'Exists', stored, count: state.count };
        }
      }
      // Another process holds that slot, and likely the run around it: it stays marked taken, and the cursor jumps.
      state.jump();
      // Under risk, processes move plants: one moved twice (FerretDB's updates are not atomic) leaves a slot free that
      // a load just before believed taken. A slot found taken that the last load believed free says the load may be
      // such a picture: a 403 then rests on a new one.
      if (risky(markerIds, max)) state.loadedAt = 0;
      // Many collisions: the owner is fuller than this process knows. Load it in the background (the create goes on
      // probing meanwhile, so that a slow load does not hold it), and wait for the load only past 12 in a row.
      if (++collisions % LOAD_AFTER_COLLISIONS === 0) {
        const loading = load(owner, state);
        if (collisions >= 3 * LOAD_AFTER_COLLISIONS && state.loadedAt === 0) await loading;
        else void loading.catch(() => undefined);
      }
    }
    return undefined;
  };

  /** No bound: a random outside slot, from a space where two creates practically never meet. */
  const insertUnbounded = async (
    owner: string,
    id: bigint,
    fields: Document,
    check: () => void,
    giveUpAt: number,
  ): Promise<SlotOutcome | undefined> => {
    await declare('unbounded');
    // A state of this owner would not know of this plant; it is loaded again when a bound next applies.
    forget(owner);
    for (let round = 0; round < MAX_ROUNDS && Date.now() < giveUpAt; round++) {
      check();
      const attempt = await store.insert(owner, fields, outsideSlot());
      if (attempt === 'inserted') return { _tag: 'Inserted' };
      if (attempt === 'taken') {
        const stored = await store.find(owner, id);
        if (stored !== undefined) return { _tag: 'Exists', stored };
      }
    }
    return undefined;
  };

  /**
   * A plant of the owner in that slot was deleted through this process: its room is free here at once, and a hint
   * tells the other processes (for a slot that may be inside some bound).
   */
  const freed = async (owner: string, slot: unknown): Promise<void> => {
    const n = slotNumber(slot);
    const state = states.get(owner)?.state;
    // An outside plant may or may not be in what was loaded: load again rather than guess the count.
    if (state !== undefined && (n === undefined || n >= state.max)) forget(owner);
    if (n === undefined || n >= OUTSIDE_FROM) return;
    const clearHere = () => {
      if (state === undefined || states.get(owner)?.state !== state || n >= state.max) return;
      state.clear(n);
      state.cursor = n;
    };
    // An owner with room: the slot is free here at once. An owner that looked full: the slot is left to the hint,
    // which every process (this one too) reads when the owner looks full, newest first; cleared here, it would be
    // tried again after another process took it.
    if (state !== undefined && state.known < state.max) clearHere();
    try {
      await store.hint(owner, n);
    } catch (e) {
      clearHere(); // no hint: this process at least knows
      throw e;
    }
  };

  /** Drops every state (after a mend, or a new marker). */
  const forgetAll = (): void => {
    states.clear();
    bytes = 0;
  };

  return {
    insert,
    freed,
    /** Drops every state (the slot index was rebuilt: the counts they hold may be stale). */
    forgetAll,
    /** Reads the markers again (the repository's periodic check). */
    refresh: startRead,
    /** Heap bytes the states hold, as weighed, and how many owners they are of. */
    usage: () => ({ bytes, owners: states.size }),
  };
};

export interface SlotCollections {
  readonly plants: Collection<Document>;
  /** `plants` on a pool of its own, for loads (see the repository's `slotLoadTimeoutMs`). */
  readonly loadPlants: () => Promise<Collection<Document>>;
  readonly markers: Collection<Document>;
  readonly freed: Collection<Document>;
  readonly writeConcern: WriteConcernSettings;
  readonly maxTimeMS: number;
  readonly loadTimeoutMs: number;
  /** The plant fields a lookup returns (the repository's projection). */
  readonly plantFields: Document;
}

/** Tries of one slot move that collides with another process's (see `move`). */
const MOVE_ATTEMPTS = 5;

/** The slots' commands on MongoDB. */
export const mongoSlotStore = (c: SlotCollections): SlotStore => {
  const { writeConcern, maxTimeMS } = c;
  return {
    load: async (owner, max) =>
      (await c.loadPlants())
        // One reply for an owner within its bound (no getMore); an owner above it (a lowered bound) takes more.
        .find(
          { owner },
          { projection: { _id: 1, slot: 1 }, batchSize: Math.min(max + 1, 100_000), maxTimeMS: c.loadTimeoutMs },
        )
        .toArray(),
    insert: async (owner, fields, slot) => {
      try {
        await c.plants.insertOne({ _id: new ObjectId(), owner, slot, ...fields }, { writeConcern, maxTimeMS });
        return 'inserted';
      } catch (e) {
        if (isDuplicateKey(e)) return attemptOfKeyPattern((e as { keyPattern?: unknown }).keyPattern);
        throw e;
      }
    },
    find: async (owner, id) =>
      (await c.plants.findOne({ owner, id }, { projection: c.plantFields, maxTimeMS })) ?? undefined,
    move: async (_id, to) => {
      for (let attempt = 1; ; attempt++) {
        try {
          // Not conditioned on the slot it was loaded in: FerretDB's updates are not atomic, so a condition would not
          // keep two processes from moving one plant; `moveInside` does not depend on it.
          await c.plants.updateOne({ _id: _id as ObjectId }, { $set: { slot: to } }, { writeConcern, maxTimeMS });
          return true; // moved, or deleted meanwhile: either way no longer outside
        } catch (e) {
          if (isDuplicateKey(e)) return false;
          // Collided with another process's move at that moment (on FerretDB/PostgreSQL a deadlock, which PostgreSQL
          // settles by failing one side): nothing changed, and the same move sent again goes through.
          if (!isWriteConflict(e) || attempt >= MOVE_ATTEMPTS) throw e;
          await new Promise((resolve) => setTimeout(resolve, randomInt(5, 30)));
        }
      }
    },
    markers: () => c.markers.find({}, { projection: { _id: 1 }, maxTimeMS }).toArray(),
    mark: async (id) => {
      try {
        await c.markers.insertOne({ _id: id as unknown as ObjectId }, { writeConcern, maxTimeMS });
      } catch (e) {
        if (!isDuplicateKey(e)) throw e;
      }
    },
    anyPlant: async () => (await c.plants.findOne({}, { projection: { _id: 1 }, maxTimeMS })) !== null,
    hint: async (owner, slot) => {
      // A lost update (FerretDB's are read-then-write) loses only a hint.
      const at = Date.now();
      await c.freed.updateOne(
        { _id: owner as unknown as ObjectId },
        { $set: { [`h${slot % HINT_PLACES}`]: { s: slot, t: at } } },
        { upsert: true, writeConcern, maxTimeMS },
      );
      return at;
    },
    hints: async (owner) => {
      const doc = await c.freed.findOne({ _id: owner as unknown as ObjectId }, { maxTimeMS });
      if (doc === null) return [];
      const hints: Hint[] = [];
      for (const [key, value] of Object.entries(doc)) {
        if (key === '_id' || typeof value !== 'object' || value === null) continue;
        const slot = slotNumber((value as { s?: unknown }).s);
        const at = (value as { t?: unknown }).t;
        if (slot !== undefined && typeof at === 'number') hints.push({ slot, at });
      }
      return hints;
    },
  };
};
