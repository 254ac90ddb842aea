/**
 * A model of the MongoDB adapter's bound (adapters/storage/mongodb/quota.ts) and of the repair (repair.ts): several
 * simulated service processes run the adapter's own decision code, and the repair its own, against an in-memory store
 * of two owners that enforces the unique indexes atomically (the slot index can be dropped, and is rebuilt by a
 * process that notices, or by the repair), answers `slot-taken` or only `taken` as MongoDB or FerretDB do, and
 * applies updates as FerretDB does (read, then write back by `_id`, another command free to run in between), while
 * fast-check's scheduler chooses the order of every command's arrival and of every reply.
 *
 * Faults are drawn per command: a lost reply (applied, answered with an error), a timeout (the request gives up at
 * once; the command lands later, in a later round or at the deadline, or never), a crash of the process before the
 * command is sent. Processes restart with other bounds and clocks of their own; time passes in steps around the
 * contract's 60 s, the looks' 30 s and the index check's 30 s; a load can be slower than a request's deadline.
 *
 * After every step it checks the invariants of quota.ts's header; a run without faults also checks progress: every
 * create is stored or refused by the bound (after its retries, when a slow store cuts requests), within a bounded
 * number of commands. A violation fails the run with the step's trace.
 */
import fc from 'fast-check';
import type { InsertOutcome } from '../../application/ports/plant-repository.js';
import type { Plant, PlantId, PlantName } from '../../domain/plant.js';
import { Bound, OUTSIDE_FROM, QuotaForgotten, timings, type QuotaStore } from '../../adapters/storage/mongodb/quota.js';
import { repair, type RepairStore, type Shared } from '../../adapters/storage/mongodb/repair.js';

const OWNERS = ['o', 'p'] as const;
const DEADLINE_MS = 2000;
/** The looks' expiry, the index checks' interval and the repair's wait, as the service derives them from its T. */
const TIMINGS = timings(DEADLINE_MS);
/** The contract: from 60 s after the last process with another bound stopped, the bound is exact. */
const EXACT_AFTER_MS = 60_000;
/** How long a slow store takes to answer a read of slots (a load or a glance), times the reads in flight. */
const SLOW_MS = 1200;
/** Progress: the most commands a create may send, and how long a client waits before it retries a 503. */
export const MAX_COMMANDS = 64;
const RETRY_AFTER_MS = 250;

export type Fault = 'ok' | 'lost' | 'timeout' | 'crash';
export type Action =
  | {
      readonly kind: 'create';
      readonly proc: number;
      readonly owner: number;
      readonly id: number;
      readonly name: 'a' | 'b';
    }
  | { readonly kind: 'delete'; readonly proc: number; readonly owner: number; readonly id: number }
  | { readonly kind: 'restart'; readonly proc: number; readonly bound: number }
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'drop' }
  | { readonly kind: 'repair' };

export interface Scenario {
  /** Each process's bound at start (0: none). */
  readonly bounds: readonly number[];
  /** Owners each process may hold (0: none, so that every create glances at the owner; 1: the two owners evict). */
  readonly held: number;
  /** Plants stored before: [owner, id, slot] (a slot >= OUTSIDE_FROM as a process without a bound writes it). */
  readonly stored: ReadonlyArray<readonly [number, number, number]>;
  /** Rounds of actions: the actions of a round run at once, a round starts once the one before has settled. */
  readonly rounds: ReadonlyArray<readonly Action[]>;
  /** The fault of the n-th command sent (past the end: none); empty: a run without faults, whose progress is checked. */
  readonly faults: readonly Fault[];
  /** Whether the store names the slot index when it refuses an insert for it (MongoDB), or not (FerretDB). */
  readonly slotTaken: boolean;
  /** The offset of each process's clock at each of its starts (a monotonic clock with its own origin). */
  readonly clocks: readonly number[];
  /** When, in every 30 s (scaled to the index checks' interval), each process lists the indexes. */
  readonly phases: readonly number[];
  /** Reads of slots take SLOW_MS each, advancing the clock; a create answered 503 is retried (progress: once stored). */
  readonly slow: boolean;
}

const bound = fc.constantFrom(0, 2, 2, 3);
const proc = fc.nat(2);
const owner = fc.nat(1);
const plantId = fc.nat(6);

/** Plants stored before, with ids among those the actions create and delete. */
const stored = fc
  .uniqueArray(
    fc.tuple(
      owner,
      fc.integer({ min: 3, max: 6 }),
      fc.oneof(fc.nat(4), fc.constant(OUTSIDE_FROM), fc.constant(OUTSIDE_FROM + 1)),
    ),
    { maxLength: 5, selector: ([o, id]) => `${o} ${id}` },
  )
  .map((plants) =>
    plants.filter(([o, , slot], i) => !plants.slice(0, i).some(([p, , other]) => p === o && other === slot)),
  );
