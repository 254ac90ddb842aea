import type { InsertOutcome } from '../../../application/ports/plant-repository.js';
import type { Plant, PlantId } from '../../../domain/plant.js';

/**
 * The per-owner bound on MongoDB: its rules, the proof that they keep it, the timings it needs (`timings`), the
 * decisions (`next`, `refusalStep`: pure functions of what the process holds and what the store answered) and the loop
 * that sends the commands they choose (`Bound`, over the `QuotaStore` port). The model test (quota-model.test.ts) runs
 * it all against a model store under every interleaving and checks the invariants after every step. In brackets after
 * each rule: the tests that check it.
 *
 * Under a bound `max` a create takes a slot in [0, max) (*inside*); the unique index on {owner, slot} makes more than
 * `max` inside plants of an owner impossible, whatever the races, crashes and retries. A plant at a slot >= max is
 * *outside* (created without a bound at a random slot in [2^48, 2^49), under a larger bound, kept over a lowered one,
 * or moved out by the repair); it counts too. T is a request's deadline.
 *
 *   RULE 1. An inside insert goes ahead only after a look (a read of the owner's slots) that found no outside plant,
 *           sent less than `lookTtlMs` before, by this process's own clock. [quota-model: rolling, mixed, and
 *           `lookTtlMs` Infinity finds a breach; quota-processes: rolling restarts 10 -> 20 -> 10; mongodb-commands]
 *   RULE 2. An owner with outside plants keeping fewer than `max` has them moved into free inside slots (each move
 *           arbitrated by the slot index, as an insert is) and is looked at again; otherwise it is refused.
 *           [quota-model: lowered, glanced, mixed; quota-processes: turned on, lowered]
 *   RULE 3. A refusal (OwnerFull) is decided on the owner's count of other ids, read from the store in the request
 *           between two look-ups of the id that found none. [quota-model: raced, strict; http quota]
 *   RULE 4. A delete removes the document it found by `_id`, never by a filter a later create could match.
 *           [quota-model: each delete; mongodb-network-faults; mongodb-lost-reply]
 *   RULE 5. From a process's index check that finds a unique index missing until it is back, its creates answer 503,
 *           it forgets what it held and its requests under way end before their next command (`forget`); the repair
 *           moves no plant outside before `repairWaitMs` after it saw the slot index missing (repair.ts).
 *           [quota-model: dropped, noticed, and index checks every 60 s find a breach; mongodb-index; mongodb-repair;
 *           quota-processes: slot index dropped, repaired]
 *   Besides: nothing acknowledged is lost [quota-model; quota-processes: kill -9 mid-burst; the contract suite]; no
 *   503 without a fault [quota-model: every run without faults, storm; quota-processes: 16 and 32 at once]; constant
 *   commands per operation [mongodb-commands].
 *
 * Why no schedule of creates, deletes, moves, crashes, lost replies, restarts and bound changes puts an owner above
 * the one bound `max` in force (once 60 s have passed since the last process with another bound stopped):
 * (a) Only an insert adds a plant; a move changes a slot, a delete removes one. Inside plants never exceed `max` while
 *     the slot index is in place (an insert or a move into a slot is refused when it is taken), so the owner keeps at
 *     most `max` as long as it has no outside plant whenever an inside insert lands. [quota-model, after every step]
 * (b) Under one bound in force nothing writes an outside plant: creates and moves write inside slots only, a process
 *     with no or a larger bound would, and none runs. So a look that found no outside plant stays true until the next
 *     delete or move inside, which only removes outside plants.
 * (c) An inside insert is sent less than `lookTtlMs` after such a look was sent (RULE 1) and lands within T; a stopped
 *     process's last write landed within T of its stop. With T1 (lookTtlMs + 3T + 5 s <= 60 s), every inside insert
 *     landing 60 s after that stop follows a look sent after the last outside write landed: by (b) the owner has no
 *     outside plant then, and by (a) at most `max`. A lost reply or a driver's retry is an insert that landed or not:
 *     either way the index ruled it. A restarted process holds nothing and looks first.
 * (d) Bound changes: raised, every plant stays inside; lowered or turned on, plants at a slot >= max are outside and
 *     RULE 1 makes every create look first, so the owner is refused or has them moved in (RULE 2) into free slots the
 *     index arbitrates, until it is below `max`, then gets exactly the room left.
 * (e) What a process holds (`Held`: slots it knows taken, outside plants it saw, when its clean look was sent) only
 *     chooses a slot to try and when to look: a slot believed free but taken is refused by the index, one believed
 *     taken but free at worst makes the owner look full, and a refusal rests on the store's count (RULE 3): it is
 *     answered only when, at the count's moment, the owner kept `max` other ids, a serial order that refuses.
 * (f) A delete landing late (a lost reply, a timeout) removes the document it found, never a plant created again under
 *     that id since, which is another document (RULE 4).
 * (g) A dropped slot index lets plants share a slot. Each process notices within `indexCheckMs`, forgets, and its
 *     requests begun before send nothing more; their commands land within T. With T2 (repairWaitMs >= indexCheckMs + T
 *     + 5 s), when the repair moves plants outside no process trusts a look sent before it noticed, so every look an
 *     insert later relies on sees the moved plants: (b) and (c) hold again, the moves being outside writes it saw.
 */

