import { randomInt } from 'node:crypto';
import { MongoServerError, type Collection, type Document, type ObjectId, type WriteConcernSettings } from 'mongodb';
import type { Logger } from '../../../application/ports/logger.js';
import { isDuplicateKey, isUnavailable } from './mongodb-errors.js';
import { markMended, outsideSlot } from './owner-slots.js';

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

/** The owner the previous version kept its sentinel and probes under; they are removed when the indexes are built. */
const OLD_SENTINEL_OWNER = '\u0001plant-store:unique-index-sentinel';
const NAMESPACE_NOT_FOUND = 26;
/** Documents mended per round trip (each is a command of its own, sent together). */
const MEND_BATCH = 100;
/** Mends of shared slots per build before the build gives up for its backoff (see `build`). */
const MEND_ROUNDS = 3;
const INDEX_OPTIONS_CONFLICT = 85;
/** How long a build waits for another process's build of the slot index that is not listed yet (see `build`). */
const OTHERS_BUILD_WAIT_MS = 60_000;

/** The indexes cannot be put in place until an operator acts; the log says what to do. Answered as a 503. */
export class IndexUnusable extends Error {}

export interface IndexOptions {
  readonly logger: Logger;
  /** `<db>.<collection>`, for the log line. */
  readonly namespace: string;
  /** First wait before trying again after the server refused an index; doubles up to `retryMaxMs`. */
  readonly retryMinMs: number;
  readonly retryMaxMs: number;
  /** How often a running service checks that the indexes are still there. */
  readonly recheckMs: number;
  readonly writeConcern: WriteConcernSettings;
  /**
   * Called whenever the slot index was (re)built, here or by another process: what the slots remember of owners is
   * stale (their counts; exactness rests on the markers, see owner-slots.ts).
   */
  readonly onSlotsChanged: () => void;
  /** The quota's markers (owner-slots.ts): a mend marks itself there before it writes (`markMended`). */
  readonly markers: Collection<Document>;
}

export interface Indexes {
  /**
   * Resolves once both unique indexes are known to be in place. Rejects with the driver's error when the server does
   * not answer, or with IndexUnusable while the server refuses an index (then without asking the server again until
   * the backoff has passed).
   */
  readonly ensure: () => Promise<void>;
  /**
   * Looks again whether the indexes are still there and puts back what is missing: at most once per `recheckMs`, or
   * now with `now` (the service's timer, which runs every `recheckMs`: so drift is noticed within that interval).
   */
  readonly recheck: (now?: boolean) => Promise<void>;
}

type State =
  | { readonly kind: 'unknown' }
  | { readonly kind: 'ok'; readonly checkedAt: number }
  | { readonly kind: 'refused'; readonly problem: string; readonly retryAt: number; readonly delayMs: number };

const sameKey = (key: unknown, expected: Record<string, number>): boolean =>
  typeof key === 'object' &&
  key !== null &&
  JSON.stringify(Object.entries(key).map(([k, v]) => [k, Number(v)])) === JSON.stringify(Object.entries(expected));

const RECOVERED = 'storage: the unique indexes are in place; serving again';

const brief = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text);

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
 * Keeps the unique indexes on (owner, id) and (owner, slot) in place, and the data fit for them. A running service
 * checks them every `recheckMs` (a timer, and `/readyz`), never on each write: an index dropped or changed under it
 * is noticed within that window and rebuilt. Before the slot index is built the service mends the data itself, in
 * batches, so that a crash half-way loses nothing and the next start goes on: a plant without a slot (written before
 * slots existed) gets an outside slot, and of plants that share an owner and slot (written while the slot index was
 * missing) all but one move to outside slots (owner-slots.ts: outside plants count against the bound). What cannot be
 * mended without choosing between acknowledged plants (two plants with one owner and id) or without an operator (a
 * conflicting index) is one error log line saying what to do; meanwhile every request and `/readyz` answer 503, and
 * the service tries again with backoff, never on every request.
 */
