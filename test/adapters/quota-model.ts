/**
 * A model of the MongoDB adapter's bound (adapters/storage/mongodb/quota.ts): several simulated service processes run
 * the adapter's own decision code against an in-memory store that enforces the two unique indexes atomically and
 * applies updates as FerretDB does (read, then write back by `_id`, another command free to run in between), while
 * fast-check's scheduler chooses the order of every command's arrival and of every reply. Faults are drawn per
 * command: a lost reply (applied, answered with an error), a timeout (the request gives up at once, the command lands
 * later), a crash of the process before the command is sent. Processes restart with other bounds; time passes in
 * steps around the contract's 60 s and the looks' 30 s; a command lands within its request's deadline or at its
 * process's stop, or never (the connection is gone), also after the request answered.
 *
 * After every step it checks the invariants of docs/storage.md; a violation fails the run with the step's trace.
 */
import fc from 'fast-check';
import type { InsertOutcome } from '../../application/ports/plant-repository.js';
import type { Plant, PlantId, PlantName } from '../../domain/plant.js';
import { OUTSIDE_FROM, quota, type Quota, type QuotaStore } from '../../adapters/storage/mongodb/quota.js';

const OWNER = 'o';
const DEADLINE_MS = 2000;
const LOOK_TTL_MS = 30_000;
/** The contract: from 60 s after the last process with another bound stopped, the bound is exact. */
const EXACT_AFTER_MS = 60_000;

export type Fault = 'ok' | 'lost' | 'timeout' | 'crash';
export type Action =
  | { readonly kind: 'create'; readonly proc: number; readonly id: number; readonly name: 'a' | 'b' }
  | { readonly kind: 'delete'; readonly proc: number; readonly id: number }
  | { readonly kind: 'restart'; readonly proc: number; readonly bound: number }
  | { readonly kind: 'advance'; readonly ms: number };

export interface Scenario {
  /** Each process's bound at start (0: none). */
  readonly bounds: readonly number[];
  /** Owners each process may hold (0: none, so that every create glances at the owner). */
  readonly held: number;
  /** Plants stored before: [id, slot] (a slot >= OUTSIDE_FROM as a process without a bound writes it). */
  readonly stored: ReadonlyArray<readonly [number, number]>;
  /** Rounds of actions: the actions of a round run at once, a round starts once the one before has settled. */
  readonly rounds: ReadonlyArray<readonly Action[]>;
  /** The fault of the n-th command sent (past the end: none). */
  readonly faults: readonly Fault[];
}

const bound = fc.constantFrom(0, 2, 2, 3);
const proc = fc.nat(2);
const plantId = fc.nat(4);

const stored = fc
  .uniqueArray(fc.oneof(fc.nat(4), fc.constant(OUTSIDE_FROM), fc.constant(OUTSIDE_FROM + 1)), { maxLength: 4 })
  .map((slots) => slots.map((slot, i) => [10 + i, slot] as const));
const faults = fc.array(fc.constantFrom<Fault>('ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'lost', 'timeout', 'crash'), {
  maxLength: 60,
});
const create = (p: number, id: number): Action => ({ kind: 'create', proc: p, id, name: 'a' });

/** Any mix of actions over three processes. */
const mixed: fc.Arbitrary<Scenario> = fc.record({
  bounds: fc.tuple(bound, bound, bound),
  held: fc.constantFrom(0, 8, 8),
  stored,
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
    b: fc.constantFrom(2, 3),
    other: fc.constantFrom(0, 5),
    held: fc.constantFrom(0, 8),
    stored,
    wait: fc.constantFrom(25_000, 31_000, 59_000, 61_000, 70_000),
    more: fc.array(action(), { maxLength: 3 }),
    faults,
  })
  .map(({ b, other, held, stored, wait, more, faults }) => ({
    bounds: [b, b, other],
    held,
    stored,
    rounds: [
      [create(0, 0), create(1, 1)],
      [create(2, 2), create(2, 3), create(2, 4)],
      [{ kind: 'restart', proc: 2, bound: b }],
      [{ kind: 'advance', ms: wait }],
      [create(0, 5), create(1, 6), create(0, 7)],
      ...(more.length > 0 ? [more] : []),
    ],
    faults,
  }));

