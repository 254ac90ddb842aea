import { randomInt } from 'node:crypto';
import { MongoServerError, type Collection, type Document, type ObjectId, type WriteConcernSettings } from 'mongodb';
import type { Logger } from '../../../application/ports/logger.js';
import { isDuplicateKey, isUnavailable } from './mongodb-errors.js';
import { outsideSlot } from './owner-slots.js';

export const INDEX_NAME = 'owner_1_id_1_unique';
/** The prefix of the slot index's name: each build names it anew, so that other processes notice a rebuild. */
export const SLOT_INDEX_NAME = 'owner_1_slot_1_unique';

/**
 * Every index the adapter creates. All are unique, and each must be prefixed by the documented shard key
 * (docs/storage.md; test/adapters/mongodb-shard-key.test.ts checks each against it).
 */
export const INDEX_SPECS = [
  { name: INDEX_NAME, key: { owner: 1, id: 1 }, unique: true },
  { name: SLOT_INDEX_NAME, key: { owner: 1, slot: 1 }, unique: true },
] as const;
const [ID_SPEC, SLOT_SPEC] = INDEX_SPECS;

const NAMESPACE_NOT_FOUND = 26;
/** Documents the mend reads per round trip, and writes per round of writes (each write a command of its own). */
const MEND_BATCH = 1000;
/** The mend's writes in flight at once. */
const MEND_PARALLEL = 100;
/** Mends of shared slots per build before the build gives up for its backoff (see `buildSlotIndex`). */
const MEND_ROUNDS = 3;
const INDEX_OPTIONS_CONFLICT = 85;
/** The longest wait at random before a process builds the slot index (see `buildSlotIndex`). */
const BUILD_JITTER_MS = 200;
/** How long a build waits for another process's build of the slot index that is not listed yet (see `build`). */
const OTHERS_BUILD_WAIT_MS = 60_000;

/** The indexes cannot be put in place until an operator acts; the log says what to do. Answered as a 503. */
export class IndexUnusable extends Error {}

/** The (owner, id) index went missing while the upkeep worked (dropped meanwhile): it starts over at once. */
class DroppedMeanwhile extends Error {}

export interface IndexOptions {
  readonly logger: Logger;
  /** `<db>.<collection>`, for the log lines. */
  readonly namespace: string;
  /**
   * Connects the client `collection` belongs to (once; a failed attempt is forgotten). That client is the upkeep's
   * own: its socket timeout is the bound on one step of the upkeep (one round trip), not a request's.
   */
  readonly connect: () => Promise<unknown>;
  /** First wait before trying again after the server refused an index; doubles up to `retryMaxMs`. */
  readonly retryMinMs: number;
  readonly retryMaxMs: number;
  /** How often a running service checks that the indexes are still there. */
  readonly recheckMs: number;
  /** How often a long build logs how far it got. */
  readonly progressMs: number;
  readonly writeConcern: WriteConcernSettings;
}

/**
 * What an operation needs in place: `id`, the (owner, id) index (a page, a delete, a create without a bound); `both`,
 * also the slot index (a create under a bound, and readiness).
 */
export type IndexNeed = 'id' | 'both';

export interface Indexes {
  /**
   * Resolves once the indexes `need` names are known to be in place (at once when they are); otherwise starts the
   * upkeep if it is not at work and waits for it. Rejects with IndexUnusable while the server refuses an index that is
   * needed, with the driver's error when the upkeep's attempt failed for another reason, or with the signal's reason
   * when it aborts (a request's deadline): a waiting request holds nothing after that.
   */
  readonly ready: (need: IndexNeed, call?: { readonly signal: AbortSignal }) => Promise<void>;
  /**
   * Looks again whether the indexes are still there (one `listIndexes`); what is missing is put back in the
   * background. At most once per `recheckMs`, or now with `now` (the service's timer, which runs every `recheckMs`:
   * so drift is noticed within that interval).
   */
  readonly recheck: (now?: boolean) => Promise<void>;
  /** Stops the upkeep (at its next step) and rejects whatever waits for it. */
  readonly stop: () => void;
  /**
   * How many times the slot index was rebuilt or its data mended, by this process or (seen by the index's new name)
   * by another: outside plants may have come into being each time, so owner-slots.ts drops what it knows.
   */
  readonly slotsGeneration: () => number;
  /**
   * The names of the unique slot indexes as last listed ('' before the first look, or while there is none). Each build
   * has a name never used before, so a record made under one name (outside-plants.ts) predates no mend that followed.
   */
  readonly slotIndex: () => string;
}