const faultList = fc.array(
  fc.constantFrom<Fault>('ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'lost', 'timeout', 'crash'),
  {
    maxLength: 60,
  },
);
const faults = fc.oneof({ weight: 3, arbitrary: faultList }, { weight: 1, arbitrary: fc.constant([]) });
const common = {
  held: fc.constantFrom(0, 1, 8, 8),
  stored,
  slotTaken: fc.boolean(),
  clocks: fc.array(fc.integer({ min: 0, max: 10 ** 9 }), { minLength: 12, maxLength: 12 }),
  phases: fc.tuple(...[0, 1, 2].map(() => fc.constantFrom(0, 1000, 15_000, 29_000))),
  slow: fc.constant(false),
};
const create = (p: number, id: number, o = 0): Action => ({ kind: 'create', proc: p, owner: o, id, name: 'a' });

function action(): fc.Arbitrary<Action> {
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant('create' as const),
        proc,
        owner,
        id: plantId,
        name: fc.constantFrom('a' as const, 'b' as const),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), proc, owner, id: plantId }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('restart' as const), proc, bound }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('advance' as const),
        ms: fc.constantFrom(1000, 25_000, 31_000, 40_000, 59_000, 61_000, 70_000),
      }),
    },
  );
}

/** Any mix of actions over three processes. */
const mixed: fc.Arbitrary<Scenario> = fc.record({
  ...common,
  bounds: fc.tuple(bound, bound, bound),
  rounds: fc.array(fc.array(action(), { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 10 }),
  faults,
});

/**
 * A change of bounds as an operator makes it: two processes under a bound look at the owner, a third under another
 * bound (none, or larger) creates, then restarts under the first bound; time passes (around the contract's 60 s and
 * the looks' expiry); the first two create again. What the bound's expiry is for, reached in every such scenario.
 */
const rolling: fc.Arbitrary<Scenario> = fc
  .record({
    ...common,
    b: fc.constantFrom(2, 3),
    other: fc.constantFrom(0, 5),
    wait: fc.constantFrom(25_000, 31_000, 59_000, 61_000, 70_000),
    remove: fc.boolean(),
    more: fc.array(action(), { maxLength: 3 }),
    faults,
  })
  .map(({ b, other, wait, remove, more, ...rest }) => ({
    ...rest,
    bounds: [b, b, other],
    rounds: [
      [create(0, 0), create(1, 1)],
      [create(2, 2), create(2, 3), create(2, 4)],
      [{ kind: 'restart', proc: 2, bound: b }],
      [{ kind: 'advance', ms: wait }],
      // A delete first, by a process whose look has expired: a delete is no look.
      ...(remove ? [[{ kind: 'delete', proc: 0, owner: 0, id: 0 } as const]] : []),
      [create(0, 5), create(1, 6), create(0, 0)],
      ...(more.length > 0 ? [more] : []),
    ],
  }));

/**
 * The slot index dropped under traffic, processes noticing it at their own index checks, the repair started while
 * processes that have not noticed still create (sharing slots), time passing around the checks and the repair's wait,
 * and creates after the index is back.
 */
const dropped: fc.Arbitrary<Scenario> = fc
  .record({
    ...common,
    b: fc.constantFrom(2, 3),
    before: fc.array(action(), { maxLength: 2 }),
    during: fc.array(action(), { minLength: 1, maxLength: 4 }),
    waits: fc.array(fc.constantFrom(1000, 10_000, 25_000, 31_000, 40_000), { minLength: 1, maxLength: 3 }),
    after: fc.array(fc.array(action(), { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 3 }),
    faults,
  })
  .map(({ b, before, during, waits, after, ...rest }) => ({
    ...rest,
    bounds: [b, b, b],
    rounds: [
      [create(0, 0), create(1, 1), ...before],
      [{ kind: 'drop' }],
      [{ kind: 'repair' }, create(0, 2), create(1, 3), create(2, 4), ...during],
      ...waits.flatMap((ms, i): Action[][] => [[{ kind: 'advance', ms }], after[i] ?? [create(i, 5)]]),
      [{ kind: 'advance', ms: 40_000 }],
      [create(0, 6), create(1, 0, 1), create(2, 1)],
      ...after.slice(waits.length),
    ],
  }));

/**
 * An owner kept above a lowered bound, one of its plants at the slot equal to the bound: a process looks, deletes (its
 * packing move cut by a fault), and creates again; another creates. A look taking that plant for an inside one is clean
 * while an outside plant remains, and the freed slot then takes the owner past the bound.
 */
const lowered: fc.Arbitrary<Scenario> = fc
  .record({
    ...common,
    b: fc.constantFrom(2, 3),
    gone: fc.nat(2),
    faults: fc.array(fc.constantFrom<Fault>('ok', 'ok', 'ok', 'lost', 'timeout'), { maxLength: 16 }),
  })
  .map(({ b, gone, ...rest }) => ({
    ...rest,
    bounds: [b, b, b],
    held: 8,
    stored: Array.from({ length: b + 1 }, (_, slot) => [0, 3 + slot, slot] as const),
    rounds: [[create(0, 0)], [{ kind: 'delete', proc: 0, owner: 0, id: 3 + gone }], [create(0, 1)], [create(1, 2)]],
  }));

/**
 * An owner above its bound by two outside plants, met by a process at a glance: the glance sees only the highest, a
 * delete of one of them lands while a create's load is under way, and another create finds the glance (or the load)
 * held. Were either taken for a clean look, its count of outside plants would reach zero with one left: inside inserts.
 */
const glanced: fc.Arbitrary<Scenario> = fc
  .record({
    ...common,
    b: fc.constantFrom(2, 3),
    second: fc.boolean(),
    faults: fc.array(fc.constantFrom<Fault>('ok', 'ok', 'ok', 'ok', 'lost', 'timeout'), { maxLength: 12 }),
  })
  .map(({ b, second, ...rest }) => ({
    ...rest,
    bounds: [b, b, b],
    held: 8,
    stored: [
      ...Array.from({ length: b - 1 }, (_, slot) => [0, 3 + slot, slot] as const),
      [0, 5, OUTSIDE_FROM + 1] as const,
      [0, 6, OUTSIDE_FROM] as const,
    ],
    rounds: [
      [
        create(0, 0),
        { kind: 'delete', proc: 0, owner: 0, id: second ? 5 : 6 } as const,
        create(0, 1),
        ...(second ? [create(1, 2)] : []),
      ],
    ],
  }));

/**
 * A refusal raced by two other calls on its id: a process holds the owner full (a create refused), a plant is deleted
 * through another, then the first process creates an id while a second creates it too and a third deletes it. The
 * owner is never full without that id, so no serial order refuses it: a count that took the second create's plant
 * for another one would.
 */
const raced: fc.Arbitrary<Scenario> = fc
  .record({
    ...common,
    b: fc.constantFrom(2, 3),
    name: fc.constantFrom('a' as const, 'b' as const),
    faults: fc.constant([]),
  })
  .map(({ b, name, ...rest }) => ({
    ...rest,
    bounds: [b, b, b],
    held: 8,
    stored: Array.from({ length: b }, (_, slot) => [0, 3 + slot, slot] as const),
    rounds: [
      [create(0, 6)],
      [{ kind: 'delete', proc: 2, owner: 0, id: 3 } as const],
      [create(0, 0), { ...create(1, 0), name }, { kind: 'delete', proc: 2, owner: 0, id: 0 } as const],
    ],
  }));

/**
 * A storm of first creates on a slow store (issue 46): each process new to the owners, every read of slots slower
 * than what a request has left, creates of both owners at once, each retried after a 503.
 */
const storm: fc.Arbitrary<Scenario> = fc
  .record({
    ...common,
    b: fc.constantFrom(2, 3, 3),
    creates: fc.array(fc.record({ p: proc, o: owner, id: plantId }), { minLength: 2, maxLength: 6 }),
  })
  .map(({ b, creates, ...rest }) => ({
    ...rest,
    bounds: [b, b, b],
    rounds: [creates.map(({ p, o, id }) => create(p, id, o))],
    faults: [],
    held: 8,
    slow: true,
  }));

/**
 * A refusal raced by processes without a bound: a process holds the owner full (a create refused), a plant is deleted,
 * then it creates an id while one process stores that id and another a second plant, outside. Between the refusal's
 * look-up of the id and its count the owner may become full of other ids with that id stored: never full without it,
 * so only the id read again after the count answers right (RULE 3).
 */
const unbound: fc.Arbitrary<Scenario> = fc
  .record({ ...common, b: fc.constantFrom(2, 3), faults: fc.constant([]) })
  .map(({ b, ...rest }) => ({
    ...rest,
    bounds: [b, 0, 0],
    held: 8,
    stored: Array.from({ length: b }, (_, slot) => [0, 3 + slot, slot] as const),
    rounds: [
      [create(0, 6)],
      [{ kind: 'delete', proc: 2, owner: 0, id: 3 } as const],
      [create(0, 0), create(1, 0), create(2, 2)],
    ],
  }));

/**
 * A look sent while the slot index is missing, used after the repair moved plants out: two processes new to the owner
 * share its free slot, one of them is refused (and looks again, clean) some seconds before the repair's wait ends, then
 * deletes and creates after it. Harmless only if that process noticed the missing index (and forgot) before the
 * repair moved anything: what the repair's wait is derived for (quota.ts, `timings`, T2).
 */
const noticed: fc.Arbitrary<Scenario> = fc
  .record({
    ...common,
    faults: fc.array(fc.constantFrom<Fault>('ok', 'ok', 'ok', 'ok', 'lost', 'timeout'), { maxLength: 12 }),
  })
  .map((rest) => ({
    ...rest,
    bounds: [3, 3, 3],
    held: 8,
    stored: [[0, 3, 0] as const, [0, 4, 1] as const],
    rounds: [
      [{ kind: 'drop' } as const],
      [{ kind: 'repair' } as const, create(1, 0), create(2, 1)],
      [{ kind: 'advance', ms: TIMINGS.repairWaitMs - TIMINGS.lookTtlMs + 10_000 } as const],
      [create(1, 5)],
      [{ kind: 'advance', ms: TIMINGS.lookTtlMs - 9000 } as const],
      [{ kind: 'delete', proc: 1, owner: 0, id: 3 } as const],
      [create(1, 6)],
    ],
  }));

export const scenarioArbitrary: fc.Arbitrary<Scenario> = fc.oneof(
  { weight: 4, arbitrary: mixed },
  { weight: 2, arbitrary: rolling },
  { weight: 5, arbitrary: dropped },
  { weight: 1, arbitrary: lowered },
  { weight: 3, arbitrary: glanced },
  { weight: 1, arbitrary: raced },
  { weight: 1, arbitrary: noticed },
  { weight: 1, arbitrary: unbound },
  { weight: Number(process.env['NO_STORM'] ?? 1) === 0 ? 0 : 1, arbitrary: storm },
);

class Unavailable extends Error {}

interface Doc {
  readonly ref: number;
  readonly owner: string;
  readonly id: number;
  readonly name: string;
  slot: number;
  /** The step at which it was stored. */
  readonly at: number;
}

interface Op {
  readonly proc: Proc;
  readonly owner: string;
  readonly label: string;
  ended: boolean;
  readonly deadline: number;
  /** Commands sent. */
  commands: number;
  /** Which start of its process it belongs to. */
  readonly life: number;
  /** Whether the clock passed its deadline (time passing, not a fault). */
  cut?: boolean;
  /** For a create: the plant it stores. */
  candidate?: { readonly id: number; readonly name: string };
  /** The document this create stored (its last insert that landed). */
  inserted?: Doc;
  /** For a delete: the step at which its look-up ran. */
  locatedAt?: number;
  /** For a create: whether at some step while it ran the owner kept its bound or more without a plant of its id. */
  refusable: boolean;
}

interface Flight {
  readonly op: Op;
  /** A command whose request gave up at once: it lands at a later round, by its deadline, or never. */
  readonly late: boolean;
  readonly land: () => void;
  readonly drop: () => void;
}

interface Proc {
  readonly index: number;
  bound: number;
  alive: boolean;
  starts: number;
  /** Whether it saw the slot index in place at its last index check (else its creates answer 503). */
  indexed: boolean;
  /** The request that checked its deadline just before its next command, if any. */
  current?: Op | undefined;
  /** What a command sent without a request's check belongs to: a look shared by requests, going on after them. */
  background: Op;
  quota: Bound<Doc>;
  readonly ops: Set<Op>;
  /**
   * Its commands sent and not landed, also those of requests that already answered (a timeout, a branch of a request
   * that failed): at the request's deadline or the process's stop each lands then or never (the connection is gone).
   */
  readonly flights: Set<Flight>;
  /** Its own random sequence (a slot further out, an outside slot). */
  seed: number;
}

export interface ModelOptions {
  /** RULE 1's expiry as the processes use it (the model checks the contract's 60 s whatever it is). */
  readonly lookTtlMs?: number;
  /** How often the processes list the indexes, if not as `timings` says (the repair still waits as it says). */
  readonly indexCheckMs?: number;
}

/** Runs one scenario under the scheduler; resolves with the first violation found, or undefined. */
export const runScenario = async (
  s: fc.Scheduler,
  scenario: Scenario,
  options: ModelOptions = {},
): Promise<string | undefined> => {
  const docs = new Map<number, Doc>();
  const checkMs = options.indexCheckMs ?? TIMINGS.indexCheckMs;
  let nextRef = 1;
  let step = 0;
  let clock = 0;
  let commands = 0;
  let slotIndex = true;
  /** Reads of slots in flight on a slow store: each takes SLOW_MS for every one (they share the store's time). */
  let slowReads = 0;
  const progress = scenario.faults.length === 0 && !scenario.rounds.some((r) => r.some((a) => a.kind === 'drop'));
  let violation: string | undefined;
  const violated = (what: string) => {
    violation ??= `step ${step} (at ${clock} ms): ${what}`;
  };
  /** Every plant ever stored under an owner's id, by name. */
  const history = new Map<string, Set<string>>();
  const acknowledged = new Set<Doc>();
  const deleted = new Set<Doc>();
  /** When a process with each bound last stopped. */
  const stoppedAt = new Map<number, number>();
  /** The repair's waits, each resolved once the clock reaches its end. */
  const sleeps = new Set<{ readonly until: number; readonly wake: () => void }>();

  const record = (d: Doc) => {
    const key = `${d.owner} ${d.id}`;
    history.set(key, (history.get(key) ?? new Set<string>()).add(d.name));
  };
  for (const [o, id, slot] of scenario.stored) {
    const d = { ref: nextRef++, owner: OWNERS[o] as string, id, name: 'a', slot, at: -1 };
    docs.set(d.ref, d);
    record(d);
  }
  const owned = (o: string) => [...docs.values()].filter((d) => d.owner === o);
  const sharesSlot = () => [...docs.values()].some((d) => owned(d.owner).some((e) => e !== d && e.slot === d.slot));

  /** The one bound in force and exact now (all live processes share it, the others stopped 60 s ago), if any. */
  const exactBound = (): number | undefined => {
    const live = procs.filter((p) => p.alive);
    const first = live[0];
    if (first === undefined || first.bound === 0 || live.some((p) => p.bound !== first.bound)) return undefined;
    for (const [b, at] of stoppedAt) if (b !== first.bound && clock - at < EXACT_AFTER_MS) return undefined;
    return first.bound;
  };

  const fault = (): Fault => scenario.faults[commands++] ?? 'ok';

  /** The clock passes `ms`: requests past their deadline end, their commands in flight land then or never. */
  const pass = (ms: number) => {
    for (const p of procs) {
      for (const op of p.ops) if (op.deadline <= clock + ms) op.ended = op.cut = true;
      settle(p, (op) => op.deadline <= clock + ms);
    }
    clock += ms;
  };

  /**
   * One command of the op that called `check` just before (the core calls it before every command): its arrival, a
   * write-back when it has one (FerretDB's update), and its reply are each a step the scheduler places.
   */
  const send = <T>(p: Proc, label: string, apply: (op: Op) => T, writeBack?: (op: Op, read: T) => T): Promise<T> => {
    const op = p.current ?? p.background;
    p.current = undefined;
    op.commands++;
    const what = fault();
    if (what === 'crash') {
      stop(op.proc);
      return new Promise<T>(() => {});
    }
    let outcome: { value: T } | { error: unknown } | undefined;
    let dropped = false;
    let landed = 0;
    const phases = writeBack === undefined ? 1 : 2;
    /** Lands the command's next phase, unless it was dropped or a failed read left nothing to write. */
    const next = () => {
      if (dropped || landed >= phases) return;
      if (landed === 1 && (outcome === undefined || !('value' in outcome))) {
        landed = phases;
        return;
      }
      const read = outcome !== undefined && 'value' in outcome ? outcome.value : undefined;
      try {
        outcome = { value: landed === 0 ? apply(op) : (writeBack as (op: Op, read: T) => T)(op, read as T) };
      } catch (e) {
        outcome = { error: e };
      }
      landed++;
      step++;
      check();
    };
    const flights = op.proc.flights;
    const flight: Flight = {
      op,
      late: what === 'timeout',
      land: () => {
        while (!dropped && landed < phases) next();
        flights.delete(flight);
      },
      drop: () => {
        dropped = true;
        flights.delete(flight);
      },
    };
    flights.add(flight);
    if (what === 'timeout') {
      op.ended = true;
      return Promise.reject(new Unavailable('timeout'));
    }
    const tag = `p${op.proc.index} ${op.label}`;
    const slow = scenario.slow && /^(slots|top)/.test(label);
    if (slow) slowReads++;
    let arrived = s.schedule(Promise.resolve(), `${tag} → ${label}`).then(next);
    if (writeBack !== undefined) {
      arrived = arrived.then(() => s.schedule(Promise.resolve(), `${tag} write-back of ${label}`)).then(next);
    }
    void arrived.then(() => flights.delete(flight));
    return arrived
      .then(() => s.schedule(Promise.resolve(), `${tag} ← ${label}`))
      .then(() => {
        // A read slower than the driver's own deadline (the request's) would be cut by the driver: not modelled.
        if (slow) pass(Math.min(SLOW_MS * slowReads--, DEADLINE_MS - 1));
        if (!op.proc.alive || op.proc.starts !== op.life) return new Promise<T>(() => {}); // stopped: no reply
        if (outcome === undefined || what === 'lost') throw new Unavailable(label);
        if ('error' in outcome) throw outcome.error;
        return outcome.value;
      });
  };

  const storeFor = (proc: Proc): QuotaStore<Doc> => ({
    insert: (o, p, slot) =>
      send(proc, `insert ${p.id}${p.name} at ${slot}`, (op) => {
        const d: Doc = { ref: nextRef++, owner: o, id: Number(p.id), name: p.name, slot, at: step };
        if (owned(o).some((e) => e.id === d.id)) return 'taken' as const;
        if (slotIndex && owned(o).some((e) => e.slot === slot)) return scenario.slotTaken ? 'slot-taken' : 'taken';
        const limit = exactBound();
        if (slotIndex && limit !== undefined && owned(o).length + 1 > limit) {
          violated(`${op.label}: an insert took owner ${o} to ${owned(o).length + 1} under the bound ${limit}`);
        }
        docs.set(d.ref, d);
        record(d);
        op.inserted = d;
        return 'inserted' as const;
      }),
    find: (o, id) =>
      send(proc, `find ${id}`, (op) => {
        op.locatedAt = step;
        const d = owned(o).find((e) => e.id === Number(id));
        return d === undefined ? undefined : { plant: plant(d.id, d.name), ref: d, slot: d.slot };
      }),
    top: (o) =>
      send(proc, 'top', () =>
        owned(o).reduce<{ ref: Doc; slot: number } | undefined>(
          (top, d) => (top === undefined || d.slot > top.slot ? { ref: d, slot: d.slot } : top),
          undefined,
        ),
      ),
    slots: (o, after, limit) =>
      send(proc, 'slots', () =>
        owned(o)
          .map((d) => d.slot)
          .filter((slot) => slot > after)
          .sort((a, b) => a - b)
          .slice(0, limit),
      ),
    outside: (o, from) =>
      send(proc, `outside ${from}`, () => owned(o).flatMap((d) => (d.slot >= from ? [{ ref: d, slot: d.slot }] : []))),
    count: (o, except) => send(proc, 'count', () => owned(o).filter((d) => d.id !== Number(except)).length),
    // FerretDB: the update reads the document, and writes it back by `_id` at a later step (if it is still there).
    move: (ref, from, to) =>
      send<boolean | 'matched'>(
        proc,
        `move ${ref.id} from ${from} to ${to}`,
        () => (docs.get(ref.ref)?.slot === from ? 'matched' : true),
        (_, read) => {
          if (read !== 'matched') return read;
          const d = docs.get(ref.ref);
          if (d === undefined) return true;
          if (slotIndex && owned(d.owner).some((o) => o !== d && o.slot === to)) return false;
          d.slot = to;
          return true;
        },
      ).then((moved) => moved === true),
    delete: (ref) =>
      send(proc, `delete ${ref.id}`, (op) => {
        if (!docs.has(ref.ref)) return false;
        if (op.locatedAt === undefined || ref.at >= op.locatedAt) {
          violated(`${op.label}: deleted plant ${ref.id} stored after the delete looked`);
        }
        docs.delete(ref.ref);
        deleted.add(ref);
        return true;
      }),
  });

  /** One command of the repair: its landing is a step the scheduler places. */
  const repairStep = <T>(label: string, apply: () => T): Promise<T> =>
    s.schedule(Promise.resolve(), `repair → ${label}`).then(() => {
      const value = apply();
      step++;
      check();
      return value;
    });
  const shared = (d: Doc): Shared<Doc> => ({ ref: d, owner: d.owner, slot: d.slot, plant: d.name });
  const repairStore: RepairStore<Doc> = {
    missing: () => repairStep('missing', () => (slotIndex ? [] : ['slot' as const])),
    sharing: (key) => ({
      [Symbol.asyncIterator]: async function* () {
        const groups = await repairStep(`sharing ${key}`, () =>
          OWNERS.flatMap((o) => {
            const by = new Map<number, Doc[]>();
            for (const d of owned(o).sort((a, b) => a.ref - b.ref)) by.set(d[key], [...(by.get(d[key]) ?? []), d]);
            return [...by.values()].filter((g) => g.length > 1).map((g) => g.map(shared));
          }),
        );
        yield* groups;
      },
    }),
    delete: (doc) => repairStep(`delete ${doc.ref.id}`, () => docs.delete(doc.ref.ref)),
    move: (doc) =>
      repairStep(`move ${doc.ref.id} of ${doc.owner} from ${doc.slot} outside`, () => {
        const d = docs.get(doc.ref.ref);
        if (d === undefined || d.slot !== doc.slot) return false;
        d.slot = OUTSIDE_FROM + 100 + d.ref; // drawn at random on MongoDB: here from the document, so that a run replays
        return true;
      }),
    build: (key) =>
      repairStep(`build ${key}`, () => {
        if (sharesSlot()) throw new Error('duplicate key');
        slotIndex = true;
        return key;
      }),
    sleep: (ms) => new Promise<void>((wake) => sleeps.add({ until: clock + ms, wake })),
  };

  const start = (p: Proc) => {
    p.alive = true;
    const origin = (scenario.clocks[p.starts++ % scenario.clocks.length] ?? 0) - clock;
    p.background = {
      proc: p,
      owner: '',
      label: 'look',
      ended: false,
      deadline: Infinity,
      commands: 0,
      life: p.starts,
      refusable: false,
    };
    p.ops.add(p.background);
    p.quota = new Bound(storeFor(p), {
      now: () => clock + origin,
      lookTtlMs: options.lookTtlMs ?? TIMINGS.lookTtlMs,
      maxHeld: () => scenario.held,
      random: (n) => {
        p.seed = (p.seed * 1103515245 + 12345) % 2147483648;
        return p.seed % n;
      },
    });
    p.indexed = false;
    indexCheck(p);
  };

  /** A process lists the indexes: a missing one makes it forget and answer 503, and it builds it if it can. */
  const indexCheck = (p: Proc) => {
    if (!slotIndex) {
      if (p.indexed) p.quota.forget();
      p.indexed = false;
      if (!sharesSlot()) slotIndex = true;
    }
    if (slotIndex) p.indexed = true;
  };

  /** A process stops (crash or restart): each of its commands in flight lands now or never, its requests end. */
  const stop = (p: Proc) => {
    if (!p.alive) return;
    p.alive = false;
    stoppedAt.set(p.bound, clock);
    for (const op of p.ops) op.ended = true;
    p.ops.clear();
    settle(p, () => true);
  };

  /** Each command in flight of `p` that `which` names lands now or never. */
  const settle = (p: Proc, which: (op: Op) => boolean) => {
    for (const flight of [...p.flights]) if (which(flight.op)) (fault() === 'ok' ? flight.land : flight.drop)();
  };

  const procs: Proc[] = scenario.bounds.map((b, index) => ({
    index,
    bound: b,
    alive: false,
    starts: index * 4,
    indexed: true,
    quota: undefined as unknown as Bound<Doc>,
    background: undefined as unknown as Op,
    ops: new Set<Op>(),
    flights: new Set<Flight>(),
    seed: index + 1,
  }));
  for (const p of procs) start(p);

  const check = () => {
    for (const p of procs) {
      for (const op of p.ops) {
        const c = op.candidate;
        if (c !== undefined && owned(op.owner).length >= p.bound && !owned(op.owner).some((d) => d.id === c.id)) {
          op.refusable = true;
        }
      }
    }
    for (const d of acknowledged) {
      if (!docs.has(d.ref) && !deleted.has(d)) violated(`acknowledged plant ${d.id} (${d.name}) of ${d.owner} lost`);
    }
    for (const p of procs) {
      for (const o of OWNERS) {
        if (slotIndex && p.bound > 0 && owned(o).filter((d) => d.slot < p.bound).length > p.bound)
          violated(`inside plants of ${o} over the bound ${p.bound}`);
      }
    }
  };

  const plant = (id: number, name: string): Plant => ({ id: BigInt(id) as PlantId, name: name as PlantName });

  /** Runs one action; for a create, resolves whether it answered 503 (so that a client may retry it). */
  const run = async (action: Action): Promise<boolean> => {
    if (action.kind === 'advance') {
      let left = action.ms;
      while (left > 0) {
        // Each index check (at its process's phase, then every checkMs) and each end of the repair's wait.
        const phase = (p: Proc) => ((scenario.phases[p.index] ?? 0) * checkMs) / 30_000;
        const since = (p: Proc) => (((clock - phase(p)) % checkMs) + checkMs) % checkMs;
        const checks = procs.map((p) => checkMs - since(p));
        const wakes = [...sleeps].map((w) => w.until - clock);
        const next = Math.min(left, ...checks, ...wakes.filter((w) => w > 0));
        pass(next);
        left -= next;
        for (const p of procs) if (p.alive && checks[p.index] === next) indexCheck(p);
        for (const w of sleeps) {
          if (w.until <= clock) {
            sleeps.delete(w);
            w.wake();
          }
        }
      }
      return false;
    }
    if (action.kind === 'drop') {
      slotIndex = false;
      return false;
    }
    if (action.kind === 'repair') {
      void repair(repairStore, { noticeMs: TIMINGS.repairWaitMs, keepFirst: false, report: () => {} }).catch(() => {});
      return false;
    }
    const p = procs[action.proc] as Proc;
    if (action.kind === 'restart') {
      stop(p);
      p.bound = action.bound;
      start(p);
      return false;
    }
    if (!p.alive) return false;
    const o = OWNERS[action.owner] as string;
    const op: Op = {
      proc: p,
      owner: o,
      label: `${action.kind} ${o}${action.id}${action.kind === 'create' ? action.name : ''}`,
      ended: false,
      deadline: clock + DEADLINE_MS,
      commands: 0,
      life: p.starts,
      refusable: false,
      ...(action.kind === 'create' ? { candidate: { id: action.id, name: action.name } } : {}),
    };
    p.ops.add(op);
    check();
    const checkFor = () => {
      if (op.ended || !p.ops.has(op)) throw new Unavailable('deadline');
      // The command it guards is sent in the same turn; a command sent later without a check is a shared look's.
      p.current = op;
      queueMicrotask(() => {
        if (p.current === op) p.current = undefined;
      });
    };
    const q = p.quota;
    try {
      if (action.kind === 'delete') {
        await q.remove(o, BigInt(action.id) as PlantId, checkFor);
        return false;
      }
      if (!p.indexed) return true;
      const outcome: InsertOutcome | undefined = await q.insert(
        o,
        plant(action.id, action.name),
        p.bound === 0 ? Number.POSITIVE_INFINITY : p.bound,
        checkFor,
      );
      if (!p.ops.has(op)) return true;
      if (progress && op.commands > MAX_COMMANDS) violated(`${op.label}: ${op.commands} commands for one create`);
      if (outcome === undefined) {
        if (progress && !scenario.slow && op.cut !== true)
          violated(`${op.label}: 503 (contended) although no fault was injected`);
        return true;
      }
      if (outcome._tag === 'Inserted') {
        if (op.inserted === undefined) violated(`${op.label}: Inserted, but no insert of it landed`);
        else acknowledged.add(op.inserted);
      }
      if (outcome._tag === 'Exists') {
        const { id, name } = outcome.stored;
        if (!(history.get(`${o} ${id}`)?.has(name) ?? false))
          violated(`${op.label}: Exists shows a plant never stored`);
      }
      if (outcome._tag === 'OwnerFull' && !op.refusable) {
        violated(`${op.label}: refused, although at no step while it ran was ${o} full without a plant of its id`);
      }
      return false;
    } catch (e) {
      if (!(e instanceof Unavailable || e instanceof QuotaForgotten)) {
        violated(`${op.label}: ${e instanceof Error ? e.stack : String(e)}`);
      } else if (progress && !scenario.slow && op.cut !== true && p.ops.has(op))
        violated(`${op.label}: 503 (${e.message}) although no fault was injected`);
      return true;
    } finally {
      op.ended = true;
      p.ops.delete(op);
    }
  };

  for (const round of scenario.rounds) {
    // Commands of requests that gave up (timeouts) land now, or stay in flight.
    for (const p of procs) for (const f of [...p.flights]) if (f.late && fault() === 'ok') f.land();
    let pending = [...round];
    // A slow store cuts requests: a client retries a 503 after RETRY_AFTER_MS, a bounded number of times.
    for (let attempt = 0; pending.length > 0; attempt++) {
      const answered = pending.map((action) =>
        s.schedule(Promise.resolve(), `start ${JSON.stringify(action)}`).then(() => run(action)),
      );
      await s.waitIdle();
      if (!scenario.slow) break;
      const unanswered = await Promise.all(answered);
      pending = pending.filter((_, i) => unanswered[i] === true);
      if (pending.length > 0 && attempt === 12) {
        violated(`a storm of first creates never converged: ${pending.map((a) => JSON.stringify(a)).join(', ')}`);
        break;
      }
      if (pending.length > 0) pass(RETRY_AFTER_MS);
    }
  }
  check();
  return violation;
};