export const uniqueIndexes = (collection: Collection<Document>, options: IndexOptions): Indexes => {
  const { logger, writeConcern } = options;
  let state: State = { kind: 'unknown' };
  let building: Promise<void> | undefined;
  let rechecking: Promise<void> | undefined;
  /** The names of the slot indexes seen last: another name means another process rebuilt it. */
  let slotGeneration: string | undefined;

  const listed = async (): Promise<Document[]> => {
    try {
      return await collection.listIndexes().toArray();
    } catch (e) {
      if (e instanceof MongoServerError && Number(e.code) === NAMESPACE_NOT_FOUND) return [];
      throw e;
    }
  };

  /**
   * The indexes as the server lists them: what is wrong with the (owner, id) index (undefined: ours and unique), and
   * the names of the unique slot indexes ('' when there is none).
   */
  const inspect = async (): Promise<{ idProblem?: string; slots: string; slotKeyed: boolean }> => {
    const indexes = await listed();
    /** Whether any index on {owner: 1, slot: 1} is listed, whatever its name and options. */
    const slotKeyed = indexes.some((i) => sameKey(i['key'], SLOT_SPEC.key));
    const slots = indexes
      .filter(
        (i) => String(i['name']).startsWith(SLOT_SPEC.name) && sameKey(i['key'], SLOT_SPEC.key) && i['unique'] === true,
      )
      .map((i) => String(i['name']))
      .sort()
      .join(',');
    const ours = indexes.find((i) => i['name'] === INDEX_NAME);
    if (ours === undefined) return { idProblem: `there is no index named ${INDEX_NAME}`, slots, slotKeyed };
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

  const refuse = (problem: string): never => {
    const delayMs = state.kind === 'refused' ? Math.min(state.delayMs * 2, options.retryMaxMs) : options.retryMinMs;
    if (state.kind !== 'refused' || state.problem !== problem) {
      // The problem names the index it is about: the (owner, id) index or the quota's (owner, slot) one.
      logger.error(
        { storage: 'mongodb', namespace: options.namespace },
        `storage: the unique indexes on ${options.namespace} cannot be put in place: ${problem}. ` +
          `Until then every storage request answers 503 and /readyz reports storage; the service tries again by ` +
          `itself (backoff up to ${Math.round(options.retryMaxMs / 1000)} s), no restart needed.`,
      );
    }
    state = { kind: 'refused', problem, retryAt: Date.now() + delayMs, delayMs };
    throw new IndexUnusable(problem);
  };

  let mendMarked = false;
  /** Sets each plant's slot (by `_id`), a batch at a time; a slot taken meanwhile leaves that plant for the next round. */
  const setSlots = async (ids: readonly unknown[]): Promise<void> => {
    // Outside plants are about to exist: every process must count them (owner-slots.ts). Once per build.
    if (ids.length > 0 && !mendMarked) {
      await markMended(options.markers, writeConcern);
      mendMarked = true;
    }
    for (let i = 0; i < ids.length; i += MEND_BATCH) {
      await Promise.all(
        ids.slice(i, i + MEND_BATCH).map((_id) =>
          collection
            .updateOne({ _id: _id as ObjectId }, { $set: { slot: outsideSlot() } }, { writeConcern })
            .catch((e: unknown) => {
              if (!isDuplicateKey(e)) throw e;
            }),
        ),
      );
    }
  };

  /** Plants written before slots existed get an outside slot, 1,000 per round, until none is left. */
  const mendSlotless = async (): Promise<number> => {
    let mended = 0;
    for (;;) {
      const docs = await collection.find({ slot: null }, { projection: { _id: 1 }, limit: 1000 }).toArray();
      if (docs.length === 0) return mended;
      await setSlots(docs.map((d) => d['_id']));
      mended += docs.length;
    }
  };

  /** Of plants sharing an owner and slot (the slot index was missing), all but the first move to outside slots. */
  const mendDuplicateSlots = async (): Promise<number> => {
    const extra: unknown[] = [];
    let previous: { owner: unknown; slot: unknown } | undefined;
    const cursor = collection
      .find({}, { projection: { _id: 1, owner: 1, slot: 1 } })
      .sort({ owner: 1, slot: 1 })
      .allowDiskUse(true);
    try {
      for await (const doc of cursor) {
        const current = { owner: doc['owner'], slot: doc['slot'] };
        if (previous !== undefined && previous.owner === current.owner && previous.slot === current.slot) {
          extra.push(doc['_id']);
        }
        previous = current;
        if (extra.length >= 1000) await setSlots(extra.splice(0));
      }
    } finally {
      await cursor.close();
    }
    const last = extra.length;
    await setSlots(extra);
    return last;
  };

  /**
   * Takes the slot indexes as now listed. Another name than the one seen last means another process rebuilt the index
   * (and may have mended slots) since: every map of an owner's slots may miss outside plants, and is dropped. That
   * holds whether this process noticed it in its periodic look or while building the index itself.
   */
  const adopt = (slots: string): void => {
    const changed = slotGeneration !== undefined && slots !== slotGeneration;
    slotGeneration = slots;
    if (changed) options.onSlotsChanged();
  };

  const createSlotIndex = async (name: string): Promise<void> => {
    await collection.createIndex(SLOT_SPEC.key, { unique: true, name });
  };

  const build = async (): Promise<void> => {
    const wasRefused = state.kind === 'refused';
    mendMarked = false;
    try {
      await collection.createIndex(ID_SPEC.key, { unique: true, name: INDEX_NAME });
    } catch (e) {
      if (!isUnavailable(e) && e instanceof MongoServerError) refuse(diagnose(e));
      throw e;
    }
    // Some servers answer ok for an index of that name that is not the one asked for (FerretDB ignores `unique`
    // on an existing index of the same name): read back what is there.
    const found = await inspect();
    if (found.idProblem !== undefined) refuse(found.idProblem);
    // What the previous version kept beside the plants: its sentinel and any probes left (one command per build).
    await collection.deleteMany({ owner: OLD_SENTINEL_OWNER }, { writeConcern });
    if (found.slots === '') {
      // The slot index is missing (a new collection, a dropped index or collection, or data from before slots).
      let slotless = await mendSlotless();
      let duplicates = 0;
      // Mended slots are outside plants that the maps of running processes do not know of, and a process that did
      // not see the index missing learns of a rebuild only by its name (see `look`). So every build gets a name never
      // used before: a name seen again would hide the rebuilds between (say two, before another process looks).
      const name = `${SLOT_SPEC.name}_${Date.now().toString(36)}${randomInt(36 ** 4)
        .toString(36)
        .padStart(4, '0')}`;
      const cannot = (e: MongoServerError) =>
        refuse(
          `the quota's index on {owner: 1, slot: 1} cannot be built (${brief(e.errmsg ?? e.message)}); drop any other index on {owner: 1, slot: 1} and the service creates its own`,
        );
      let mends = 0;
      const othersBuildBy = Date.now() + OTHERS_BUILD_WAIT_MS;
      for (;;) {
        try {
          await createSlotIndex(name);
          break;
        } catch (e) {
          if (isUnavailable(e) || !(e instanceof MongoServerError)) throw e;
          const now = await inspect();
          // Another process built it meanwhile (under another name): that is as good.
          if (now.slots !== '') break;
          if (isDuplicateKey(e)) {
            // Plants share slots: mend them. Processes that have not noticed the missing index yet may store more
            // such plants meanwhile (each notices within recheckMs), so the build is tried again after each mend.
            if (mends++ >= MEND_ROUNDS) {
              refuse(
                `the quota's index on {owner: 1, slot: 1} cannot be built: plants of one owner kept sharing a slot after ${MEND_ROUNDS} rounds of mending (${brief(e.errmsg ?? e.message)}); the service mends them again by itself`,
              );
            }
            duplicates += await mendDuplicateSlots();
            slotless += await mendSlotless();
            continue;
          }
          // "An index on these keys exists under another name", and none is listed: another process is building its
          // own (MongoDB lists an index only once it is built, and refuses a second name for the same keys even
          // while the first is being built). Wait for it: look again, and try again (it may also have been given up).
          if (Number(e.code) === INDEX_OPTIONS_CONFLICT && !now.slotKeyed && Date.now() < othersBuildBy) {
            await new Promise((resolve) => setTimeout(resolve, 250));
            continue;
          }
          cannot(e);
        }
      }
      if (duplicates + slotless > 0) {
        logger.warn(
          { storage: 'mongodb', index: SLOT_SPEC.name, namespace: options.namespace },
          `storage: gave ${slotless} plants without a slot (written before the quota's bookkeeping) and ${duplicates} ` +
            `plants sharing one (written while the quota's index was missing) a slot outside every quota, so that ` +
            `the index can be built; they are kept and count against their owners' quotas`,
        );
      }
      const after = await inspect();
      if (after.idProblem !== undefined) refuse(after.idProblem);
      if (after.slots === '') refuse("the quota's index on {owner: 1, slot: 1} was not built; see the server's log");
      slotGeneration = after.slots;
      options.onSlotsChanged();
    } else adopt(found.slots);
    state = { kind: 'ok', checkedAt: Date.now() };
    if (wasRefused) logger.info({ storage: 'mongodb', index: INDEX_NAME }, RECOVERED);
  };

  const ensure = (): Promise<void> => {
    if (state.kind === 'ok') return Promise.resolve();
    if (state.kind === 'refused' && Date.now() < state.retryAt) return Promise.reject(new IndexUnusable(state.problem));
    building ??= build().finally(() => {
      building = undefined;
    });
    return building;
  };

  /** Looks now; an index that went missing is reported once and put back; a slot index rebuilt elsewhere is noticed. */
  const look = async (): Promise<void> => {
    const { idProblem, slots } = await inspect();
    const problem = idProblem ?? (slots === '' ? 'there is no unique index on {owner: 1, slot: 1}' : undefined);
    if (problem === undefined) {
      adopt(slots);
      if (state.kind === 'refused') logger.info({ storage: 'mongodb', index: INDEX_NAME }, RECOVERED);
      state = { kind: 'ok', checkedAt: Date.now() };
      return;
    }
    if (state.kind === 'ok') {
      logger.warn(
        { storage: 'mongodb', index: INDEX_NAME, namespace: options.namespace },
        `storage: a unique index on ${options.namespace} went missing (${problem}); putting it back`,
      );
      state = { kind: 'unknown' };
    }
    await ensure();
  };

  const recheck = (now = false): Promise<void> => {
    if (state.kind !== 'ok' || (!now && Date.now() - state.checkedAt < options.recheckMs)) return ensure();
    rechecking ??= look().finally(() => {
      rechecking = undefined;
    });
    return rechecking;
  };

  return { ensure, recheck };
};