/** Timings that break an inequality of the proof: the message says which, in one line. */
export class TimingError extends Error {}

/**
 * Every timing the proof rests on, from T (`timeoutMs`: every command of a request has landed or never will by then)
 * and the index check's interval (the contract's 30 s; tests tune it), T1 and T2 asserted: RULE 1's `lookTtlMs`; a
 * look's reads' own bound `lookMs` (they outlive the requests waiting on them; reads, so the proof needs no bound);
 * RULE 5's `indexCheckMs` and `repairWaitMs`. 5 s is what the proof leaves untimed (a listing's own time, a timer late).
 */
export const timings = (
  timeoutMs: number,
  tuned: { indexCheckMs?: number | undefined; lookTtlMs?: number | undefined } = {},
) => {
  const [exactAfterMs, slackMs, indexCheckMs] = [60_000, 5000, tuned.indexCheckMs ?? 30_000];
  const lookTtlMs = tuned.lookTtlMs ?? Math.max(0, Math.min(30_000, exactAfterMs - slackMs - 3 * timeoutMs));
  const repairWaitMs = indexCheckMs + timeoutMs + slackMs;
  if (!(lookTtlMs + 3 * timeoutMs + slackMs <= exactAfterMs)) {
    const most = Math.floor((exactAfterMs - slackMs - lookTtlMs) / 3);
    throw new TimingError(
      `at most ${most} ms, so that the per-owner bound is exact 60 s after a change (3 x ${timeoutMs} + a look's ${lookTtlMs} + ${slackMs} > ${exactAfterMs})`,
    );
  }
  if (!(repairWaitMs >= indexCheckMs + timeoutMs + slackMs)) {
    throw new TimingError(`the repair's wait ${repairWaitMs} ms is shorter than an index check and a request`);
  }
  return { timeoutMs, lookTtlMs, lookMs: Math.max(timeoutMs, lookTtlMs / 2), indexCheckMs, repairWaitMs } as const;
};

/**
 * The commands the bound needs, each one round trip on `_id` or a unique index with `owner` first: insertOne
 * (`slot-taken`: the slot index refused it; `taken`: the store does not say which); findOne by owner and id (`find`);
 * the owner's highest slot (`top`); its slots above `after`, in order, at most `limit`; its plants at or above a slot
 * (`outside`); its count but one id; updateOne by `_id`, slot (`move`: false if the slot is taken); deleteOne by `_id`.
 */
export interface QuotaStore<Ref> {
  readonly insert: (owner: string, plant: Plant, slot: number) => Promise<'inserted' | 'slot-taken' | 'taken'>;
  readonly find: (owner: string, id: PlantId) => Promise<(Slotted<Ref> & { readonly plant: Plant }) | undefined>;
  readonly top: (owner: string) => Promise<Slotted<Ref> | undefined>;
  readonly slots: (owner: string, after: number, limit: number) => Promise<number[]>;
  readonly outside: (owner: string, from: number) => Promise<Array<Slotted<Ref>>>;
  readonly count: (owner: string, except: PlantId) => Promise<number>;
  readonly move: (ref: Ref, from: number, to: number) => Promise<boolean>;
  readonly delete: (ref: Ref) => Promise<boolean>;
}