export const scenarioArbitrary: fc.Arbitrary<Scenario> = fc.oneof(mixed, rolling);

function action(): fc.Arbitrary<Action> {
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant('create' as const),
        proc,
        id: plantId,
        name: fc.constantFrom('a' as const, 'b' as const),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), proc, id: plantId }) },
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

class Unavailable extends Error {}

interface Doc {
  readonly ref: number;
  readonly id: number;
  readonly name: string;
  slot: number;
  /** The step at which it was stored. */
  readonly at: number;
}

interface Op {
  readonly proc: Proc;
  readonly label: string;
  ended: boolean;
  readonly deadline: number;
  /** For a create: the plant it stores, and whether its last `find` saw that very plant stored. */
  candidate?: { readonly id: number; readonly name: string };
  identicalAtFind?: boolean;
  /** The document this create stored (its last insert that landed). */
  inserted?: Doc;
  /** For a delete: the step at which its look-up ran. */
  locatedAt?: number;
  /** The most plants the owner kept at any step while this request ran. */
  peak: number;
}

interface Flight {
  readonly op: Op;
  readonly land: () => void;
  readonly drop: () => void;
}

interface Proc {
  readonly index: number;
  bound: number;
  alive: boolean;
  quota: Quota;
  readonly ops: Set<Op>;
  /**
   * Its commands sent and not landed, also those of requests that already answered (a timeout, a branch of a request
   * that failed): at the request's deadline or the process's stop each lands then or never (the connection is gone).
   */
  readonly flights: Set<Flight>;
  /** Its own random sequence (a cursor's start, an outside slot). */
  seed: number;
}

export interface ModelOptions {
  /** RULE 1's expiry as the processes use it (the model checks the contract's 60 s whatever it is). */
  readonly lookTtlMs?: number;
}