type State =
  /** `id`: the (owner, id) index is in place; the upkeep is at work on the rest (or about to be). */
  | { readonly kind: 'pending'; readonly id: boolean }
  | { readonly kind: 'ok'; readonly checkedAt: number }
  | {
      readonly kind: 'refused';
      readonly id: boolean;
      readonly problem: string;
      readonly retryAt: number;
      readonly delayMs: number;
    };

const sameKey = (key: unknown, expected: Record<string, number>): boolean =>
  typeof key === 'object' &&
  key !== null &&
  JSON.stringify(Object.entries(key).map(([k, v]) => [k, Number(v)])) === JSON.stringify(Object.entries(expected));

const RECOVERED = 'storage: the unique indexes are in place; serving again';

const brief = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text);

const reason = (e: unknown) => brief(e instanceof Error ? e.message : String(e));

/** What is wrong and what an operator does about it, from the server's refusal of the (owner, id) index. */
const diagnose = (e: MongoServerError): string => {
  const said = `${e.codeName ?? `code ${String(e.code)}`}: ${brief(e.errmsg ?? e.message)}`;
  if (isDuplicateKey(e)) {
    return `the collection holds two or more plants with the same owner and id (${said}); remove the duplicates, keeping one per owner and id`;
  }
  switch (Number(e.code)) {
    case 85: // IndexOptionsConflict
      return `an index on {owner: 1, id: 1} already exists with another name or other options (${said}); drop that index and the service creates its own`;
    case 86: // IndexKeySpecsConflict
      return `an index named ${INDEX_NAME} already exists on other keys (${said}); drop it and the service creates its own`;
    default:
      return `the server refused it (${said}); fix what it says`;
  }
};

/**
 * The mend's one write: moves the plant `_id` to a fresh outside slot (owner-slots.ts: outside plants count against
 * the bound). One `updateOne` by `_id` alone: the only filter every FerretDB handler serves without a scan (with any
 * other field beside it, as `{_id, slot: null}`, FerretDB/SQLite reads the whole collection for each plant: 20 s
 * instead of 1.4 s at 120,000 plants, on a loaded machine). So it is not conditioned on the slot the plant was read
 * with: a plant another process moved inside meanwhile goes outside again, which is safe because mends happen only
 * while the slot index is missing (the bound is not guarded then anyway), and once the index is built every process
 * drops what it remembers of the owners' slots (`slotsGeneration`, and the new index name) and reads them again. A
 * fresh outside slot already taken (practically never) leaves the plant for the next round.
 */
const mendOne = async (
  collection: Collection<Document>,
  writeConcern: WriteConcernSettings,
  _id: unknown,
): Promise<void> => {
  try {
    await collection.updateOne({ _id: _id as ObjectId }, { $set: { slot: outsideSlot() } }, { writeConcern });
  } catch (e) {
    if (!isDuplicateKey(e)) throw e;
  }
};

/**
 * Keeps the unique indexes on (owner, id) and (owner, slot) in place, and the data fit for them, in the background:
 * no request and no readiness check waits on a command whose cost grows with the collection beyond its own deadline.
 *
 * The upkeep runs on a client of its own, whose socket timeout bounds each of its steps (one round trip: a look at
 * the indexes, an index build, one batch of the mend's scan or of its writes), and logs how far it got every
 * `progressMs`. What a request needs (`ready`): a page, a delete and a create without a bound need the (owner, id)
 * index; a create under a bound and readiness need both. A request whose indexes are not in place waits for the
 * upkeep within its own deadline, then answers 503; so while the slot index is built, pages and deletes are served and
 * creates under a bound answer 503.
 *
 * A running service checks the indexes every `recheckMs` (a timer, and `/readyz`), never on each write: an index
 * dropped or changed under it is noticed within that window and rebuilt. Before the slot index is built the upkeep
 * mends the data: a plant without a slot (written before slots existed) gets an outside slot, and of plants that share
 * an owner and slot (written while the slot index was missing) all but one move to outside slots. Each mend is a scan
 * of the collection that writes each plant it must move on its own (`mendOne`), so a crash or a restart half-way loses
 * nothing and the next scan finds only what is left. What cannot be mended without choosing between acknowledged
 * plants (two plants with one owner and id) or without an operator (a conflicting index) is one error log line saying
 * what to do; meanwhile the requests that need that index answer 503, and the upkeep tries again with backoff, never
 * on every request.
 */