/** A stored plant's document (what names it) and its slot. */
type Slotted<Ref> = { readonly ref: Ref; readonly slot: number };

interface QuotaOptions {
  readonly now: () => number; // this process's own clock, in milliseconds (monotonic)
  readonly lookTtlMs: number; // RULE 1
  readonly maxHeld: (max: number) => number; // owners held at most (an LRU; 0: none); each weighs HELD_BYTES + max / 8
  readonly random: (n: number) => number; // a random integer in [0, n)
}

/** Throws when the request's deadline has passed, and is called before every command: none is sent after it. */
type Check = () => void;

/** What this process knew was forgotten during the request (see `forget`): it ends (503), keeping nothing it read. */
export class QuotaForgotten extends Error {}

/** The first outside slot of a plant created without a bound: far above any bound (at most 10^7, see config). */
export const OUTSIDE_FROM = 2 ** 48;

/** Looks before a create gives up as contended (503); between two, it tries at most `max` slots. */
const MAX_ROUNDS = 16;
const PAGE = 20_000; // slots a load reads per command
export const HELD_BYTES = 900; // a held owner's bytes beside its bitset: state, Map entry, a name of 256 UTF-16 units
type Outcome = Promise<InsertOutcome | undefined>;

/** What this process knows of one owner under one bound. */
class Held {
  readonly taken: Uint8Array; // the inside slots known taken, a bit each; `used` of them
  used = 0;
  outside = 0; // outside plants seen by the last load, less those deleted here since
  /** When the last look that found no outside plant was sent (RULE 1); -Infinity: none since the last load. */
  cleanAt = Number.NEGATIVE_INFINITY;
  fresh = true; // no create took a slot here since the look that made it: what it says full, the store said full
  spread = 0; // slots found taken by another process lately: creates here try further out (`next`)

  /** `counted`: `used` is the owner's count (a load), not its slots up to the highest all taken as taken. */
  constructor(
    readonly max: number,
    readonly counted: boolean,
  ) {
    this.taken = new Uint8Array(Math.ceil(max / 8));
  }

  has(slot: number): boolean {
    return ((this.taken[slot >> 3] ?? 0) & (1 << (slot & 7))) !== 0;
  }

  /** Marks `slot` taken (true) or free (false); an outside slot freed is an outside plant gone. */
  mark(slot: number, taken: boolean): void {
    if (slot >= this.max) {
      if (!taken && this.outside > 0) this.outside--;
    } else if (this.has(slot) !== taken) {
      this.taken[slot >> 3] = (this.taken[slot >> 3] ?? 0) ^ (1 << (slot & 7));
      this.used += taken ? 1 : -1;
    }
  }

  /** The first slot from `from` (on, round) believed free and not reserved, skipping full bytes; undefined: none. */
  nextFree(from = 0, reserved?: ReadonlyMap<number, unknown>): number | undefined {
    for (let i = 0; i < this.max && this.used < this.max; i++) {
      const slot = (from + i) % this.max;
      if (this.taken[slot >> 3] === 0xff) i += 7 - (slot & 7);
      else if (!this.has(slot) && !reserved?.has(slot)) return slot;
    }
    return undefined;
  }

  /** The count for the port's answer, as this process knows it (a glance: packed up to the highest slot). */
  get reported(): { readonly count: number } {
    return { count: this.used + this.outside };
  }
}

/**
 * What a bounded create does next, from what this process holds of the owner: RULE 1 (a clean look holds) and the
 * lowest slot believed free and not reserved (further out at random once processes met here: `spread`); else wait for
 * the creates in flight here (their answers may free one);
 * a glance when creates since the look made it full (a delete elsewhere may have left room above); RULE 2's moves
 * when outside plants leave room; RULE 3's reads when full (a load if they say there is room); a glance that saw an
 * outside plant knows nothing else: a load.
 */