/** Runs one scenario under the scheduler; resolves with the first violation found, or undefined. */
export const runScenario = async (
  s: fc.Scheduler,
  scenario: Scenario,
  options: ModelOptions = {},
): Promise<string | undefined> => {
  const docs = new Map<number, Doc>();
  let nextRef = 1;
  let step = 0;
  let clock = 0;
  let commands = 0;
  let violation: string | undefined;
  const violated = (what: string) => {
    violation ??= `step ${step}: ${what}`;
  };
  /** Every plant ever stored under an id, by name. */
  const history = new Map<number, Set<string>>();
  const acknowledged = new Set<Doc>();
  const deleted = new Set<Doc>();
  /** When a process with each bound last stopped. */
  const stoppedAt = new Map<number, number>();
  let current: Op | undefined;

  for (const [id, slot] of scenario.stored) {
    docs.set(nextRef, { ref: nextRef++, id, name: 'a', slot, at: 0 });
    history.set(id, new Set(['a']));
  }
  const owned = () => [...docs.values()];

  /** The one bound in force and exact now (all live processes share it, the others stopped 60 s ago), if any. */
  const exactBound = (): number | undefined => {
    const live = procs.filter((p) => p.alive);
    const first = live[0];
    if (first === undefined || first.bound === 0 || live.some((p) => p.bound !== first.bound)) return undefined;
    for (const [b, at] of stoppedAt) if (b !== first.bound && clock - at < EXACT_AFTER_MS) return undefined;
    return first.bound;
  };

  const fault = (): Fault => scenario.faults[commands++] ?? 'ok';

  /**
   * One command of the op that called `check` just before (the core calls it before every command): its arrival, a
   * write-back when it has one (FerretDB's update), and its reply are each a step the scheduler places.
   */
  const send = <T>(label: string, apply: (op: Op) => T, writeBack?: (op: Op, read: T) => T): Promise<T> => {
    const op = current;
    current = undefined;
    if (op === undefined) throw new Error(`${label}: a command sent without a check of its deadline`);
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
    const tag = `p${op.proc.index} ${op.label}`;
    let arrived = s.schedule(Promise.resolve(), `${tag} → ${label}`).then(next);
    if (writeBack !== undefined) {
      arrived = arrived.then(() => s.schedule(Promise.resolve(), `${tag} write-back of ${label}`)).then(next);
    }
    void arrived.then(() => flights.delete(flight));
    if (what === 'timeout') {
      op.ended = true;
      return Promise.reject(new Unavailable('timeout'));
    }
    return arrived
      .then(() => s.schedule(Promise.resolve(), `${tag} ← ${label}`))
      .then(() => {
        if (!op.proc.ops.has(op)) return new Promise<T>(() => {}); // crashed: no reply
        if (outcome === undefined || what === 'lost') throw new Unavailable(label);
        if ('error' in outcome) throw outcome.error;
        return outcome.value;
      });
  };

  const conflict = (d: Doc, other: Doc): boolean => d !== other && (d.id === other.id || d.slot === other.slot);

  const store: QuotaStore<Doc> = {
    insert: (_, p, slot) =>
      send(`insert ${p.id}${p.name} at ${slot}`, (op) => {
        const d: Doc = { ref: nextRef++, id: Number(p.id), name: p.name, slot, at: step };
        if (owned().some((o) => conflict(d, o))) return 'taken' as const;
        const limit = exactBound();
        if (limit !== undefined && docs.size + 1 > limit) {
          violated(`${op.label}: an insert took the owner to ${docs.size + 1} under the bound ${limit}`);
        }
        docs.set(d.ref, d);
        const names = history.get(d.id) ?? new Set<string>();
        names.add(d.name);
        history.set(d.id, names);
        op.inserted = d;
        return 'inserted' as const;
      }),
    find: (_, id) =>
      send(`find ${id}`, (op) => {
        op.locatedAt = step;
        const c = op.candidate;
        op.identicalAtFind = c !== undefined && owned().some((o) => o.id === c.id && o.name === c.name);
        const d = owned().find((o) => o.id === Number(id));
        return d === undefined ? undefined : { plant: plant(d.id, d.name), ref: d, slot: d.slot };
      }),
    top: () =>
      send('top', () =>
        owned().reduce<{ ref: Doc; slot: number } | undefined>(
          (top, d) => (top === undefined || d.slot > top.slot ? { ref: d, slot: d.slot } : top),
          undefined,
        ),
      ),
    slots: (_, after, limit) =>
      send('slots', () =>
        owned()
          .map((d) => d.slot)
          .filter((slot) => slot > after)
          .sort((a, b) => a - b)
          .slice(0, limit),
      ),
    outside: (_, from) =>
      send(`outside ${from}`, () => owned().flatMap((d) => (d.slot >= from ? [{ ref: d, slot: d.slot }] : []))),
    count: () => send('count', () => docs.size),
    // FerretDB: the update reads the document, and writes it back by `_id` at a later step (if it is still there).
    move: (ref, from, to) =>
      send<boolean | 'matched'>(
        `move ${ref.id} from ${from} to ${to}`,
        () => (docs.get(ref.ref)?.slot === from ? 'matched' : true),
        (_, read) => {
          if (read !== 'matched') return read;
          const d = docs.get(ref.ref);
          if (d === undefined) return true;
          if (owned().some((o) => o !== d && o.slot === to)) return false;
          d.slot = to;
          return true;
        },
      ).then((moved) => moved === true),
    delete: (ref) =>
      send(`delete ${ref.id}`, (op) => {
        if (!docs.has(ref.ref)) return false;
        if (op.locatedAt === undefined || ref.at >= op.locatedAt) {
          violated(`${op.label}: deleted plant ${ref.id} stored after the delete looked`);
        }
        docs.delete(ref.ref);
        deleted.add(ref);
        return true;
      }),
  };

  const start = (p: Proc) => {
    p.alive = true;
    p.quota = quota(store, {
      now: () => clock,
      lookTtlMs: options.lookTtlMs ?? LOOK_TTL_MS,
      maxHeld: () => scenario.held,
      random: (n) => {
        p.seed = (p.seed * 1103515245 + 12345) % 2147483648;
        return p.seed % n;
      },
    });
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
    quota: undefined as unknown as Quota,
    ops: new Set<Op>(),
    flights: new Set<Flight>(),
    seed: index + 1,
  }));
  for (const p of procs) start(p);

  const check = () => {
    for (const p of procs) for (const op of p.ops) op.peak = Math.max(op.peak, docs.size);
    for (const d of acknowledged) {
      if (!docs.has(d.ref) && !deleted.has(d)) violated(`acknowledged plant ${d.id} (${d.name}) lost`);
    }
    for (const p of procs) {
      if (p.bound > 0 && owned().filter((d) => d.slot < p.bound).length > p.bound)
        violated('inside plants over the bound');
    }
  };

  const plant = (id: number, name: string): Plant => ({ id: BigInt(id) as PlantId, name: name as PlantName });

  const run = async (action: Action): Promise<void> => {
    if (action.kind === 'advance') {
      for (const p of procs) {
        for (const op of p.ops) if (op.deadline <= clock + action.ms) op.ended = true;
        settle(p, (op) => op.deadline <= clock + action.ms);
      }
      clock += action.ms;
      return;
    }
    const p = procs[action.proc] as Proc;
    if (action.kind === 'restart') {
      stop(p);
      p.bound = action.bound;
      start(p);
      return;
    }
    if (!p.alive) return;
    const op: Op = {
      proc: p,
      label: `${action.kind} ${action.id}${action.kind === 'create' ? action.name : ''}`,
      ended: false,
      deadline: clock + DEADLINE_MS,
      peak: docs.size,
      ...(action.kind === 'create' ? { candidate: { id: action.id, name: action.name } } : {}),
    };
    p.ops.add(op);
    const checkFor = () => {
      if (op.ended || !p.ops.has(op)) throw new Unavailable('deadline');
      current = op;
    };
    const q = p.quota;
    try {
      if (action.kind === 'delete') {
        await q.remove(OWNER, BigInt(action.id) as PlantId, checkFor);
        return;
      }
      const candidate = plant(action.id, action.name);
      const before = owned().find((d) => d.id === action.id && d.name === action.name);
      const outcome: InsertOutcome | undefined = await q.insert(
        OWNER,
        candidate,
        p.bound === 0 ? Number.POSITIVE_INFINITY : p.bound,
        checkFor,
      );
      if (!p.ops.has(op)) return;
      if (outcome?._tag === 'Inserted') {
        if (op.inserted === undefined) violated(`${op.label}: Inserted, but no insert of it landed`);
        else acknowledged.add(op.inserted);
      }
      if (outcome?._tag === 'Exists') {
        const stored = outcome.stored;
        if (!(history.get(Number(stored.id))?.has(stored.name) ?? false)) {
          violated(`${op.label}: Exists shows a plant never stored`);
        }
      }
      if (outcome?._tag === 'OwnerFull' && op.peak < p.bound) {
        violated(`${op.label}: refused, although the owner kept at most ${op.peak} plants while it ran`);
      }
      if (outcome?._tag === 'OwnerFull' && ((before !== undefined && docs.has(before.ref)) || op.identicalAtFind)) {
        violated(`${op.label}: refused although the identical plant was stored (throughout, or at its last read)`);
      }
    } catch (e) {
      if (!(e instanceof Unavailable)) violated(`${op.label}: ${e instanceof Error ? e.stack : String(e)}`);
    } finally {
      op.ended = true;
      p.ops.delete(op);
    }
  };

  for (const round of scenario.rounds) {
    for (const action of round) {
      void s.schedule(Promise.resolve(), `start ${JSON.stringify(action)}`).then(() => run(action));
    }
    await s.waitIdle();
  }
  check();
  return violation;
};