export const uniqueIndexes = (collection: Collection<Document>, options: IndexOptions): Indexes => {
  const { logger, writeConcern } = options;
  const fields = { storage: 'mongodb', namespace: options.namespace };
  let state: State = { kind: 'pending', id: false };
  /** The upkeep at work, if any. */
  let running: Promise<void> | undefined;
  /** Ends the upkeep's wait before its next try early: set while it waits after a failure that was not a refusal. */
  let wake: (() => void) | undefined;
  let stopped = false;
  let rechecking: Promise<void> | undefined;
  /** The names of the slot indexes seen last: another name means another process rebuilt it. */
  let slotGeneration: string | undefined;
  /** Counts the rebuilds and mends of the slot index seen here or by its new name: what owner-slots.ts remembers of
   * an earlier count may miss outside plants. */
  let slotsGeneration = 0;
  /** The name this process builds the slot index under, kept across tries until it is built (see `buildSlotIndex`). */
  let slotName: string | undefined;

  interface Waiter {
    readonly need: IndexNeed;
    readonly settle: (failure?: unknown) => void;
  }
  const waiters = new Set<Waiter>();
  const satisfied = (need: IndexNeed) => state.kind === 'ok' || (need === 'id' && state.id);
  /** Tells every waiter the news: what it needs is in place, refused, or the upkeep's attempt failed (`failure`). */
  const notify = (failure?: unknown) => {
    for (const waiter of waiters) {
      if (satisfied(waiter.need)) waiter.settle();
      else if (state.kind === 'refused') waiter.settle(new IndexUnusable(state.problem));
      else if (failure !== undefined) waiter.settle(failure);
    }
  };
  const setState = (next: State) => {
    state = next;
    notify();
  };

  const listed = async (): Promise<Document[]> => {
    try {
      return await collection.listIndexes().toArray();
    } catch (e) {
      if (e instanceof MongoServerError && Number(e.code) === NAMESPACE_NOT_FOUND) return [];
      throw e;
    }
  };

  /**
   * The indexes as the server lists them: what is wrong with the (owner, id) index (undefined: ours and unique), the
   * names of the unique slot indexes ('' when there is none), and whether any index on {owner: 1, slot: 1} is listed.
   */
  const inspect = async (): Promise<{ idProblem?: string; idMissing?: true; slots: string; slotKeyed: boolean }> => {
    const indexes = await listed();
    const slotKeyed = indexes.some((i) => sameKey(i['key'], SLOT_SPEC.key));
    const slots = indexes
      .filter(
        (i) => String(i['name']).startsWith(SLOT_SPEC.name) && sameKey(i['key'], SLOT_SPEC.key) && i['unique'] === true,
      )
      .map((i) => String(i['name']))
      .sort()
      .join(',');
    const ours = indexes.find((i) => i['name'] === INDEX_NAME);
    if (ours === undefined) {
      return { idProblem: `there is no index named ${INDEX_NAME}`, idMissing: true, slots, slotKeyed };
    }
    if (!sameKey(ours['key'], ID_SPEC.key)) {
      return {
        idProblem: `an index named ${INDEX_NAME} exists on other keys (${JSON.stringify(ours['key'])}); drop it and the service creates its own`,
        slots,
        slotKeyed,
      };
    }
    if (ours['unique'] !== true) {
      return {
        idProblem: `an index named ${INDEX_NAME} on {owner: 1, id: 1} exists but is not unique; drop it and the service creates its own`,
        slots,
        slotKeyed,
      };
    }
    return { slots, slotKeyed };
  };

  const idInPlace = () => state.kind !== 'ok' && state.id;

  const refuse = (problem: string, id = idInPlace()): never => {
    const delayMs = state.kind === 'refused' ? Math.min(state.delayMs * 2, options.retryMaxMs) : options.retryMinMs;
    if (state.kind !== 'refused' || state.problem !== problem) {
      // The problem names the index it is about: the (owner, id) index or the quota's (owner, slot) one.
      logger.error(
        fields,
        `storage: the unique indexes on ${options.namespace} cannot be put in place: ${problem}. ` +
          `Until then ${id ? 'every create under a quota answers' : 'every storage request answers'} 503 and /readyz ` +
          `reports storage; the service tries again by itself (backoff up to ` +
          `${Math.round(options.retryMaxMs / 1000)} s), no restart needed.`,
      );
    }
    setState({ kind: 'refused', id, problem, retryAt: Date.now() + delayMs, delayMs });
    throw new IndexUnusable(problem);
  };

  /** A (owner, id) index dropped since it was asked for is asked for again; one that is not ours is refused. */
  const idStillThere = (found: { idProblem?: string; idMissing?: true }) => {
    if (found.idProblem === undefined) return;
    if (found.idMissing !== true) refuse(found.idProblem, false);
    if (state.kind !== 'refused') setState({ kind: 'pending', id: false });
    throw new DroppedMeanwhile(found.idProblem);
  };

  /** Logs how far a long build got, at most once per `progressMs`. */
  const progress = (startedAt: number) => {
    let loggedAt = startedAt;
    return (what: () => string) => {
      const now = performance.now();
      if (now - loggedAt < options.progressMs) return;
      loggedAt = now;
      logger.info(
        { ...fields, index: SLOT_SPEC.name },
        `storage: building the quota's index on ${options.namespace}: ${what()} (${((now - startedAt) / 1000).toFixed(0)} s so far)`,
      );
    };
  };

  /** Mends each plant (by `_id`), `MEND_PARALLEL` writes at a time. */
  const mendAll = async (ids: readonly unknown[]): Promise<void> => {
    for (let i = 0; i < ids.length; i += MEND_PARALLEL) {
      await Promise.all(ids.slice(i, i + MEND_PARALLEL).map((_id) => mendOne(collection, writeConcern, _id)));
    }
  };

  /** Plants written before slots existed get an outside slot: one scan, written as it reads, `MEND_BATCH` at a time. */
  const mendSlotless = async (report: (what: () => string) => void): Promise<number> => {
    let mended = 0;
    const batch: unknown[] = [];
    const cursor = collection.find({ slot: null }, { projection: { _id: 1 }, batchSize: MEND_BATCH });
    try {
      for await (const doc of cursor) {
        batch.push(doc['_id']);
        if (batch.length >= MEND_BATCH) {
          await mendAll(batch.splice(0));
          mended += MEND_BATCH;
          report(() => `${mended} plants without a slot given one`);
        }
      }
    } finally {
      await cursor.close();
    }
    mended += batch.length;
    await mendAll(batch);
    return mended;
  };

  /**
   * Of plants sharing an owner and slot (the slot index was missing), all but the first move to outside slots: one
   * scan sorted by (owner, slot), written as it reads.
   */
  const mendDuplicateSlots = async (report: (what: () => string) => void): Promise<number> => {
    let mended = 0;
    let read = 0;
    const extra: unknown[] = [];
    let previous: { owner: unknown; slot: unknown } | undefined;
    const cursor = collection
      .find({}, { projection: { _id: 1, owner: 1, slot: 1 }, batchSize: MEND_BATCH })
      .sort({ owner: 1, slot: 1 })
      .allowDiskUse(true);
    try {
      for await (const doc of cursor) {
        read++;
        const current = { owner: doc['owner'], slot: doc['slot'] };
        if (previous !== undefined && previous.owner === current.owner && previous.slot === current.slot) {
          extra.push(doc['_id']);
        }
        previous = current;
        if (extra.length >= MEND_BATCH) {
          mended += extra.length;
          await mendAll(extra.splice(0));
        }
        report(() => `${read} plants read for shared slots, ${mended} of them moved outside`);
      }
    } finally {
      await cursor.close();
    }
    mended += extra.length;
    await mendAll(extra);
    return mended;
  };

  /**
   * Takes the slot indexes as now listed. Another name than the one seen last means another process rebuilt the index
   * (and may have mended slots) since: every map of an owner's slots may miss outside plants, and is dropped. That
   * holds whether this process noticed it in its periodic look or while building the index itself.
   */
  const adopt = (slots: string): void => {
    const changed = slotGeneration !== undefined && slots !== slotGeneration;
    slotGeneration = slots;
    if (changed) slotsGeneration++;
  };

  /** Mends the data, then builds the slot index (or finds another process's build in place). */
  const buildSlotIndex = async (): Promise<void> => {
    // Processes notice a drop at about the same time (each within its check interval) and would each scan the
    // collection to mend it: each waits a moment at random first, and only mends and builds if no other process's
    // index is listed by then.
    await new Promise((resolve) => setTimeout(resolve, randomInt(BUILD_JITTER_MS)));
    const before = await inspect();
    if (before.slots !== '') {
      slotGeneration = before.slots;
      slotsGeneration++;
      return;
    }
    const startedAt = performance.now();
    logger.info(
      { ...fields, index: SLOT_SPEC.name },
      `storage: building the quota's index on ${options.namespace} (a scan of the collection first); until it is ` +
        `built, creates under a quota answer 503 and /readyz reports storage, while pages and deletes are served`,
    );
    const report = progress(startedAt);
    let slotless = await mendSlotless(report);
    let duplicates = 0;
    // Mended slots are outside plants that what running processes know of owners misses, and a process that did not
    // see the index missing learns of a rebuild only by its name (see `adopt`). So every build gets a name never used
    // before: a name seen again would hide the rebuilds between (say two, before another process looks). The name is
    // kept across this process's tries until the index is built: an index build still running in the server after a
    // step ran out of time (MongoDB goes on with a build whose client went away) is joined, not conflicted with.
    slotName ??= `${SLOT_SPEC.name}_${Date.now().toString(36)}${randomInt(36 ** 4)
      .toString(36)
      .padStart(4, '0')}`;
    const cannot = (e: MongoServerError) =>
      refuse(
        `the quota's index on {owner: 1, slot: 1} cannot be built (${brief(e.errmsg ?? e.message)}); drop any other index on {owner: 1, slot: 1} and the service creates its own`,
      );
    let mends = 0;
    const othersBuildBy = Date.now() + OTHERS_BUILD_WAIT_MS;
    for (;;) {
      // Built by another process meanwhile (say during this one's mend): that is as good.
      if ((await inspect()).slots !== '') break;
      try {
        await collection.createIndex(SLOT_SPEC.key, { unique: true, name: slotName });
        break;
      } catch (e) {
        if (isUnavailable(e) || !(e instanceof MongoServerError)) throw e;
        const now = await inspect();
        // Another process built it meanwhile (under another name): that is as good.
        if (now.slots !== '') break;
        if (isDuplicateKey(e)) {
          // Plants share slots: mend them. Processes that have not noticed the missing index yet may store more such
          // plants meanwhile (each notices within recheckMs), so the build is tried again after each mend.
          if (mends++ >= MEND_ROUNDS) {
            refuse(
              `the quota's index on {owner: 1, slot: 1} cannot be built: plants of one owner kept sharing a slot after ${MEND_ROUNDS} rounds of mending (${brief(e.errmsg ?? e.message)}); the service mends them again by itself`,
            );
          }
          duplicates += await mendDuplicateSlots(report);
          slotless += await mendSlotless(report);
          continue;
        }
        // "An index on these keys exists under another name", and none is listed: another process is building its
        // own (MongoDB lists an index only once it is built, and refuses a second name for the same keys even while
        // the first is being built). Wait for it: look again, and try again (it may also have been given up).
        if (Number(e.code) === INDEX_OPTIONS_CONFLICT && !now.slotKeyed && Date.now() < othersBuildBy) {
          await new Promise((resolve) => setTimeout(resolve, 250));
          continue;
        }
        cannot(e);
      }
    }
    if (duplicates + slotless > 0) {
      logger.warn(
        { ...fields, index: SLOT_SPEC.name },
        `storage: gave ${slotless} plants without a slot (written before the quota's bookkeeping) and ${duplicates} ` +
          `plants sharing one (written while the quota's index was missing) a slot outside every quota, so that ` +
          `the index can be built; they are kept and count against their owners' quotas`,
      );
    }
    const after = await inspect();
    idStillThere(after);
    if (after.slots === '') refuse("the quota's index on {owner: 1, slot: 1} was not built; see the server's log");
    slotGeneration = after.slots;
    slotName = undefined;
    slotsGeneration++;
    logger.info(
      { ...fields, index: SLOT_SPEC.name },
      `storage: the quota's index on ${options.namespace} is in place after ${((performance.now() - startedAt) / 1000).toFixed(1)} s`,
    );
  };

  /** One try at putting both indexes in place; each command in it is one step, bounded by the client's timeout. */
  const putInPlace = async (): Promise<void> => {
    const wasRefused = state.kind === 'refused';
    await options.connect();
    try {
      // A no-op when it is there; over a large collection that lacks it, a build bounded like any other step.
      await collection.createIndex(ID_SPEC.key, { unique: true, name: INDEX_NAME });
    } catch (e) {
      if (!isUnavailable(e) && e instanceof MongoServerError) refuse(diagnose(e), false);
      throw e;
    }
    // Some servers answer ok for an index of that name that is not the one asked for (FerretDB ignores `unique`
    // on an existing index of the same name): read back what is there.
    const found = await inspect();
    idStillThere(found);
    if (state.kind !== 'refused' || !state.id) setState({ kind: 'pending', id: true });
    if (found.slots === '') {
      // An index on {owner: 1, slot: 1} that is listed and is not ours is for an operator: no scan before saying so.
      if (found.slotKeyed) {
        refuse(
          `an index on {owner: 1, slot: 1} that is not the quota's unique index is in the way; drop any other index on {owner: 1, slot: 1} and the service creates its own`,
        );
      }
      await buildSlotIndex();
    } else adopt(found.slots);
    setState({ kind: 'ok', checkedAt: Date.now() });
    if (wasRefused) logger.info({ ...fields, index: INDEX_NAME }, RECOVERED);
  };

  const pause = (ms: number, wakeable: boolean) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      function done() {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      if (wakeable) wake = done;
    });

  /** Tries until both indexes are in place, waiting between tries: a refusal's backoff, or after a failed step. */
  let warned = { why: '', at: 0 };
  const upkeep = async (): Promise<void> => {
    let delayMs = options.retryMinMs;
    while (!stopped) {
      try {
        await putInPlace();
        return;
      } catch (e) {
        if (stopped) return;
        if (e instanceof DroppedMeanwhile) continue;
        if (e instanceof IndexUnusable && state.kind === 'refused') {
          await pause(Math.max(0, state.retryAt - Date.now()), false);
          continue;
        }
        // The server did not answer, or a step ran past its bound: tell who waits, and try again (sooner when a
        // request asks meanwhile; never more often than the backoff while nobody asks). Logged when the reason
        // changes, else at most once a minute: requests may make the tries follow each other during an outage.
        const why = reason(e);
        if (why !== warned.why || Date.now() - warned.at >= 60_000) {
          warned = { why, at: Date.now() };
          logger.warn(
            { ...fields, err: why },
            `storage: putting the unique indexes on ${options.namespace} in place failed (${why}); trying again within ${Math.round(delayMs / 1000)} s`,
          );
        }
        notify(e);
        await pause(delayMs, true);
        delayMs = Math.min(delayMs * 2, options.retryMaxMs);
      }
    }
  };

  const start = () => {
    if (stopped) return;
    if (running === undefined) {
      running = upkeep().finally(() => {
        running = undefined;
      });
    } else wake?.();
  };

  const ready = (need: IndexNeed, call?: { readonly signal: AbortSignal }): Promise<void> => {
    if (satisfied(need)) return Promise.resolve();
    if (state.kind === 'refused') return Promise.reject(new IndexUnusable(state.problem));
    if (stopped) return Promise.reject(new IndexUnusable('the store is closed'));
    const signal = call?.signal; // read only here: the caller's signal is made on demand
    signal?.throwIfAborted();
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => waiter.settle(signal?.reason);
      const waiter: Waiter = {
        need,
        settle: (failure?: unknown) => {
          waiters.delete(waiter);
          signal?.removeEventListener('abort', onAbort);
          if (failure === undefined) resolve();
          else reject(failure instanceof Error ? failure : new Error(String(failure)));
        },
      };
      waiters.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
      start();
    });
  };

  /** Looks now; an index that went missing is reported once and put back; a slot index rebuilt elsewhere is noticed. */
  const look = async (): Promise<void> => {
    const { idProblem, slots } = await inspect();
    const problem = idProblem ?? (slots === '' ? 'there is no unique index on {owner: 1, slot: 1}' : undefined);
    if (problem === undefined) {
      adopt(slots);
      setState({ kind: 'ok', checkedAt: Date.now() });
      return;
    }
    if (state.kind === 'ok') {
      logger.warn(
        { ...fields, index: INDEX_NAME },
        `storage: a unique index on ${options.namespace} went missing (${problem}); putting it back`,
      );
      setState({ kind: 'pending', id: idProblem === undefined });
    }
    start();
  };

  const recheck = (now = false): Promise<void> => {
    if (state.kind !== 'ok') {
      start(); // the upkeep is at work, or waits out a refusal's backoff (then this changes nothing)
      return Promise.resolve();
    }
    if (!now && Date.now() - state.checkedAt < options.recheckMs) return Promise.resolve();
    rechecking ??= look().finally(() => {
      rechecking = undefined;
    });
    return rechecking;
  };

  const stop = () => {
    stopped = true;
    wake?.();
    for (const waiter of waiters) waiter.settle(new IndexUnusable('the store is closed'));
  };

  return { ready, recheck, stop, slotsGeneration: () => slotsGeneration, slotIndex: () => slotGeneration ?? '' };
};