export const next = (state: Held, reserved: ReadonlyMap<number, unknown> | undefined, draw: (n: number) => number) => {
  const low = state.outside > 0 ? undefined : state.nextFree(0, reserved);
  const window = 2 << Math.min(state.spread, 12);
  const far = low === undefined || state.spread === 0 ? low : state.nextFree(low + draw(window), reserved);
  if (low !== undefined) return { run: 'insert', slot: far ?? low } as const;
  if (state.outside === 0 && reserved !== undefined) return { run: 'wait' } as const;
  if (state.outside === 0 && !state.fresh && !state.counted) return { run: 'glance' } as const;
  if (state.counted && state.outside > 0 && state.used + state.outside < state.max) return { run: 'move-in' } as const;
  return { run: state.counted || state.outside === 0 ? 'refusal' : 'load' } as const;
};

/** RULE 3's reads, in order: the id, the count of the owner's other ids, the id again. */
type Refusal = { readonly read: 'id' } | { readonly read: 'count' } | { readonly read: 'id again'; count: number };

/**
 * RULE 3 on what the store answered: a plant found answers 200 or 409 (stored meanwhile, say by this create's late
 * attempt, or deleted since: either is a serial order); `room`: fewer than `max` other ids, the create goes on. A
 * refusal saw the owner full of other ids between two reads without the id: a delete of that plant, its creation
 * elsewhere, or both, never pass for a full owner.
 */
export const refusalStep = (
  max: number,
  at: Refusal,
  answer: Plant | number | undefined,
): Refusal | 'room' | { readonly _tag: 'OwnerFull'; readonly count: number } | { readonly found: Plant } => {
  if (typeof answer === 'object') return { found: answer };
  if (at.read === 'id') return { read: 'count' };
  if (at.read === 'count') return (answer ?? 0) < max ? 'room' : { read: 'id again', count: answer ?? 0 };
  return { _tag: 'OwnerFull', count: at.count };
};

/** The store with `check` called before every command: none is sent after the request's deadline. */
const checked = <Ref>(store: QuotaStore<Ref>, check: Check): QuotaStore<Ref> =>
  Object.fromEntries(
    Object.entries(store).map(([name, command]: [string, (...args: unknown[]) => unknown]) => [
      name,
      (...args: unknown[]) => (check(), command(...args)),
    ]),
  ) as unknown as QuotaStore<Ref>;

/**
 * The decisions' loop: sends the commands they choose and feeds the answers back; what this process holds. `insert`
 * stores the plant under `max` (Infinity: no bound) or answers why not; undefined: contended (503, nothing stored).
 * `forget` forgets every owner and cuts the requests under way: a unique index is missing, so plants may be written
 * that it did not check, or moved outside (repair.ts).
 */
export class Bound<Ref> {
  private readonly held = new Map<string, Held>(); // least recently used first (a Map keeps insertion order)
  /** The look under way for an owner, if any, shared by its requests, and their checks. */
  private readonly looking = new Map<string, { readonly done: Promise<Held>; readonly waiters: Check[] }>();
  /** Per owner, the slots its creates in flight here try, until their insert answers (so that no two try one). */
  private readonly reserved = new Map<string, Map<number, Promise<void>>>();
  private generation = 0; // times everything was forgotten: a request that began before may not keep what it read

  constructor(
    private readonly store: QuotaStore<Ref>,
    private readonly options: QuotaOptions,
  ) {}

  private keep(owner: string, state: Held): void {
    this.held.delete(owner);
    this.held.set(owner, state);
    while (this.held.size > this.options.maxHeld(state.max)) this.held.delete(this.held.keys().next().value as string);
  }

  /** Reads every slot of the owner, a page at a time: a look (RULE 1) and the bitset at once. */
  private async load(s: QuotaStore<Ref>, owner: string, max: number): Promise<Held> {
    const sentAt = this.options.now();
    const state = new Held(max, true);
    for (let after = -1, page = [] as number[]; after === -1 || page.length === PAGE; after = page.at(-1) ?? max) {
      page = await s.slots(owner, after, PAGE);
      for (const slot of page) if (slot < max) state.mark(slot, true);
      state.outside += page.filter((slot) => slot >= max).length;
    }
    if (state.outside === 0) state.cleanAt = sentAt;
    return state;
  }

  /** RULE 1's look at the owner's highest slot: every slot up to it taken as taken (packed); outside, nothing else. */
  private async glance(s: QuotaStore<Ref>, owner: string, max: number): Promise<Held> {
    const sentAt = this.options.now();
    const top = (await s.top(owner))?.slot ?? -1;
    const state = new Held(max, false);
    // An outside plant: kept as such, so that the next look is the load alone (a request may not outlast two reads).
    if (top >= max) return ((state.outside = 1), state);
    state.taken.fill(0xff, 0, (top + 1) >> 3);
    state.used = (top + 1) & ~7;
    for (let slot = (top + 1) & ~7; slot <= top; slot++) state.mark(slot, true);
    state.cleanAt = sentAt;
    return state;
  }

  /**
   * A look (a glance; `full`: a load) shared by the owner's requests: each command goes while one of them is within
   * its deadline, and what it read is kept even after they all answered 503, so that a slow store still makes progress.
   */
  private async look(owner: string, max: number, check: Check, full = false): Promise<Held> {
    check(); // a request past its deadline neither begins a look others would wait on, nor waits
    let shared = this.looking.get(owner);
    if (shared === undefined) {
      const [waiters, began] = [[check], this.generation];
      const s = checked(this.store, () => waiters.some(alive) || check()); // else the first one's error
      const done: Promise<Held> = (full ? this.load(s, owner, max) : this.glance(s, owner, max))
        .finally(() => this.looking.get(owner)?.done === done && this.looking.delete(owner))
        .then((state) => (began === this.generation && this.keep(owner, state), state));
      this.looking.set(owner, (shared = { done, waiters }));
    } else shared.waiters.push(check);
    const state = await shared.done;
    return state.max === max ? state : this.look(owner, max, check, full);
  }

  /** The owner's state with a clean look younger than lookTtlMs (RULE 1), or with its outside plants as loaded. */
  private async current(owner: string, max: number, check: Check): Promise<Held> {
    const state = this.held.get(owner);
    if (state === undefined || state.max !== max || this.expired(state)) return this.look(owner, max, check);
    this.keep(owner, state);
    return state;
  }

  private expired(state: Held): boolean {
    return state.outside === 0 && this.options.now() - state.cleanAt >= this.options.lookTtlMs;
  }

  /** RULE 3's reads (`refusalStep`): undefined when the owner has room after all. */
  private async refusal(s: QuotaStore<Ref>, owner: string, plant: Plant, state: Held) {
    for (let at: ReturnType<typeof refusalStep> = { read: 'id' }; ;) {
      const answer = at.read === 'count' ? await s.count(owner, plant.id) : (await s.find(owner, plant.id))?.plant;
      at = refusalStep(state.max, at, answer);
      if (at === 'room') return undefined;
      if ('found' in at) return { _tag: 'Exists', stored: at.found, ...state.reported } as const;
      if ('_tag' in at) return at;
    }
  }

  /** RULE 2: moves the owner's outside plants into slots believed free, each move arbitrated by the slot index. */
  private async moveIn(s: QuotaStore<Ref>, owner: string, state: Held): Promise<void> {
    const plants = await s.outside(owner, state.max);
    await Promise.all(
      plants.map(async ({ ref, slot }) => {
        for (let to = state.nextFree(); to !== undefined; to = state.nextFree()) {
          state.mark(to, true); // taken by this move, or by whoever refused it
          if (await s.move(ref, slot, to)) return;
        }
      }),
    );
  }

  private async unbounded(s: QuotaStore<Ref>, owner: string, plant: Plant): Outcome {
    this.held.delete(owner); // an outside plant of an owner this process may hold under a bound (tests mix bounds)
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const attempt = await s.insert(owner, plant, OUTSIDE_FROM + this.options.random(OUTSIDE_FROM));
      if (attempt === 'inserted') return { _tag: 'Inserted' };
      const stored = attempt === 'taken' ? (await s.find(owner, plant.id))?.plant : undefined;
      if (stored !== undefined) return { _tag: 'Exists', stored };
    }
    return undefined;
  }

  /** Inserts at `slot`, reserved meanwhile; the slot is marked taken unless the id index alone refused it. */
  private async attempt(s: QuotaStore<Ref>, owner: string, plant: Plant, state: Held, slot: number) {
    const mine = this.reserved.get(owner) ?? new Map<number, Promise<void>>();
    let release = (): void => undefined; // at the slot's release: a waiter woken before would spin on microtasks
    this.reserved.set(owner, mine.set(slot, new Promise<void>((resolve) => (release = resolve))));
    try {
      const answer = await s.insert(owner, plant, slot);
      const known = this.held.get(owner) ?? state;
      known.mark(slot, true); // answered: taken, by this insert or another
      known.fresh = false;
      if (answer !== 'taken') return answer;
      const found = await s.find(owner, plant.id);
      // Refused by the id index (an identical retry, or a 409): the slot stays free unless that plant holds it.
      if (found !== undefined && found.slot !== slot) known.mark(slot, false);
      return found ?? ('slot-taken' as const);
    } finally {
      mine.delete(slot);
      if (mine.size === 0) this.reserved.delete(owner);
      release();
    }
  }

  /** Runs what `next` decides, at most MAX_ROUNDS looks; a slot taken by another spends no round. */
  private async bounded(owner: string, plant: Plant, max: number, check: Check): Outcome {
    const s = checked(this.store, check);
    let state = await this.current(owner, max, check);
    for (let round = 0; round < MAX_ROUNDS;) {
      const mine = this.reserved.get(owner);
      const step = next(state, mine, this.options.random);
      if (step.run === 'insert') {
        const answer = await this.attempt(s, owner, plant, state, step.slot);
        // Processes that meet spread out (the window doubling per meeting, halving at random as they stop meeting).
        state.spread += answer === 'slot-taken' ? 1 : state.spread > 0 && this.options.random(4) === 0 ? -1 : 0;
        if (answer === 'inserted') return { _tag: 'Inserted', ...state.reported };
        if (answer !== 'slot-taken') return { _tag: 'Exists', stored: answer.plant, ...state.reported };
      } else if (step.run === 'wait') {
        await Promise.race(mine?.values() ?? [Promise.resolve()]);
      } else {
        if (step.run === 'glance') state = await this.look(owner, max, check);
        // After a glance: room above the highest slot (deleted elsewhere), else RULE 3's reads, or an outside plant's load.
        const glanced = state.nextFree() !== undefined ? 'room' : state.outside > 0 ? 'load' : 'refusal';
        const run = step.run === 'glance' ? glanced : step.run;
        if (run === 'move-in') await this.moveIn(s, owner, state);
        const refused = run === 'refusal' ? await this.refusal(s, owner, plant, state) : undefined;
        if (refused !== undefined) return refused;
        if (run !== 'room') state = await this.look(owner, max, check, true);
        round++;
      }
      state = this.expired(state) ? await this.current(owner, max, check) : (this.held.get(owner) ?? state);
    }
    return undefined;
  }

  insert(owner: string, plant: Plant, max: number, check: Check): Outcome {
    if (!Number.isFinite(max)) return this.unbounded(checked(this.store, check), owner, plant);
    const began = this.generation;
    return this.bounded(owner, plant, max, () => {
      check();
      if (this.generation !== began) throw new QuotaForgotten('the unique indexes changed under the request');
    });
  }

  /** RULE 4: the document found is the one deleted; then the owner is packed (its highest plant into the slot). */
  async remove(owner: string, id: PlantId, check: Check): Promise<boolean> {
    const s = checked(this.store, check);
    const found = await s.find(owner, id);
    // Not deleted: another delete took it between the two steps; it is gone, as after a delete ordered after that one.
    if (found === undefined || !(await s.delete(found.ref))) return false;
    const state = this.held.get(owner);
    state?.mark(found.slot, false);
    // Packed: the highest inside plant takes the freed slot (a race leaving a hole costs a load, never the bound).
    const top = await s.top(owner);
    if (top === undefined || top.slot <= found.slot || top.slot >= OUTSIDE_FROM) return true;
    if (await s.move(top.ref, top.slot, found.slot)) state?.mark(top.slot, false);
    state?.mark(found.slot, true);
    return true;
  }

  forget(): void {
    this.generation++;
    this.held.clear();
    this.looking.clear();
  }
}

const alive = (check: Check): boolean => {
  try {
    return (check(), true);
  } catch {
    return false;
  }
};
